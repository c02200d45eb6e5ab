package handoff

import (
	"context"
	"encoding/json"
	"errors"

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
