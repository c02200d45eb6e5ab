package pty

import (
	"sync"
)

// Size is a terminal size in cells.
type Size struct {
	Rows, Cols uint16
}

// Segment is one piece of what a [Tap] delivers: output bytes, then
// optionally a resize that happened right after them. Keeping resizes in band
// lets a screen apply each byte at the size it was drawn for.
type Segment struct {
	Data   []byte
	Resize *Size
	// c is the tap memory Data lives in (nil for a resize alone, or a
	// segment made elsewhere), Data starting at c.mem[lo].
	c  *chunk
	lo int
}

// chunk is a piece of tap memory the copy loop reads output into. It goes
// back to the spares once nothing points into it: no segment, pending or
// taken, and not the producer, which holds the chunk it fills and the one
// before (for Last).
type chunk struct {
	mem  []byte
	refs int
}

// Batch is everything a [Tap] held when it was taken.
type Batch struct {
	Segments []Segment
	// Lost counts bytes dropped since the previous Take because the reader
	// fell behind. The oldest bytes are dropped first, so what remains is the
	// most recent output.
	Lost uint64
	// Closed reports that the producer has finished; no more data follows.
	Closed bool
	// Through is how many bytes the producer had committed when the batch
	// was taken (Stats' total then): the batch and the batches before it
	// hold or dropped every one of them. A reader that has drawn the batch
	// is current with the output up to there.
	Through uint64
}

// Tap is the hand-off between the copy loop and one slow reader. The copy
// loop reads output straight into the tap's memory (Space, then Commit once
// the bytes reached the terminal): the reader gets the very bytes read, and
// the output is not copied again. Nothing on the producer's side ever
// waits for the reader or allocates without bound: past Limit pending
// bytes the oldest are dropped and counted. The reader waits on Ready,
// collects everything pending with Take and hands the segments back with
// Recycle.
//
// Output is kept in fixed-size chunks reused whole, so a flood the reader
// ignores costs no garbage: growing one buffer and slicing its front away
// would reallocate and copy the whole backlog over and over (measured: 33
// MB/s with 4 KiB writes, a third of the pty's speed). Copying every chunk
// of output into the tap, as Write does, was 6 % of the wrapper's user time
// under a flood.
type Tap struct {
	mu        sync.Mutex
	limit     int
	chunkSize int
	pending   int
	segs      []Segment
	lost      uint64
	lostTotal uint64
	total     uint64
	closed    bool
	ready     chan struct{}
	spare     []*chunk
	watch     func([]byte)

	// The producer's side: the chunk being filled and how far, and the
	// one filled before it, kept for Last.
	cur, prev   *chunk
	off, prevHi int
}

// DefaultTapLimit bounds the bytes a Tap holds for a reader that fell behind:
// a few full screens of a busy TUI, small enough to keep memory flat.
const DefaultTapLimit = 1 << 20

// NewTap returns a Tap that holds at most limit bytes (DefaultTapLimit when
// limit <= 0).
func NewTap(limit int) *Tap {
	if limit <= 0 {
		limit = DefaultTapLimit
	}
	return &Tap{limit: limit, chunkSize: min(limit, tapChunk), ready: make(chan struct{}, 1)}
}

// tapChunk is the size of the chunks output is kept in, and tapMinRead
// the least room a read gets (the tty layer hands out about 4 KiB a read;
// when more is there, the next read takes it): a chunk is filled to at
// least tapChunk-tapMinRead.
const (
	tapChunk   = 64 << 10
	tapMinRead = 4 << 10
)

// Ready is signalled (level-triggered, capacity one) when data, a resize or
// the close arrived after the last Take.
func (t *Tap) Ready() <-chan struct{} { return t.ready }

