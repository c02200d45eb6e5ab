package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// WatcherEvents follows Herdr's event stream through c (a herdr.Watcher).
// It hands over a Subscribed event whenever events may have been missed:
// at each (re)connection to a Herdr that replays nothing on subscribe
// (protocol 22, Herdr 0.9 — an older one replays its recent events, which
// say more than a read-back), and whenever Herdr says it lost events.
func WatcherEvents(c *herdr.Client) Events {
	return func(ctx context.Context, subs []herdr.Subscription, handle func(herdr.Event)) error {
		subscribed := func() { handle(herdr.Event{Name: Subscribed}) }
		w := &herdr.Watcher{Client: c, Subscriptions: subs, OnLost: subscribed,
			OnConnect: func(bool) {
				// A failed ping says nothing of replay: read back anyway.
				if p, _ := c.Ping(ctx); p.Protocol == 0 || p.Protocol >= herdr.ProtocolResume {
					subscribed()
				}
			}}
		return w.Run(ctx, handle)
	}
}

// PaneEnd is how an opened pane ended, as Herdr's events tell it.
type PaneEnd struct {
	// Ended is closed once the pane has ended; Done once the watch is
	// over (the pane ended, the watch failed, or it was stopped). How and
	// Err are set when Done is closed.
	Ended, Done chan struct{}
	How         Ended
	Err         error
}

// WatchEnd follows Herdr's events for the pane, on a goroutine of its own
// that ends when the pane ends or ctx does (Done): from the moment a pane
// is opened, no wait for it outlives it.
func WatchEnd(ctx context.Context, events Events, look PaneLookup, at Placed) *PaneEnd {
	e := &PaneEnd{Ended: make(chan struct{}), Done: make(chan struct{})}
	go func() {
		defer close(e.Done)
		// No log here: a panic following the pane becomes the watch's
		// error, its stack included, for the caller to report; Ended stays
		// open, and the waits on it are bounded by their own timeouts.
		tell := func(format string, args ...any) { e.Err = fmt.Errorf(format, args...) }
		guard.Run(tell, "handoff: the watch of pane "+at.PaneID, "its end is not seen", func() {
			e.How, e.Err = WaitEnded(ctx, events, look, at)
			if e.Err == nil {
				close(e.Ended)
			}
		})
	}()
	return e
}

// WaitStarted returns once the pane's shell started the command file
// (which deletes itself first thing). A pane that never does, or ends
// first, is an error: the file is removed so nothing is left behind.
func WaitStarted(ctx context.Context, o Opened, timeout time.Duration, ended <-chan struct{}) error {
	file := o.CommandFile
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// unstarted removes the file and is true, unless the pane's shell
	// removed it first: the pane may have started its command since the
	// last look (a command that ends at once takes its pane along well
	// within one tick). Whichever removes the file first decides.
	unstarted := func() bool { return !errors.Is(os.Remove(file), os.ErrNotExist) }
	for {
		if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			os.Remove(file)
			return ctx.Err()
		case <-deadline.C:
			if !unstarted() {
				return nil
			}
			return fmt.Errorf("pane %s did not start its command within %v", o.PaneID, timeout)
		case <-ended:
			if !unstarted() {
				return nil
			}
			return fmt.Errorf("pane %s ended before it started its command", o.PaneID)
		case <-tick.C:
		}
	}
}

// ForkOf asks the herdr-pi wrapper in the new pane which session file its
// Pi writes (the fork), through the pane registry under runtimeBase,
// waiting up to timeout for it to register and to hear Pi's session_start;
// "" when it does not say in time or the pane ends first. failed is true
// when the pane's command failed first (its script removed the watch file).
//
// The wrapper also writes what it heard to o.StartedFile, which outlives
// it: a pane closed right after its Pi started may take its wrapper along
// before a look finds it (looks come late on a loaded machine). So the
// pane's end is decided by a last look at that file, not by the wrapper.
func ForkOf(ctx context.Context, runtimeBase, herdrSocket string, o Opened, timeout time.Duration, ended <-chan struct{}) (fork string, failed bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reg := control.PaneRegistry(runtimeBase)
	key := control.PaneKey(herdrSocket, o.PaneID)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ep, err := reg.Lookup(key); err == nil {
			if c, err := control.Dial(ctx, ep.Socket, ep.Token); err == nil {
				st, err := c.Status(ctx)
				c.Close()
				if err == nil && st.SessionFile != "" {
					return st.SessionFile, false
				}
			}
		}
		if _, err := os.Lstat(o.WatchFile); errors.Is(err, os.ErrNotExist) {
			return "", true
		}
		select {
		case <-ctx.Done():
			return StartedSession(o.StartedFile), false
		case <-ended:
			return StartedSession(o.StartedFile), false
		case <-tick.C:
		}
	}
}

// StartedSession is the session file a pane's wrapper wrote to file when
// its Pi started (see StartedFileEnv); "" when it wrote none (or file is
// "", as for a reused tab). The wrapper renames the file into place
// whole, so it is never read half written.
func StartedSession(file string) string {
	if file == "" {
		return ""
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	return string(b)
}

// WriteStarted writes session to file for StartedSession, once: a file
// already there (an earlier session_start of the same Pi) stays. It is
// written beside file and renamed into place, so it is whole when seen.
func WriteStarted(file, session string) error {
	if _, err := os.Lstat(file); err == nil {
		return nil
	}
	tmp := file + ".tmp"
	if err := control.WriteNewFile(tmp, []byte(session)); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// PaneWrapper is the pid of the herdr-pi wrapper registered for a Herdr
// pane under runtimeBase, and the run directory that holds its socket
// ("" when the socket is in none); 0 when no wrapper is registered.
func PaneWrapper(runtimeBase, herdrSocket, paneID string) (pid int, runDir string) {
	ep, err := control.PaneRegistry(runtimeBase).Lookup(control.PaneKey(herdrSocket, paneID))
	if err != nil {
		return 0, ""
	}
	if rd, ok := control.ReadRunDir(filepath.Dir(ep.Socket)); ok && rd.PID == ep.PID {
		runDir = rd.Path
	}
	return ep.PID, runDir
}

// CloseBudget bounds closing what was opened on the way out (after a
// failure or an interruption, when the caller's context is done).
const CloseBudget = 3 * time.Second

// Close closes what Open created, with a budget of its own.
func (o *Opened) Close(h Herdr) error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseBudget)
	defer cancel()
	return o.Undo(ctx, h)
}

// CloseAfter closes what Open created after err, with a budget of its
// own, and returns err: a *LeftOpenError naming what stays open when Herdr
// refused the close, for the caller's ledger.
func (o *Opened) CloseAfter(h Herdr, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseBudget)
	defer cancel()
	return undoFailed(ctx, h, &o.Placed, err)
}

// CloseJoined closes what Open created as UndoJoined does (once others
// may have joined the workspace), with a budget of its own.
func (o *Opened) CloseJoined(h Herdr) (kept bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), CloseBudget)
	defer cancel()
	return o.UndoJoined(ctx, h)
}
