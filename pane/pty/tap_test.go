package pty

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func collect(b Batch) (data []byte, sizes []Size) {
	for _, s := range b.Segments {
		data = append(data, s.Data...)
		if s.Resize != nil {
			sizes = append(sizes, *s.Resize)
		}
	}
	return
}

func TestTapKeepsNewestWithinLimit(t *testing.T) {
	tap := NewTap(10)
	tap.Write([]byte("0123456789"))
	tap.Write([]byte("abcd"))
	b := tap.Take()
	data, _ := collect(b)
	if string(data) != "456789abcd" || b.Lost != 4 {
		t.Fatalf("got %q lost %d, want the newest 10 bytes and 4 lost", data, b.Lost)
	}
	tap.Write(bytes.Repeat([]byte("x"), 25))
	b = tap.Take()
	data, _ = collect(b)
	if len(data) != 10 || b.Lost != 15 {
		t.Fatalf("oversized write: kept %d lost %d", len(data), b.Lost)
	}
	if total, lost := tap.Stats(); total != 39 || lost != 19 {
		t.Fatalf("stats total %d lost %d", total, lost)
	}
}

func TestTapResizeInBand(t *testing.T) {
	tap := NewTap(100)
	tap.Write([]byte("ab"))
	tap.Resize(Size{Rows: 10, Cols: 20})
	tap.Write([]byte("cd"))
	b := tap.Take()
	if len(b.Segments) != 2 || string(b.Segments[0].Data) != "ab" || b.Segments[0].Resize == nil ||
		*b.Segments[0].Resize != (Size{10, 20}) || string(b.Segments[1].Data) != "cd" {
		t.Fatalf("segments %+v", b.Segments)
	}
	tap.Recycle(b)
}

func TestTapResizeSurvivesDrops(t *testing.T) {
	tap := NewTap(4)
	for i := 0; i < 100; i++ {
		tap.Resize(Size{Rows: uint16(i + 1), Cols: 80})
	}
	tap.Write([]byte("abcdefgh"))
	b := tap.Take()
	data, sizes := collect(b)
	if string(data) != "efgh" {
		t.Fatalf("data %q", data)
	}
	if len(sizes) != 1 || sizes[0].Rows != 100 {
		t.Fatalf("want only the newest size kept, got %v", sizes)
	}
}

func TestTapReadySignalsOnce(t *testing.T) {
	tap := NewTap(100)
	tap.Write([]byte("a"))
	tap.Write([]byte("b"))
	select {
	case <-tap.Ready():
	default:
		t.Fatal("not ready after write")
	}
	select {
	case <-tap.Ready():
		t.Fatal("ready twice for one batch")
	default:
	}
	tap.Close()
	<-tap.Ready()
	if b := tap.Take(); !b.Closed {
		t.Fatal("close not reported")
	}
}

// The copy loop reads into the tap's own memory: what it commits is what
// the reader takes, byte for byte, while the producer goes on filling the
// same chunk behind it; a segment the reader holds never changes until it
// is handed back, however far the producer gets (the race detector checks
// the two sides never touch the same bytes); and Last has the newest
// bytes after the reader took and recycled everything.
func TestTapSpaceAndCommit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tap := NewTap(256 << 10)
	var want []byte // every byte committed, in order
	type held struct {
		seg  Segment
		data []byte // what it held when taken
	}
	var holding []held
	var got []byte // what the reader took, lost bytes marked by skipping
	next := byte(0)
	done := make(chan struct{})
	var lost uint64
	go func() {
		defer close(done)
		for {
			<-tap.Ready()
			b := tap.Take()
			lost += b.Lost
			for _, s := range b.Segments {
				got = append(got, s.Data...)
				holding = append(holding, held{s, bytes.Clone(s.Data)})
			}
			// Hand back a random part of what is held, after checking it
			// did not change.
			keep := holding[:0]
			for _, h := range holding {
				if !bytes.Equal(h.seg.Data, h.data) {
					t.Errorf("a held segment changed under the reader")
				}
				if rng.IntN(3) == 0 {
					tap.Recycle(Batch{Segments: []Segment{h.seg}})
				} else {
					keep = append(keep, h)
				}
			}
			holding = keep
			if b.Closed {
				return
			}
		}
	}()
	prod := rand.New(rand.NewPCG(8, 9))
	for i := 0; i < 3000; i++ {
		buf := tap.Space()
		if len(buf) < min(tapMinRead, tapChunk) {
			t.Fatalf("Space gave %d bytes", len(buf))
		}
		n := min(len(buf), 1+prod.IntN(9000))
		for j := range n {
			buf[j] = next
			next++
		}
		want = append(want, buf[:n]...)
		tap.Commit(n)
	}
	tap.Close()
	<-done
	if lost == 0 {
		// The reader keeps up here; the sequence must be whole.
		if !bytes.Equal(got, want) {
			t.Fatalf("the reader got %d bytes that differ from the %d committed", len(got), len(want))
		}
	} else if !bytes.HasSuffix(want, got[len(got)-min(len(got), 1000):]) {
		t.Fatalf("after %d lost bytes the newest bytes differ", lost)
	}
	if last := tap.Last(5000); !bytes.Equal(last, want[len(want)-5000:]) {
		t.Fatalf("Last(5000) is not the newest 5000 bytes")
	}
}

