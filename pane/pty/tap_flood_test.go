package pty

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Under a flood nobody reads, Write reuses its chunks: no garbage, so the
// copy loop pays one copy per byte and never a collection.
func TestTapFloodDoesNotAllocate(t *testing.T) {
	tap := NewTap(0)
	p := make([]byte, 4095)
	for i := 0; i < 1000; i++ { // fill the backlog and the spare pool
		tap.Write(p)
	}
	if n := testing.AllocsPerRun(2000, func() { tap.Write(p) }); n != 0 {
		t.Fatalf("%.2f allocations per write while flooding", n)
	}
}

// Writes of any size, split over chunks and dropped from the front, leave
// exactly the newest limit bytes, in order, with the rest counted as lost.
func TestTapKeepsExactlyTheNewestBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pool := make([]byte, 4<<20)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	for _, limit := range []int{10, 1000, 100 << 10, DefaultTapLimit} {
		tap := NewTap(limit)
		var stream bytes.Buffer
		for i := 0; i < 300; i++ {
			n := rng.IntN(3*limit/2 + 1)
			off := rng.IntN(len(pool) - n)
			p := pool[off : off+n]
			stream.Write(p)
			tap.Write(p)
			if rng.IntN(50) == 0 { // the reader takes now and then
				tap.Recycle(tap.Take())
				stream.Reset()
			}
		}
		b := tap.Take()
		data, _ := collect(b)
		want := stream.Bytes()
		if len(want) > limit {
			want = want[len(want)-limit:]
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("limit %d: kept %d bytes, want the newest %d", limit, len(data), len(want))
		}
	}
}

func BenchmarkTapFlood(b *testing.B) {
	tap := NewTap(0)
	p := make([]byte, 4095)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		tap.Write(p)
	}
}

// A size given before any output (wrap announces the starting size this
// way) must not pin the dropped segments behind it: the backlog stays a
// bounded number of segments and a flood keeps costing nothing.
func TestTapLeadingResizeDoesNotPinDrops(t *testing.T) {
	tap := NewTap(0)
	tap.Resize(Size{Rows: 30, Cols: 100})
	p := make([]byte, 4095)
	for i := 0; i < 5000; i++ {
		tap.Write(p)
	}
	tap.mu.Lock()
	n := len(tap.segs)
	tap.mu.Unlock()
	if n > DefaultTapLimit/(tapChunk-tapMinRead)+3 {
		t.Fatalf("%d segments pending for a %d-byte backlog", n, DefaultTapLimit)
	}
	if a := testing.AllocsPerRun(2000, func() { tap.Write(p) }); a != 0 {
		t.Fatalf("%.2f allocations per write", a)
	}
	b := tap.Take()
	if b.Segments[0].Resize == nil || *b.Segments[0].Resize != (Size{Rows: 30, Cols: 100}) || len(b.Segments[0].Data) != 0 {
		t.Fatalf("the starting size was lost: first segment %+v", b.Segments[0])
	}
}
