package session

import (
	"sync"
	"time"
)

// Sentinel is what the session file says about the marker: Open while the
// latest assistant text of the current branch ends with it unanswered.
type Sentinel struct {
	Open bool
	// File is the session file it was read from; EntryID the assistant
	// entry that carries the marker (when Open).
	File    string
	EntryID string
}

// Sink receives sentinel changes. The first report after a file is (re)read
// is sent only when it is open (closed is what a consumer assumes at
// start); after that, every change of Open is sent. Calls come from the
// watcher's goroutine, one at a time.
type Sink interface {
	SessionSentinel(Sentinel)
}

// WatchConfig configures a [Watcher].
type WatchConfig struct {
	Sink Sink
	// Locator finds the file until Follow names one.
	Locator Locator
	// Interval between polls (default 250 ms). Pi appends whole lines, so
	// polling a stat is cheap and needs no file-notification dependency.
	Interval time.Duration
	Logf     func(format string, args ...any)
}

// Watcher follows the session file of one Pi run and reports the sentinel.
// It owns one goroutine, started by Watch and stopped by Close.
type Watcher struct {
	cfg  WatchConfig
	mu   sync.Mutex
	path string // set by Follow; wins over the locator
	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	// owned by the goroutine
	cur  *tail
	last Sentinel
	sent bool
}

// Watch starts watching.
func Watch(cfg WatchConfig) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	w := &Watcher{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Follow switches to path (the probe's session_start names it, also for
// /new, /resume and /fork within one Pi process). An empty path returns to
// the locator.
func (w *Watcher) Follow(path string) {
	w.mu.Lock()
	w.path = path
	w.mu.Unlock()
	w.Poke()
}

// Poke asks for a poll now (after an agent_end, say) instead of at the next
// interval.
func (w *Watcher) Poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close stops the goroutine and waits for it.
func (w *Watcher) Close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *Watcher) run() {
	defer close(w.done)
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		w.poll()
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
	}
}

func (w *Watcher) target() (string, bool) {
	w.mu.Lock()
	p := w.path
	w.mu.Unlock()
	if p != "" {
		return p, true
	}
	return w.cfg.Locator.Find()
}

func (w *Watcher) poll() {
	path, ok := w.target()
	if !ok {
		return
	}
	if w.cur == nil || w.cur.path != path {
		w.cur = newTail(path)
		w.sent = false // a new file: its first report is fresh
	}
	changed, err := w.cur.poll()
	if err != nil {
		w.cfg.Logf("session: %s: %v", path, err)
	}
	if !changed && w.sent {
		return
	}
	open, id := w.cur.tree.Blocked()
	s := Sentinel{Open: open, File: path, EntryID: id}
	switch {
	case !w.sent && !open && !w.last.Open:
		// Closed after closed: nothing to say, even for a new file.
	case w.sent && open == w.last.Open:
		// No change of Open (maybe a new marker message): stay quiet.
	default:
		w.cfg.Sink.SessionSentinel(s)
	}
	w.last, w.sent = s, true
}