// Reading into the tap costs no allocation once its chunks are in use,
// nobody reading (the oldest chunks are dropped and reused) or a reader
// handing each batch back.
func TestTapSpaceAndCommitDoNotAllocate(t *testing.T) {
	tap := NewTap(0)
	read := bytes.Repeat([]byte("x"), 4095)
	cycle := func() {
		tap.Commit(copy(tap.Space(), read))
	}
	for range 1000 {
		cycle()
	}
	if a := testing.AllocsPerRun(5000, cycle); a != 0 {
		t.Fatalf("%.2f allocations per read", a)
	}
	var b Batch
	cycle = func() {
		tap.Commit(copy(tap.Space(), read))
		// Take hands over the slice of segments; the chunks come back.
		b = tap.Take()
		tap.Recycle(b)
	}
	for range 1000 {
		cycle()
	}
	if a := testing.AllocsPerRun(5000, cycle); a > 1 {
		t.Fatalf("%.2f allocations per read and take, want the slice of segments at most", a)
	}
}

// Last spans the chunk filled before the current one.
func TestTapLastSpansChunks(t *testing.T) {
	tap := NewTap(0)
	var all []byte
	for i := 0; len(all) < 3*tapChunk; i++ {
		buf := tap.Space()
		n := min(len(buf), 3000)
		for j := range n {
			buf[j] = byte(i + j)
		}
		all = append(all, buf[:n]...)
		tap.Commit(n)
		if len(tap.cur.mem)-tap.off < tapMinRead && !bytes.Equal(tap.Last(tapChunk/2), all[len(all)-tapChunk/2:]) {
			t.Fatalf("at a chunk's end, Last differs")
		}
		tap.Recycle(tap.Take())
		if got := tap.Last(tapChunk - tapMinRead); !bytes.Equal(got, all[max(0, len(all)-(tapChunk-tapMinRead)):]) {
			t.Fatalf("after %d bytes Last differs", len(all))
		}
	}
}

// One byte over the limit drops exactly the oldest byte: the bound is the
// limit itself, not one more.
func TestTapOneByteOverTheLimit(t *testing.T) {
	tap := NewTap(10)
	tap.Write([]byte("0123456789"))
	tap.Write([]byte("!"))
	b := tap.Take()
	data, _ := collect(b)
	if string(data) != "123456789!" || b.Lost != 1 {
		t.Fatalf("got %q lost %d, want the newest 10 bytes and 1 lost", data, b.Lost)
	}
}

// The watch sees every byte offered, in order, whether it came through
// Space and Commit or Write, and whatever the limit dropped before a
// reader took it: here nobody takes, and the tap keeps 64 KiB of 3 MiB.
func TestTapWatchSeesEveryByteTheLimitDrops(t *testing.T) {
	tap := NewTap(64 << 10)
	var seen, want []byte
	tap.Watch(func(p []byte) { seen = append(seen, p...) })
	rng := rand.New(rand.NewPCG(3, 4))
	next := byte(0)
	fill := func(p []byte) {
		for j := range p {
			p[j] = next
			next++
		}
		want = append(want, p...)
	}
	for i := range 300 {
		if i%3 == 0 {
			p := make([]byte, 1+rng.IntN(200<<10)) // Write, often over the limit
			fill(p)
			tap.Write(p)
			continue
		}
		buf := tap.Space()
		n := 1 + rng.IntN(len(buf))
		fill(buf[:n])
		tap.Commit(n)
	}
	if !bytes.Equal(seen, want) {
		t.Fatalf("the watch saw %d bytes, %d were offered, or not the same", len(seen), len(want))
	}
	if _, lost := tap.Stats(); lost == 0 {
		t.Fatal("the limit dropped nothing: the test proves nothing")
	}
}
