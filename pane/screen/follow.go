package screen

import (
	"bytes"
	"context"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// Source is the hand-off Follow drains: a *pty.Tap.
type Source interface {
	Ready() <-chan struct{}
	Take() pty.Batch
	Recycle(pty.Batch)
	// Stats reports the bytes offered (and dropped) so far: Follow
	// watches the count, without taking, to see a flood pause.
	Stats() (total, lost uint64)
}

// FollowOptions configure Follow.
type FollowOptions struct {
	// Rows and Cols are the size the terminal had when output started;
	// later sizes arrive in band with the output.
	Rows, Cols int
	// Publish receives a snapshot each time what the screen shows changed.
	// It runs on Follow's goroutine; detection is cheap next to emulation,
	// so it may classify the snapshot right there.
	Publish func(Snapshot)
	// Seen hears, after every look (and after Publish when the look
	// published), how much of the source's output the screen is current
	// with: the Through of the last batch it took. It hears it whether or
	// not what the screen shows changed, so a state machine waiting for
	// the screen to catch up learns that it has. It runs on Follow's
	// goroutine. May be nil.
	Seen func(through uint64)
	// Logf receives diagnostics (emulator panics). May be nil.
	Logf func(format string, args ...any)

	// MaxFeed bounds the bytes emulated per batch: of a larger batch only
	// the newest MaxFeed bytes are fed (default 16 KiB: more than a full
	// redraw of a busy agent screen).
	MaxFeed int
	// RestFactor makes the consumer rest RestFactor times as long as it
	// worked after a heavy batch (default 4)...
	RestFactor int
	// ...and at least MinRest (default 500 ms), so a flood costs a few
	// percent of a core: the screen is looked at a few times a second,
	// which is all a 300 ms debounce needs.
	MinRest time.Duration
	// HeavyAfter is how much work on one batch earns rest even without a
	// flood (default 10 ms). Work is the CPU the process used while the
	// batch was handled, never more than the time it took: a batch that
	// took long because the machine gave the wrapper no core, or because
	// a sink (the log file) made the look wait, did no work worth resting
	// for, and a rest then would only hold back the screen's next look,
	// and the verdict waiting for it, by four times the stall.
	HeavyAfter time.Duration
	// FloodBytes is how much output within a quarter of a second makes a
	// flood even when every batch was small enough to draw whole (default
	// 64 KiB: well above what an agent's TUI draws between two pauses of
	// Quiet, far below what `cat` of a big file does).
	FloodBytes int
	// Quiet is how long output must pause for a resting consumer to look
	// at once (default 20 ms): the screen a flood ends on is drawn right
	// away, not after the rest.
	Quiet time.Duration
	// Frame is the least time between a look that found the screen
	// changed and the next look (default 16 ms, a display's frame):
	// output within a frame of a change is drawn at once and looked at
	// when that frame ends; any other output is looked at at once. The
	// newest screen is always seen, at most a frame late; one replaced
	// within the frame is not, and it could not have held a state
	// through the machine's debounce. The echo of fast typing then costs
	// 60 looks a second instead of one per batch taken
	// (up to 500): each look renders the whole screen, and each change
	// is classified; at 500 a second that work on the other core added
	// half a millisecond to the slowest keystroke echoes. Output that
	// changes nothing visible (a cleared screen that was empty) holds
	// nothing back, so the text that follows it is seen as soon as it
	// arrives.
	Frame time.Duration
	// Gap is the least time between two takes (none when zero): a stream
	// of small writes, each signalling the source, then wakes Follow at
	// most 1/Gap times a second rather than once a write, and hands it
	// the writes of a gap at once.
	Gap time.Duration

	// cpu reads the process's CPU time (processCPU when nil); tests give
	// their own.
	cpu func() time.Duration
}

const (
	defaultMaxFeed    = 16 << 10
	defaultRestFactor = 4
	defaultMinRest    = 500 * time.Millisecond
	defaultHeavyAfter = 10 * time.Millisecond
	defaultFloodBytes = 64 << 10
	defaultQuiet      = 20 * time.Millisecond
	defaultFrame      = 16 * time.Millisecond
	floodWindow       = 250 * time.Millisecond
	maxRest           = time.Second
)

// Follow feeds the screen from src until src reports Closed or ctx ends,
// publishing snapshots as they change. It runs on the caller's goroutine,
// which owns it; it starts no timer while output is quiet, so an idle
// agent costs nothing.
//
// The copy loop never waits on Follow: the tap drops the oldest bytes when
// Follow falls behind, and Follow itself skips to the newest MaxFeed bytes
// of a big batch and rests after heavy work, so an output flood cannot
// take a whole core from the agent and the terminal. A flood — bytes
// dropped or skipped, or more than FloodBytes in a quarter second even in
// batches small enough to draw — is looked at a few times a second at
// most, and once more as soon as it pauses for Quiet: the emulator sees a
// bounded window of the newest output, not every byte, while the screen
// the flood ends on is drawn at once.
func Follow(ctx context.Context, src Source, o FollowOptions) {
	if o.MaxFeed <= 0 {
		o.MaxFeed = defaultMaxFeed
	}
	if o.RestFactor <= 0 {
		o.RestFactor = defaultRestFactor
	}
	if o.HeavyAfter <= 0 {
		o.HeavyAfter = defaultHeavyAfter
	}
	if o.MinRest <= 0 {
		o.MinRest = defaultMinRest
	}
	if o.FloodBytes <= 0 {
		o.FloodBytes = defaultFloodBytes
	}
	if o.Quiet <= 0 {
		o.Quiet = defaultQuiet
	}
	if o.Frame <= 0 {
		o.Frame = defaultFrame
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.cpu == nil {
		o.cpu = processCPU
	}
	// The screen is built with the first output, at the newest size the
	// source gave before it (the tap's first segment is the terminal's
	// size): building at the default and resizing costs a quarter of the
	// wrapper's start-up CPU (x/vt reallocates every cell). Not before:
	// the first batch, the size alone, comes while the wrapper starts the
	// agent, and the emulator's cells and its 4 MiB buffer for escape
	// strings (which set off the wrapper's first garbage collection) cost
	// CPU the agent's start could use; an agent that prints nothing never
	// needs them. Until then a look sees the blank screen of that size,
	// which is what a screen built then would show.
	var s *Screen
	rows, cols := o.Rows, o.Cols
	defer func() {
		if s != nil {
			s.Close()
		}
	}()

	if o.Seen == nil {
		o.Seen = func(uint64) {}
	}
	var last Snapshot
	published := false
	// through: the source's output up to the last batch taken.
	var through uint64
	lossy := false
	var window time.Time // start of the current flood-rate window
	windowBytes := 0
	// Drawn output waits for a look (a snapshot, and the detection it
	// feeds) until a frame has passed since the last change: see Frame.
	var lastChange time.Time
	unseen, unseenWhole := false, false
	frame := time.NewTimer(time.Hour)
	frame.Stop()
	defer frame.Stop()
	frameArmed := false
	look := func() {
		if !unseen {
			return
		}
		if s != nil && s.Suspect() {
			// The emulator panicked on the output and was rebuilt
			// blank: there is nothing to look at until more output
			// draws on it, and waiting would hold a verdict back for
			// as long as the agent stays quiet.
			o.Seen(through)
			return
		}
		unseen = false
		snap := blankSnapshot(rows, cols)
		if s != nil {
			snap = s.Snapshot()
		}
		snap.Lossy = lossy
		if !published || !snap.same(last) || snap.Lossy != last.Lossy {
			last, published = snap, true
			lastChange = time.Now()
			if o.Publish != nil {
				o.Publish(snap)
			}
		}
		if unseenWhole {
			// A batch taken whole after a lossy stretch still leaves
			// the screen as it was; only redraws cure it, so the flag
			// clears once a full batch has been drawn.
			lossy = false
		}
		o.Seen(through)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-frame.C:
			frameArmed = false
			look()
			continue
		case <-src.Ready():
		}
		start, startCPU := time.Now(), o.cpu()
		b := src.Take()
		if b.Lost > 0 {
			lossy = true
		}
		if start.Sub(window) > floodWindow {
			window, windowBytes = start, 0
		}
		windowBytes += batchBytes(b)
		var fed, skipped bool
		if s == nil {
			// The sizes before the first output are taken here; a
			// screen built now starts at the last of them.
			fb := b
			for len(fb.Segments) > 0 && len(fb.Segments[0].Data) == 0 {
				if r := fb.Segments[0].Resize; r != nil {
					rows, cols = int(r.Rows), int(r.Cols)
					// A resize changes what a look sees, as it
					// does on a built screen.
					fed = true
				}
				fb.Segments = fb.Segments[1:]
			}
			if len(fb.Segments) > 0 {
				s = New(rows, cols)
				f, sk := feed(s, fb, o.MaxFeed, o.Logf)
				fed, skipped = fed || f, sk
			}
		} else {
			fed, skipped = feed(s, b, o.MaxFeed, o.Logf)
		}
		if skipped {
			lossy = true
		}
		src.Recycle(b)
		through = max(through, b.Through)
		if fed {
			unseen, unseenWhole = true, !skipped && b.Lost == 0
		} else if !unseen {
			// Nothing drawn (the bytes were all dropped): the screen
			// is as current as it can be without a look.
			o.Seen(through)
		}
		flood := b.Lost > 0 || skipped || windowBytes > o.FloodBytes
		// Output a frame after the last change, the end of the output,
		// and a flood or a heavy batch (both about to rest) are looked at
		// at once; output within a frame of a change waits for the
		// frame's end, drawn meanwhile.
		if b.Closed || flood || time.Since(start) > o.HeavyAfter || start.Sub(lastChange) >= o.Frame {
			if frameArmed {
				frame.Stop()
				frameArmed = false
			}
			look()
		} else if unseen && !frameArmed {
			frame.Reset(o.Frame - start.Sub(lastChange))
			frameArmed = true
		}
		if b.Closed {
			return
		}
		// A flood (bytes lost or skipped, or too many bytes too fast) is
		// looked at a few times a second at most, and again once it
		// pauses; any batch that took long buys proportional rest. An
		// agent's ordinary redraws do neither: they are seen without rest
		// (at most a frame after the change before them).
		work := time.Since(start)
		if work > o.HeavyAfter {
			// Only the CPU it used counts (see HeavyAfter); the clock is
			// read again only for a batch that took long.
			work = min(work, o.cpu()-startCPU)
		}
		switch {
		case flood:
			settle(ctx, src, o.Quiet, min(max(work*time.Duration(o.RestFactor), o.MinRest), maxRest))
			window, windowBytes = time.Time{}, 0
		case work > o.HeavyAfter:
			rest(ctx, min(work*time.Duration(o.RestFactor), maxRest))
		default:
			rest(ctx, o.Gap)
		}
	}
}

// processCPU is the CPU time the process has used. Every thread counts:
// the goroutine may move between threads while it works, and the copy
// loop's share over one batch is small next to a heavy look's.
func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0 // no CPU clock: every batch is light, the flood path still rests
	}
	return time.Duration(ts.Nano())
}

