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
	// buf is the whole buffer Data lives in, so dropping bytes from the
	// front of Data does not lose the buffer's capacity for reuse.
	buf []byte
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
}

// Tap is the hand-off between the copy loop and one slow reader. Write never
// blocks and never allocates without bound: past Limit bytes the oldest pending
// output is dropped and counted. The reader waits on Ready and collects
// everything pending with Take.
//
// Output is kept in fixed-size chunks that are dropped and reused whole, so a
// flood the reader ignores costs the copy loop one copy per byte and no
// garbage: growing one buffer and slicing its front away would reallocate
// and copy the whole backlog over and over (measured: 33 MB/s with 4 KiB
// writes, a third of the pty's speed).
type Tap struct {
	mu        sync.Mutex
	limit     int
	chunk     int
	pending   int
	segs      []Segment
	lost      uint64
	lostTotal uint64
	total     uint64
	closed    bool
	ready     chan struct{}
	spare     [][]byte
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
	return &Tap{limit: limit, chunk: min(limit, tapChunk), ready: make(chan struct{}, 1)}
}

// tapChunk is the size of the buffers output is kept in.
const tapChunk = 32 << 10

// Ready is signalled (level-triggered, capacity one) when data, a resize or
// the close arrived after the last Take.
func (t *Tap) Ready() <-chan struct{} { return t.ready }

func (t *Tap) signal() {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// Write copies p into the tap. It never blocks on the reader.
func (t *Tap) Write(p []byte) {
	if len(p) == 0 {
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.total += uint64(len(p))
	if len(p) >= t.limit {
		// One write larger than the whole budget: keep its tail only.
		t.dropAllLocked()
		t.lost += uint64(len(p) - t.limit)
		t.lostTotal += uint64(len(p) - t.limit)
		p = p[len(p)-t.limit:]
	}
	if over := t.pending + len(p) - t.limit; over > 0 {
		t.dropOldestLocked(over)
	}
	t.pending += len(p)
	for len(p) > 0 {
		last := len(t.segs) - 1
		if last < 0 || t.segs[last].Resize != nil || cap(t.segs[last].Data) == len(t.segs[last].Data) {
			buf := t.newBufLocked()
			t.segs = append(t.segs, Segment{Data: buf, buf: buf})
			last++
		}
		seg := &t.segs[last]
		n := min(len(p), cap(seg.Data)-len(seg.Data))
		seg.Data = append(seg.Data, p[:n]...)
		p = p[n:]
	}
	t.mu.Unlock()
	t.signal()
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

// Take removes and returns everything pending. The returned slices belong to
// the caller until it hands them back with Recycle.
func (t *Tap) Take() Batch {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := Batch{Segments: t.segs, Lost: t.lost, Closed: t.closed}
	t.segs = nil
	t.pending = 0
	t.lost = 0
	return b
}

// Recycle returns a taken batch's buffers for reuse, so a steady stream does
// not allocate.
func (t *Tap) Recycle(b Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range b.Segments {
		t.spareLocked(s.buf)
	}
}

// spareLocked keeps a buffer for reuse: enough of them to hold a full
// backlog, and only whole chunks.
func (t *Tap) spareLocked(buf []byte) {
	if cap(buf) == t.chunk && len(t.spare) < t.limit/t.chunk+2 {
		t.spare = append(t.spare, buf[:0])
	}
}

// Stats reports the bytes offered and dropped over the tap's life.
func (t *Tap) Stats() (total, lost uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.lostTotal
}

func (t *Tap) newBufLocked() []byte {
	if n := len(t.spare); n > 0 {
		b := t.spare[n-1]
		t.spare = t.spare[:n-1]
		return b
	}
	return make([]byte, 0, t.chunk)
}

func (t *Tap) loseLocked(n int) {
	t.pending -= n
	t.lost += uint64(n)
	t.lostTotal += uint64(n)
}

func (t *Tap) dropAllLocked() {
	for i := range t.segs {
		t.loseLocked(len(t.segs[i].Data))
		t.segs[i].Data = t.segs[i].Data[:0]
	}
	t.pruneLocked()
}

// dropOldestLocked drops n bytes from the front of the pending output.
func (t *Tap) dropOldestLocked(n int) {
	for i := 0; n > 0 && i < len(t.segs); i++ {
		d := t.segs[i].Data
		k := min(n, len(d))
		t.segs[i].Data = d[k:]
		t.loseLocked(k)
		n -= k
	}
	t.pruneLocked()
}

// pruneLocked removes leading segments left empty by drops, keeping their
// buffers for reuse. The sizes they carried collapse into one resize-only
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
		t.spareLocked(t.segs[i].buf)
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
