package session

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// Sentinel is what the session file says about the marker: Open while the
// latest assistant text of the current branch ends with it unanswered.
type Sentinel struct {
	Open bool
	// File is the session file it was read from; EntryID the assistant
	// entry that carries the marker (when Open).
	File    string
	EntryID string
	// Live says that Pi made that entry since the watcher began to look at
	// the file (see [Tree.WrittenSince]): a question asked now, in a run
	// of this Pi, not one restored from the session's history — whether
	// or not anything else saw the run.
	Live bool
	// Old says that Pi made that entry before the watcher began to look at
	// the file, by the entry's own time: the session's history, whenever
	// the branch comes back to it (a /tree move). An entry without a time
	// is neither Live nor Old.
	Old bool
}

// Sink receives what the session file says, each fact on its own: the
// sentinel (SessionSentinel), and whether the branch ends in a retry Pi
// left pending (SessionRetryPending; see [Tree.RetryPending]). For each,
// the first report after a file is (re)read is sent only when it is true
// (false is what a consumer assumes at start, and a new file's false is
// sent when the last file's was true); after that, every change is sent —
// for the sentinel, also another reply that asks while it stays open.
// Calls come from the watcher's goroutine, one at a time.
type Sink interface {
	SessionSentinel(Sentinel)
	SessionRetryPending(pending bool)
}

// WatchConfig configures a [Watcher].
type WatchConfig struct {
	Sink Sink
	// Locator finds the file until Follow names one.
	Locator Locator
	// Interval between polls (default 250 ms). Between them, inotify on
	// the file's directory asks for a poll as soon as something there is
	// written (dirwatch.go); the interval is what remains where inotify
	// says nothing.
	Interval time.Duration
	// OnFile, when set, hears each file the watcher starts reading — the
	// one Follow named or the one the locator found — from the watcher's
	// goroutine, before anything read from it reaches Sink.
	OnFile func(path string)
	Logf   func(format string, args ...any)
}

// Watcher follows the session file of one Pi run and reports the sentinel.
// It owns one goroutine, started by Watch and stopped by Close.
type Watcher struct {
	cfg  WatchConfig
	mu   sync.Mutex
	path string // set by Follow; wins over the locator
	// pin is the leaf the probe named for its Pi in path (see Pin); nil
	// while none is named. pinSeq counts the pins, so the goroutine sees
	// a new one even when it repeats the last.
	pin    *pin
	pinSeq int
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	// followed is when Follow named path, started when Watch began (the
	// locator's files): a file last written before then is restored as it
	// was left (see tail.since).
	followed, started time.Time

	// dir pokes the goroutine when the watched directory changes; nil
	// without inotify. want is the file name its events must be about
	// ("" while the locator searches: any session file).
	dir  *dirWatch
	want atomic.Pointer[string]

	// owned by the goroutine
	cur       *tail
	curPinSeq int // the pin cur has
	last      Sentinel
	lastRetry bool
	sent      bool
	dirErr    string // the last error watching the directory, logged once
}

// Watch starts watching.
func Watch(cfg WatchConfig) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	w := &Watcher{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	none := ""
	w.want.Store(&none)
	if d, err := newDirWatch(w.dirEvent, cfg.Logf); err != nil {
		cfg.Logf("session: no inotify (%v); polling every %v", err, cfg.Interval)
	} else {
		w.dir = d
	}
	// The file is Pi's, written from whatever the model said, and the sink
	// is the wrapper's: a panic reading one or telling the other ends the
	// watching, not the wrapper (guard). Close still finds done closed.
	go func() {
		defer close(w.done)
		guard.Run(cfg.Logf, "session: the watcher", "the session file is not read again in this run; the agent runs on", w.run)
	}()
	return w
}

// dirEvent pokes the goroutine for an event about the file it follows, or
// about any session file while it searches.
func (w *Watcher) dirEvent(name string) {
	want := *w.want.Load()
	if name == "" || name == want || (want == "" && strings.HasSuffix(name, ".jsonl")) {
		w.Poke()
	}
}

// Follow switches to path (the probe's session_start names it, also for
// /new, /resume and /fork within one Pi process). An empty path returns to
// the locator.
func (w *Watcher) Follow(path string) {
	w.mu.Lock()
	if path != w.path {
		w.pin = nil // another file: its leaf is not known yet
		w.pinSeq++
	}
	w.path, w.followed = path, time.Now()
	w.mu.Unlock()
	w.Poke()
}

// Unpin drops the leaf named by Pin: the file's last entry line is the
// leaf again (the probe that named it went away; its Pi may run on).
func (w *Watcher) Unpin() {
	w.mu.Lock()
	if w.pin != nil {
		w.pin = nil
		w.pinSeq++
	}
	w.mu.Unlock()
	w.Poke()
}