func (t *Tap) signal() {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// Watch makes f see every byte offered to the tap, in order, on the
// producer's goroutine (the copy loop) as it is committed, before the
// limit may drop any: for a reader that must miss nothing and costs too
// little to hand off (a vectorised search per chunk). f must not block or
// keep p. Set it before the producer starts.
func (t *Tap) Watch(f func(p []byte)) { t.watch = f }

// Space returns room to read the next output into. Only the producer (the
// copy loop) calls it, and Commit after it; what it returns stays the
// producer's until committed.
func (t *Tap) Space() []byte {
	if t.cur == nil || len(t.cur.mem)-t.off < min(tapMinRead, t.chunkSize) {
		t.mu.Lock()
		t.nextChunkLocked()
		t.mu.Unlock()
	}
	return t.cur.mem[t.off:]
}

// nextChunkLocked starts filling a fresh chunk; the one filled so far
// becomes prev, and the prev before it is let go.
func (t *Tap) nextChunkLocked() {
	if t.prev != nil {
		t.releaseLocked(t.prev)
	}
	t.prev, t.prevHi = t.cur, t.off
	var c *chunk
	if n := len(t.spare); n > 0 {
		c, t.spare = t.spare[n-1], t.spare[:n-1]
	} else {
		c = &chunk{mem: make([]byte, t.chunkSize)}
	}
	c.refs = 1
	t.cur, t.off = c, 0
}

// Commit publishes n bytes the producer read into the slice Space returned.
func (t *Tap) Commit(n int) {
	if n <= 0 {
		return
	}
	if t.watch != nil {
		t.watch(t.cur.mem[t.off : t.off+n])
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.total += uint64(n)
	lo, hi := t.off, t.off+n
	t.off = hi
	if last := len(t.segs) - 1; last >= 0 && t.segs[last].c == t.cur && t.segs[last].lo+len(t.segs[last].Data) == lo && t.segs[last].Resize == nil {
		// The bytes follow the pending segment's: it grows.
		seg := &t.segs[last]
		seg.Data = t.cur.mem[seg.lo:hi:hi]
	} else {
		t.cur.refs++
		t.segs = append(t.segs, Segment{Data: t.cur.mem[lo:hi:hi], c: t.cur, lo: lo})
	}
	t.pending += n
	if over := t.pending - t.limit; over > 0 {
		t.dropOldestLocked(over)
	}
	t.mu.Unlock()
	t.signal()
}

// Write copies p into the tap, for producers that did not read into Space.
// It never blocks on the reader.
func (t *Tap) Write(p []byte) {
	if skip := len(p) - t.limit; skip > 0 {
		// More than the whole budget at once: only its tail can be kept,
		// and nothing pending before it.
		if t.watch != nil {
			t.watch(p[:skip])
		}
		t.mu.Lock()
		if !t.closed {
			t.total += uint64(skip)
			t.lost += uint64(skip)
			t.lostTotal += uint64(skip)
			t.dropOldestLocked(t.pending)
		}
		t.mu.Unlock()
		p = p[skip:]
	}
	for len(p) > 0 {
		n := copy(t.Space(), p)
		t.Commit(n)
		p = p[n:]
	}
}

// Last returns a copy of the newest n bytes written, up to
// tapChunk-tapMinRead, whatever the reader took. It is for after the
// producer is done (what an agent printed as it exited).
func (t *Tap) Last(n int) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return nil
	}
	newest := t.cur.mem[max(0, t.off-n):t.off]
	var older []byte
	if need := n - len(newest); need > 0 && t.prev != nil {
		older = t.prev.mem[max(0, t.prevHi-need):t.prevHi]
	}
	return append(append(make([]byte, 0, len(older)+len(newest)), older...), newest...)
}

// Resize records a size change after the bytes written so far.
func (t *Tap) Resize(s Size) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	last := len(t.segs) - 1
	if last >= 0 && (t.segs[last].Resize == nil || len(t.segs[last].Data) == 0) {
		// Attach to the bytes before it, or supersede a size nobody drew at.
		t.segs[last].Resize = &s
	} else {
		t.segs = append(t.segs, Segment{Resize: &s})
	}
	t.mu.Unlock()
	t.signal()
}

// Close marks the end of output. Pending data stays readable.
func (t *Tap) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.signal()
}

// Take removes and returns everything pending. The returned segments
// belong to the caller until it hands them back with Recycle.
func (t *Tap) Take() Batch {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := Batch{Segments: t.segs, Lost: t.lost, Closed: t.closed, Through: t.total}
	t.segs = nil
	t.pending = 0
	t.lost = 0
	return b
}

// Recycle hands taken segments back, each once, so their memory is reused
// and a steady stream does not allocate.
func (t *Tap) Recycle(b Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range b.Segments {
		if s.c != nil {
			t.releaseLocked(s.c)
		}
	}
}

// releaseLocked drops one reference to c; unreferenced, it is kept for
// reuse, as many chunks as a full backlog needs.
func (t *Tap) releaseLocked(c *chunk) {
	if c.refs--; c.refs == 0 && len(t.spare) < t.limit/t.chunkSize+2 {
		t.spare = append(t.spare, c)
	}
}

// Stats reports the bytes offered and dropped over the tap's life.
func (t *Tap) Stats() (total, lost uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.lostTotal
}

func (t *Tap) loseLocked(n int) {
	t.pending -= n
	t.lost += uint64(n)
	t.lostTotal += uint64(n)
}

// dropOldestLocked drops n bytes from the front of the pending output.
func (t *Tap) dropOldestLocked(n int) {
	for i := 0; n > 0 && i < len(t.segs); i++ {
		seg := &t.segs[i]
		k := min(n, len(seg.Data))
		seg.Data = seg.Data[k:]
		seg.lo += k
		t.loseLocked(k)
		n -= k
	}
	t.pruneLocked()
}

// pruneLocked removes leading segments left empty by drops, letting go of
// their memory. The sizes they carried collapse into one resize-only
// segment in front (the newest), so the reader still learns the size the
// kept bytes were drawn at, and neither drops nor a flood of resizes can
// make the slice grow.
func (t *Tap) pruneLocked() {
	i := 0
	var newest *Size
	for i < len(t.segs) && len(t.segs[i].Data) == 0 {
		if t.segs[i].Resize != nil {
			newest = t.segs[i].Resize
		}
		if c := t.segs[i].c; c != nil {
			t.releaseLocked(c)
		}
		i++
	}
	if newest != nil {
		// Keep the last pruned slot for the size.
		i--
		t.segs[i] = Segment{Resize: newest}
	}
	// Copy down rather than reslice, so the slice of segments does not
	// creep through memory as the front is dropped.
	n := copy(t.segs, t.segs[i:])
	clear(t.segs[n:])
	t.segs = t.segs[:n]
}