// batchBytes counts the output a batch stood for, dropped bytes included.
func batchBytes(b pty.Batch) int {
	n := int(min(b.Lost, 1<<30))
	for _, seg := range b.Segments {
		n += len(seg.Data)
	}
	return n
}

// settle rests up to limit while output keeps coming, and ends early once
// none arrived for quiet. It watches the source's byte count rather than
// Ready, which stays signalled while nobody takes.
func settle(ctx context.Context, src Source, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	seen, _ := src.Stats()
	t := time.NewTimer(min(quiet, limit))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		total, _ := src.Stats()
		left := time.Until(deadline)
		if total == seen || left <= 0 {
			return
		}
		seen = total
		t.Reset(min(quiet, left))
	}
}

// feed applies a batch: every resize in order, and of the data only the
// newest maxFeed bytes. It reports whether anything was drawn and whether
// bytes were skipped.
func feed(s *Screen, b pty.Batch, maxFeed int, logf func(string, ...any)) (fed, skipped bool) {
	total := 0
	for _, seg := range b.Segments {
		total += len(seg.Data)
	}
	skip := max(0, total-maxFeed)
	if skip > 0 {
		skip = total - lastLines(b.Segments, s.rows+1, maxFeed)
	}
	skipped = skip > 0
	if skipped && plainLines(b.Segments, skip, s.rows+1) {
		s.restartFlood()
	}
	for _, seg := range b.Segments {
		data := seg.Data
		if skip > 0 {
			k := min(skip, len(data))
			data, skip = data[k:], skip-k
		}
		if len(data) > 0 {
			if err := s.Write(data); err != nil {
				logf("%v", err)
			}
			fed = true
		}
		if seg.Resize != nil {
			if err := s.Resize(int(seg.Resize.Rows), int(seg.Resize.Cols)); err != nil {
				logf("%v", err)
			}
			fed = true
		}
	}
	return fed, skipped
}

