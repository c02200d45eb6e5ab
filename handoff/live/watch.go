package live

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
)

// Herdr is what a live handoff needs of Herdr's socket: placing and
// closing panes, and following a pane. Client adapts *herdr.Client.
type Herdr interface {
	handoff.Herdr
	TabFocus(ctx context.Context, tabID string) (herdr.TabInfo, error)
	AgentGet(ctx context.Context, target string) (herdr.AgentInfo, error)
	PaneGet(ctx context.Context, paneID string) (herdr.PaneInfo, error)
	// Watch follows Herdr's event stream for subs across reconnects,
	// calling connected each time the subscription starts and handle for
	// each event, until ctx ends or Herdr rejects the subscription (a
	// *herdr.Error).
	Watch(ctx context.Context, subs []herdr.Subscription, connected func(reconnect bool), handle func(herdr.Event)) error
}

// Client is a Herdr socket client as a live handoff uses it.
type Client struct{ *herdr.Client }

// Watch runs a herdr.Watcher.
func (c Client) Watch(ctx context.Context, subs []herdr.Subscription, connected func(bool), handle func(herdr.Event)) error {
	w := &herdr.Watcher{Client: c.Client, Subscriptions: subs, OnConnect: connected}
	return w.Run(ctx, handle)
}

// paneEvent is one change of the handed-off pane: an agent status, or its
// end (exited, closed).
type paneEvent struct {
	status string
	end    string
}

// pollEvery paces the fallback when Herdr's events are unavailable.
const pollEvery = 500 * time.Millisecond

// watchPane follows the pane until it ends or ctx does, sending each change
// to out in order; the end is the last thing sent, and ended closes with
// it. It listens to Herdr's
// events (pane.agent_status_changed for the pane, its exit or close, the
// close of its tab or workspace, the release of its agent); only when
// Herdr refuses the subscription does it fall back to asking (pane.get,
// agent.get) every pollEvery. It returns when the pane
// ended (nil) or ctx did.
func watchPane(ctx context.Context, h Herdr, at handoff.Placed, out chan<- paneEvent, endedCh chan<- struct{}, logf func(string, ...any)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := false
	send := func(ev paneEvent) {
		if ended {
			return
		}
		ended = ev.end != ""
		if ended {
			close(endedCh)
		}
		select {
		case out <- ev:
		case <-ctx.Done():
		}
		if ended {
			cancel()
		}
	}
	subs := []herdr.Subscription{
		{Type: "pane.agent_status_changed", PaneID: at.PaneID},
		{Type: "pane.exited"}, {Type: "pane.closed"}, {Type: "tab.closed"}, {Type: "workspace.closed"},
		{Type: "pane.agent_detected"},
	}
	// A change between placing the pane and the subscription's start (or
	// while reconnecting, or when Herdr dropped events: Herdr 0.9 replays
	// nothing) would be lost: each start reads the pane back — gone is
	// closed, as handoff.WaitEnded has it — and its status.
	connected := func(bool) {
		if _, err := h.PaneGet(ctx, at.PaneID); notFound(err) {
			send(paneEvent{end: string(handoff.PaneClosed)})
			return
		}
		if a, err := h.AgentGet(ctx, at.PaneID); err == nil && a.AgentStatus != "" {
			send(paneEvent{status: a.AgentStatus})
		}
	}
	err := h.Watch(ctx, subs, connected, func(e herdr.Event) {
		if ev, ok := interpret(e, at); ok {
			send(ev)
		}
	})
	if ended || ctx.Err() != nil {
		return ctx.Err()
	}
	logf("live: Herdr's events for pane %s are unavailable (%v); asking every %v instead", at.PaneID, err, pollEvery)
	return pollPane(ctx, h, at, send)
}

// interpret turns one of Herdr's events into a change of the pane at.
func interpret(e herdr.Event, at handoff.Placed) (paneEvent, bool) {
	var d struct {
		TabID    string `json:"tab_id"`
		Released bool   `json:"released"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Name {
	case "pane.agent_status_changed":
		if e.PaneID == at.PaneID {
			return paneEvent{status: e.AgentStatus}, true
		}
	case "pane_exited", "pane.exited":
		if e.PaneID == at.PaneID {
			return paneEvent{end: string(handoff.PaneExited)}, true
		}
	case "pane_closed", "pane.closed":
		if e.PaneID == at.PaneID {
			return paneEvent{end: string(handoff.PaneClosed)}, true
		}
	case "tab_closed", "tab.closed":
		if d.TabID != "" && d.TabID == at.TabID {
			return paneEvent{end: string(handoff.PaneClosed)}, true
		}
	case "workspace_closed", "workspace.closed":
		if e.WorkspaceID != "" && e.WorkspaceID == at.WorkspaceID {
			return paneEvent{end: string(handoff.PaneClosed)}, true
		}
	case "pane_agent_detected", "pane.agent_detected":
		// The pane's wrapper released its agent: Pi is gone, whether or
		// not the pane's shell ended (a failed Pi leaves the pane open
		// with its error until Enter).
		if e.PaneID == at.PaneID && d.Released {
			return paneEvent{end: string(handoff.PaneExited)}, true
		}
	}
	return paneEvent{}, false
}

// pollPane is the fallback: the pane is gone when Herdr no longer knows it
// (closed), its agent gone when the status it had turns unknown or the
// pane has no agent any more (exited).
func pollPane(ctx context.Context, h Herdr, at handoff.Placed, send func(paneEvent)) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last, seen := "", false
	for {
		if _, err := h.PaneGet(ctx, at.PaneID); notFound(err) {
			send(paneEvent{end: string(handoff.PaneClosed)})
			return nil
		}
		a, err := h.AgentGet(ctx, at.PaneID)
		switch {
		case err == nil && a.AgentStatus != last:
			last = a.AgentStatus
			if last == "unknown" && seen {
				send(paneEvent{end: string(handoff.PaneExited)})
				return nil
			}
			seen = seen || last != "unknown"
			send(paneEvent{status: last})
		case notFound(err) && seen:
			// Released, the pane has no agent any more, and Herdr answers
			// agent.get with agent_not_found, not an unknown status
			// (herdr-socket-api.md §2.3, §5.1): its Pi is gone.
			send(paneEvent{end: string(handoff.PaneExited)})
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func notFound(err error) bool {
	var he *herdr.Error
	return errors.As(err, &he) && strings.HasSuffix(he.Code, "_not_found")
}
