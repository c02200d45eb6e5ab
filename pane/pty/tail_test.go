package pty

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// A small Tail nobody reads during the run ends up holding the last bytes
// the child wrote, after they reached the terminal.
// With a tap the output is read into the tap's memory, and the tail comes
// from there, the reader having taken everything.
func TestTailKeepsTheLastOutput(t *testing.T) {
	for _, withTap := range []bool{false, true} {
		o := newOuter(t, 24, 80)
		tail := &Tail{Size: 16}
		opts := Options{Argv: []string{"sh", "-c", `printf 'a long beginning, then the end'`}, Stdin: o.tty, Stdout: o.tty, Tail: tail}
		var taken []byte
		drained := make(chan struct{})
		if withTap {
			opts.Tap = NewTap(0)
			go func() {
				defer close(drained)
				for {
					<-opts.Tap.Ready()
					b := opts.Tap.Take()
					for _, s := range b.Segments {
						taken = append(taken, s.Data...)
					}
					opts.Tap.Recycle(b)
					if b.Closed {
						return
					}
				}
			}()
		} else {
			close(drained)
		}
		_, done := start(t, opts)
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
		o.waitFor("then the end")
		<-drained
		if got := tail.Bytes(); string(got) != "ng, then the end" {
			t.Fatalf("tap %v: tail %q", withTap, got)
		}
		if withTap && string(taken) != "a long beginning, then the end" {
			t.Fatalf("the tap's reader took %q", taken)
		}
	}
}

// The read buffers' tail is the newest Size bytes of everything read,
// whatever the sizes of the reads (empty ones included), and folding a
// read aside copies only what can still be among them.
func TestReadBuffersKeepTheNewestBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, size := range []int{1, 16, 4096} {
		for _, maxRead := range []int{3, size - 1, size, size + 1, 3 * size} {
			if maxRead < 1 {
				continue
			}
			rb := newReadBuffers(max(maxRead, 1), size)
			var all []byte
			next := byte(0)
			for i := 0; i < 500; i++ {
				buf := rb.take()
				n := rng.IntN(maxRead + 1)
				if rng.IntN(8) == 0 {
					n = 0 // EAGAIN: nothing read into the buffer taken
				}
				for j := 0; j < n; j++ {
					buf[j] = next
					all = append(all, next)
					next++
				}
				rb.got(n)
				want := all[max(0, len(all)-size):]
				if got := rb.tail(); !bytes.Equal(got, want) {
					t.Fatalf("size %d, reads up to %d, after %d reads: tail %v, want %v", size, maxRead, i+1, got, want)
				}
				if len(rb.older) > size {
					t.Fatalf("older holds %d bytes, more than %d", len(rb.older), size)
				}
			}
		}
	}
}

// Reads as big as the tail need no copy at all: nothing is kept aside.
func TestReadBuffersCopyNothingForFullReads(t *testing.T) {
	rb := newReadBuffers(64, 16)
	for i := 0; i < 10; i++ {
		copy(rb.take(), bytes.Repeat([]byte{byte('a' + i)}, 16))
		rb.got(16)
		if len(rb.older) != 0 {
			t.Fatalf("read %d: %d bytes kept aside", i, len(rb.older))
		}
	}
	if got := string(rb.tail()); got != "jjjjjjjjjjjjjjjj" {
		t.Fatalf("tail %q", got)
	}
}