// lastLines is how many of the newest bytes hold the last n line feeds and
// what follows them, at most limit. A flood already skips: of its newest
// bytes only the last screenful of lines matters, and every line feed
// the emulator draws scrolls the whole screen (x/vt moves each cell:
// ~0.4 ms a line on a 200x50 screen, 39 ms for 16 KiB of 160-column
// lines).
func lastLines(segs []pty.Segment, n, limit int) int {
	keep := 0
	for i := len(segs) - 1; i >= 0 && keep < limit; i-- {
		d := segs[i].Data
		d = d[max(0, len(d)-(limit-keep)):]
		for end := len(d); ; {
			j := bytes.LastIndexByte(d[:end], '\n')
			if j < 0 {
				break
			}
			if n--; n < 0 {
				return keep + len(d) - j - 1
			}
			end = j
		}
		keep += len(d)
	}
	return min(keep, limit)
}

// plainLines reports whether the segments' bytes after the first skip hold
// at least n line feeds and nothing but printable UTF-8 and C0 controls
// other than ESC, and the batch no resize: text that moves the cursor only
// by writing, line feeds, returns, tabs and backspaces, and pushes every
// earlier row off a terminal's screen, so its last screenful may be drawn
// on a cleared one (Screen.restartFlood).
func plainLines(segs []pty.Segment, skip, n int) bool {
	lines := 0
	for _, seg := range segs {
		if seg.Resize != nil {
			return false
		}
		data := seg.Data
		k := min(skip, len(data))
		data, skip = data[k:], skip-k
		if len(data) > 0 {
			if bytes.IndexByte(data, 0x1b) >= 0 || !utf8.Valid(data) || hasC1(data) {
				return false
			}
			lines += bytes.Count(data, []byte{'\n'})
		}
	}
	return lines >= n
}

// hasC1 reports whether UTF-8 text holds a C1 control (U+0080–U+009F, two
// bytes starting 0xC2), which a terminal may act on like an escape.
func hasC1(p []byte) bool {
	for {
		i := bytes.IndexByte(p, 0xc2)
		if i < 0 || i+1 >= len(p) {
			return false
		}
		if p[i+1] < 0xa0 {
			return true
		}
		p = p[i+1:]
	}
}

func rest(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
