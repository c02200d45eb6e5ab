package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Events follows Herdr's event stream for subs and calls handle for each
// event until ctx ends or the stream fails for good; herdr.Watcher.Run is
// one (wrapped with its client and subscriptions). Each time Herdr
// acknowledges the subscription it hands over a Subscribed event first.
type Events func(ctx context.Context, subs []herdr.Subscription, handle func(herdr.Event)) error

// Subscribed is the name of the event an Events source hands over each
// time its subscription is (re)established: what happened before it may
// never arrive (Herdr ≥ 0.9 replays nothing; a reconnect loses events).
const Subscribed = "herdr-pi.subscribed"

// PaneLookup reads a pane back from Herdr (herdr.Client.PaneGet is one); a
// pane_not_found error means the pane is gone.
type PaneLookup func(ctx context.Context, paneID string) (herdr.PaneInfo, error)

// Ended says how a pane ended.
type Ended string

const (
	// PaneExited: the program in the pane ended (the person quit Pi).
	PaneExited Ended = "exited"
	// PaneClosed: the pane was closed.
	PaneClosed Ended = "closed"
)

// errEnded stops the event stream once the pane is gone.
var errEnded = errors.New("pane ended")

// WaitEnded returns once the pane has exited or been closed — itself, or
// with its tab or workspace — as Herdr's events say (never by polling).
// Herdr 0.8 may replay earlier generic events on subscribe
// (herdr-socket-api.md §5.4), which is harmless: ids are not reused within
// a Herdr session. Herdr 0.9 replays nothing, so a pane that ended before
// the subscription took is found by reading it back (look) once the
// subscription is acknowledged: gone is "closed" (whether its program
// exited first cannot be known any more).
func WaitEnded(ctx context.Context, events Events, look PaneLookup, at Placed) (Ended, error) {
	var how Ended
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	subs := []herdr.Subscription{{Type: "pane.exited"}, {Type: "pane.closed"}, {Type: "tab.closed"}, {Type: "workspace.closed"}}
	err := events(ctx, subs, func(e herdr.Event) {
		if how != "" {
			return
		}
		switch e.Name {
		case Subscribed:
			if look != nil && paneGone(ctx, look, at.PaneID) {
				how = PaneClosed
			}
		case "pane_exited", "pane.exited":
			if e.PaneID == at.PaneID {
				how = PaneExited
			}
		case "pane_closed", "pane.closed":
			if e.PaneID == at.PaneID {
				how = PaneClosed
			}
		case "tab_closed", "tab.closed":
			var d struct {
				TabID string `json:"tab_id"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.TabID != "" && d.TabID == at.TabID {
				how = PaneClosed
			}
		case "workspace_closed", "workspace.closed":
			if e.WorkspaceID != "" && e.WorkspaceID == at.WorkspaceID {
				how = PaneClosed
			}
		}
		if how != "" {
			cancel(errEnded)
		}
	})
	if how != "" {
		return how, nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return "", err
}

// paneGone is true when Herdr says it has no such pane (any other answer,
// or none, leaves the events to tell).
func paneGone(ctx context.Context, look PaneLookup, paneID string) bool {
	_, err := look(ctx, paneID)
	var he *herdr.Error
	return errors.As(err, &he) && he.Code == "pane_not_found"
}

// Gone says err is Herdr's word that what was to be closed or looked at
// (a pane, tab or workspace) is not there any more.
func Gone(err error) bool {
	var he *herdr.Error
	return errors.As(err, &he) && strings.HasSuffix(he.Code, "_not_found")
}

// HerdrGone says err means Herdr's socket is gone or dead: Herdr went
// away, and its panes with it.
func HerdrGone(err error) bool {
	var te *herdr.TransportError
	return errors.As(err, &te) && (te.Kind == herdr.FailNoSocket || te.Kind == herdr.FailRefused)
}

// WatchWrapper follows the herdr-pi wrap in a pane — pid, its run
// directory dir, as PaneWrapper names them — on a goroutine of its own:
// gone closes once the wrapper no longer runs (judged by its run
// directory's lock, as control.WrapperAlive does, so a reused pid is not
// mistaken for it), done once the watch is over (gone, or ctx ended).
func WatchWrapper(ctx context.Context, pid int, dir string) (gone, done <-chan struct{}) {
	g, d := make(chan struct{}), make(chan struct{})
	go func() { // nothing in it can panic: a poll and a close
		defer close(d)
		tick := time.NewTicker(wrapperPollEvery)
		defer tick.Stop()
		for control.WrapperAlive(dir, pid) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		close(g)
	}()
	return g, d
}

// wrapperPollEvery paces WatchWrapper.
const wrapperPollEvery = 250 * time.Millisecond

// WrapperEndGrace is how long Herdr's events get to tell how a pane ended
// once its herdr-pi wrap has exited, while Herdr still answers: the pane's
// program ended, so the event is on its way.
const WrapperEndGrace = 5 * time.Second

// EndedAfterWrapper says how a pane ended whose herdr-pi wrap is gone,
// for a wait on Herdr's events that might never end (Herdr went away, or
// restarted without the pane's processes). A Herdr that no longer answers
// took its panes along: closed, at once. One that answers still sends
// events: until grace they may tell first (watched closes, and ok is
// false: the events say); after it, Herdr's read-back of the pane does —
// gone is closed, still there exited.
func EndedAfterWrapper(ctx context.Context, look PaneLookup, paneID string, watched <-chan struct{}, grace time.Duration) (how Ended, ok bool) {
	if _, err := look(ctx, paneID); HerdrGone(err) {
		return PaneClosed, true
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-watched:
		return "", false
	case <-ctx.Done():
		return "", false
	case <-t.C:
	}
	if _, err := look(ctx, paneID); HerdrGone(err) || paneGone(ctx, look, paneID) {
		return PaneClosed, true
	}
	return PaneExited, true
}
