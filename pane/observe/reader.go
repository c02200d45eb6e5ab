package observe

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// reader drains the pty's tap as output arrives, reads the agent's status
// reports in it, and keeps the bytes for the screen, which takes them at
// its own pace (it is a screen.Source). The screen rests after heavy work
// — hundreds of milliseconds when the machine is loaded — and a report must
// not wait for it: Pi's "working" would then arrive after the session file
// said the person answered, and the pane would show idle in between.
//
// It holds what the screen has not taken yet the way the tap does, the
// oldest dropped and counted as lost, but less of it: see screenHold.
type reader struct {
	src    *pty.Tap
	scan   statusScanner
	report atomic.Pointer[func(state.ProgramStatus)]
	lost   func()
	limit  int

	mu      sync.Mutex
	pending pty.Batch
	size    int
	dropped uint64 // bytes dropped here over the reader's life
	ready   chan struct{}
}

func newReader(src *pty.Tap, lost func()) *reader {
	return &reader{src: src, lost: lost, limit: screenHold, ready: make(chan struct{}, 1)}
}

// screenHold bounds the bytes held for the screen. The screen draws only
// the newest 16 KiB of what it takes at once (screen.FollowOptions.MaxFeed)
// and counts the rest as skipped, so holding more buys nothing; holding
// the tap's whole megabyte cost 15 MiB of RSS under a flood (buffers
// in flight in three places instead of two: tap, reader, screen).
const screenHold = 64 << 10

// readGap is the least time between two looks at the tap: a flood then
// costs at most 500 wake-ups a second rather than one per read of the copy
// loop (without it, `wrap -- cat` of 60 MB took 10–25 % more CPU than
// before the reader, in noisy runs on a loaded 2-core box; with it, within
// the noise), and a report waits 2 ms at most — Pi draws a frame every
// 16 ms or more. An idle agent costs nothing: no timer runs between reads.
//
// After a batch of floodBatch bytes or more the gap is floodGap: a flood
// is looked at 100 times a second, not 500 (each look is a timer, a wake-up
// of an idle thread and a hand-off from the copy loop's core; at 500 a
// second they were a third of the wrapper's context switches), and the
// tap's megabyte still holds 10 ms of any output a pty can carry here, so
// the scanner loses nothing.
const (
	readGap    = 2 * time.Millisecond
	floodGap   = 10 * time.Millisecond
	floodBatch = 32 << 10
)

// ReportTo sends the reports to f (the Observer's ReportProgramStatus).
func (r *reader) ReportTo(f func(state.ProgramStatus)) { r.report.Store(&f) }

// run reads until the tap closes or ctx ends; the Observer owns it.
func (r *reader) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.src.Ready():
		}
		b := r.src.Take()
		if b.Lost > 0 {
			// The tap dropped the oldest bytes: a sequence begun before
			// them cannot be finished, and a report may have been among
			// them.
			r.scan.reset()
			r.lost()
		}
		report := *r.report.Load()
		n := 0
		for _, seg := range b.Segments {
			r.scan.scan(seg.Data, report)
			n += len(seg.Data)
		}
		r.hold(b, n)
		if b.Closed {
			return
		}
		if n >= floodBatch {
			rest(ctx, floodGap)
		} else {
			rest(ctx, readGap)
		}
	}
}

// hold keeps a batch for the screen, dropping the oldest held bytes past
// the limit (whole segments; a size they carried survives).
func (r *reader) hold(b pty.Batch, n int) {
	r.mu.Lock()
	r.pending.Segments = append(r.pending.Segments, b.Segments...)
	r.pending.Lost += b.Lost
	r.pending.Closed = r.pending.Closed || b.Closed
	r.size += n
	var dropped []pty.Segment
	segs := r.pending.Segments
	for r.size > r.limit {
		i := slices.IndexFunc(segs, func(s pty.Segment) bool { return len(s.Data) > 0 })
		if i < 0 || i == len(segs)-1 {
			break // the newest bytes stay whatever their size
		}
		seg := segs[i]
		dropped = append(dropped, seg)
		r.size -= len(seg.Data)
		r.pending.Lost += uint64(len(seg.Data))
		r.dropped += uint64(len(seg.Data))
		if seg.Resize != nil {
			segs[i] = pty.Segment{Resize: seg.Resize}
		} else {
			segs = slices.Delete(segs, i, i+1)
		}
	}
	// Of the sizes left in front without bytes, the newest is all the
	// screen needs.
	k := 0
	for k+1 < len(segs) && len(segs[k].Data) == 0 && len(segs[k+1].Data) == 0 {
		k++
	}
	r.pending.Segments = segs[k:]
	r.mu.Unlock()
	if len(dropped) > 0 {
		r.src.Recycle(pty.Batch{Segments: dropped})
	}
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// Ready implements screen.Source.
func (r *reader) Ready() <-chan struct{} { return r.ready }

// Take implements screen.Source.
func (r *reader) Take() pty.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.pending
	r.pending, r.size = pty.Batch{Closed: b.Closed}, 0
	return b
}

// Stats implements screen.Source: the bytes the agent wrote (the tap's
// count — the screen watches it to see a flood pause) and those lost on
// the way, in the tap or here.
func (r *reader) Stats() (total, lost uint64) {
	total, lost = r.src.Stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	return total, lost + r.dropped
}

// Recycle implements screen.Source: the buffers go back to the tap.
func (r *reader) Recycle(b pty.Batch) { r.src.Recycle(b) }

func rest(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