// pin is a leaf the probe named; see [Tree.Pin].
type pin struct {
	leaf   string
	follow bool
}

// Pin says the Pi this pane runs has leaf as its leaf in the file Follow
// named, and whether it runs (follow): its entries are then told from
// another Pi's on the same file (see [Tree.Pin]). The probe names the leaf
// as a session starts, as a run starts, ends and settles, and when the
// person moves to another branch. Without a pin, the file's last entry
// line is the leaf. Follow to another file drops the pin.
func (w *Watcher) Pin(leaf string, follow bool) {
	w.mu.Lock()
	w.pin = &pin{leaf: leaf, follow: follow}
	w.pinSeq++
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
	if w.dir != nil {
		w.dir.close()
		w.dir = nil
	}
}

func (w *Watcher) run() {
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

// target is the file to read, since when the watcher looks at it, and the
// leaf pinned in it (nil: none; the locator's files have none).
func (w *Watcher) target() (path string, since time.Time, p *pin, seq int, ok bool) {
	w.mu.Lock()
	path, followed, p, seq := w.path, w.followed, w.pin, w.pinSeq
	w.mu.Unlock()
	if path != "" {
		return path, followed, p, seq, true
	}
	path, ok = w.cfg.Locator.Find()
	return path, w.started, nil, seq, ok
}

func (w *Watcher) poll() {
	path, since, p, seq, ok := w.target()
	w.watchDir(path)
	if !ok {
		return
	}
	if w.cur == nil || w.cur.path != path {
		w.cur = newTail(path, since)
		w.curPinSeq = -1
		w.sent = false // a new file: its first report is fresh
		if w.cfg.OnFile != nil {
			w.cfg.OnFile(path)
		}
	}
	// The pin goes first: the probe names a leaf once Pi has written it,
	// so what is read next has it, and the entries after it are told by it.
	repinned := w.curPinSeq != seq
	if repinned {
		w.cur.setPin(p)
		w.curPinSeq = seq
	}
	changed, err := w.cur.poll()
	changed = changed || repinned
	if err != nil {
		w.cfg.Logf("session: %s: %v", path, err)
	}
	if read, err := w.cur.readBack(); err != nil {
		w.cfg.Logf("session: %s: %v", path, err)
	} else if read {
		changed = true
	}
	if !changed && w.sent {
		return
	}
	open, id := w.cur.tree.Blocked()
	s := Sentinel{Open: open, File: path, EntryID: id, Live: open && w.cur.tree.WrittenSince(id, w.cur.since),
		Old: open && w.cur.tree.WrittenBefore(id, w.cur.since)}
	// Closed after closed is quiet, even for a new file; so is the same
	// reply asking still. Another reply asking is a new question, though
	// the file said open before and says so still: the agent asked again
	// in a run that nothing but the file may have seen.
	if news(w.sent, w.last.Open, open) || (open && w.sent && id != w.last.EntryID) {
		w.cfg.Sink.SessionSentinel(s)
	}
	retry, _ := w.cur.tree.RetryPending()
	if news(w.sent, w.lastRetry, retry) {
		w.cfg.Sink.SessionRetryPending(retry)
	}
	w.last, w.lastRetry, w.sent = s, retry, true
}

// news says whether a fact read now is to be reported: a change, or a true
// one read first from a file (sent false), which a consumer that assumes
// false at start, or heard it of the last file, must hear again.
func news(sent, last, now bool) bool {
	return now != last || (!sent && now)
}

// watchDir points the directory watch at the file's directory, or at the
// one the locator searches while no file is known.
func (w *Watcher) watchDir(path string) {
	if w.dir == nil {
		return
	}
	name := ""
	if path != "" {
		name = filepath.Base(path)
	}
	if *w.want.Load() != name { // every tick asks; only a change is stored
		w.want.Store(&name)
	}
	dir := watchedDir(path, w.cfg.Locator)
	if dir == "" {
		return
	}
	added, err := w.dir.follow(dir)
	switch {
	case added:
		// The poll looked before the watch was there: a file written in
		// between sent no event, so look again now rather than at the
		// tick (the first session file, created as the wrapper starts).
		w.dirErr = ""
		w.Poke()
	case err == nil:
		w.dirErr = ""
	case errors.Is(err, fs.ErrNotExist):
		// Pi creates it with the first session file; the tick looks.
	case err.Error() != w.dirErr:
		w.dirErr = err.Error()
		w.cfg.Logf("session: cannot watch %s (%v); polling every %v", dir, err, w.cfg.Interval)
	}
}
