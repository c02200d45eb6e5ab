package pty

import (
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
