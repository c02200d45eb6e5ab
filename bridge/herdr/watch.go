package herdr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Subscription is one entry of events.subscribe (herdr-socket-api.md §5.3).
type Subscription struct {
	// Type is a dotted subscription type: "pane.agent_status_changed"
	// (needs PaneID), "pane.exited", "pane.closed", …
	Type   string `json:"type"`
	PaneID string `json:"pane_id,omitempty"`
	// AgentStatus filters pane.agent_status_changed to one status.
	AgentStatus string `json:"agent_status,omitempty"`
}

// Event is one line of Herdr's event stream.
type Event struct {
	// Name is the event as it appears on the wire: dotted for per-pane
	// subscriptions ("pane.agent_status_changed"), snake_case for generic
	// ones ("pane_exited", "pane_closed"); see §5.2.
	Name        string
	PaneID      string
	WorkspaceID string
	AgentStatus string // pane.agent_status_changed only
	Agent       string // the agent label, when the event carries one
	// Dropped is how many events Herdr says it dropped, for events_lost
	// (0 when it does not say).
	Dropped int
	// Data is the event's data object as received.
	Data json.RawMessage
}

// EventsLost is the event Herdr 0.9 sends a subscriber that fell behind,
// in place of the events it dropped (landscape.md §9). Its data is not
// documented: [Event.Dropped] is read from it when it says.
const EventsLost = "events_lost"

// parseEvent decodes one stream line. Both shapes of §5.2 are accepted;
// fields an event does not carry stay empty. events_lost is accepted with
// any data or none, since its shape is not known.
func parseEvent(line []byte) (Event, error) {
	var env struct {
		Event *string         `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &env); err != nil {
		return Event{}, fmt.Errorf("%w: %s", errGarbage, quoteStart(line))
	}
	if env.Event != nil && (*env.Event == EventsLost || *env.Event == "events.lost") {
		return eventsLost(env.Data), nil
	}
	if env.Event == nil || *env.Event == "" || len(env.Data) == 0 || env.Data[0] != '{' {
		return Event{}, fmt.Errorf("%w: want {\"event\",\"data\":{…}}: %s", errGarbage, quoteStart(line))
	}
	var d struct {
		PaneID      string  `json:"pane_id"`
		WorkspaceID string  `json:"workspace_id"`
		AgentStatus string  `json:"agent_status"`
		Agent       *string `json:"agent"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil {
		return Event{}, fmt.Errorf("%w: event data: %v", errGarbage, err)
	}
	ev := Event{Name: *env.Event, PaneID: d.PaneID, WorkspaceID: d.WorkspaceID, AgentStatus: d.AgentStatus, Data: env.Data}
	if d.Agent != nil {
		ev.Agent = *d.Agent
	}
	return ev, nil
}

// eventsLost reads an events_lost line's data: an object, maybe with a
// count under one of the names a count might have; anything else counts
// as an object without one.
func eventsLost(data json.RawMessage) Event {
	ev := Event{Name: EventsLost, Data: json.RawMessage(`{}`)}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return ev
	}
	ev.Data = data
	for _, k := range []string{"dropped", "lost", "count"} {
		var n uint64
		if json.Unmarshal(m[k], &n) == nil && n > 0 {
			ev.Dropped = int(min(n, 1<<31-1))
			break
		}
	}
	return ev
}

// Watcher follows Herdr's event stream for a set of subscriptions, across
// disconnects: the stream ends on a live handoff or a restart and must be
// opened again (§5.1, §9.1).
type Watcher struct {
	Client        *Client
	Subscriptions []Subscription
	// Logf receives one line per kind of failure. Nil discards.
	Logf func(format string, args ...any)
	// OnConnect, when set, is called each time Herdr acknowledges the
	// subscription; reconnect is false the first time. Unless OnLost is
	// set, it is called with true again when Herdr says it dropped events
	// for this stream (events_lost, protocol 22). Either way events were
	// missed: those of
	// per-pane subscriptions while disconnected always, generic ones too
	// from protocol 22 on (a subscription starts at the live edge, nothing
	// is replayed), so a caller re-reads what it needs (PaneGet) here and
	// never counts on a replay.
	OnConnect func(reconnect bool)
	// OnLost, when set, is called instead when Herdr dropped events for
	// this stream, for a caller that tells the two apart.
	OnLost func()
	// OnDown, when set, is called with the error each time the stream
	// could not be opened, or broke, before the wait to try again: Herdr
	// is away (not started yet, restarting, hung) until OnConnect.
	OnDown func(err error)
	// BackoffMin and BackoffMax bound the wait between reconnects.
	// Defaults 100 ms and 5 s.
	BackoffMin, BackoffMax time.Duration
}

// lostKind keys the one log line about events_lost.
const lostKind FailureKind = "events-lost"

func droppedWords(n int) string {
	switch n {
	case 0:
		return "events"
	case 1:
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// subscribeDeadline bounds connecting and getting the acknowledgement.
const subscribeDeadline = 2 * time.Second

// Run follows the stream and calls handle for each event, once: generic
// events that Herdr replays on every subscribe (§5.4) are dropped when
// already delivered, and a pane.agent_status_changed equal to the last one
// delivered for its pane is dropped. Run returns when ctx ends (ctx's
// error) or when Herdr rejects the subscription itself (a *Error, e.g.
// pane_not_found for a pane that is gone). handle runs on Run's goroutine.
func (w *Watcher) Run(ctx context.Context, handle func(Event)) error {
	minB, maxB := w.BackoffMin, w.BackoffMax
	if minB <= 0 {
		minB = 100 * time.Millisecond
	}
	if maxB < minB {
		maxB = max(5*time.Second, minB)
	}
	d := newDeduper()
	logged := map[FailureKind]bool{}
	backoff := minB
	connects := 0
	for {
		started := time.Now()
		err := w.stream(ctx, func() {
			if w.OnConnect != nil {
				w.OnConnect(connects > 0)
			}
			connects++
		}, func(ev Event) {
			if ev.Name == EventsLost {
				if !logged[lostKind] && w.Logf != nil {
					logged[lostKind] = true
					w.Logf("herdr: event stream: Herdr dropped %s for a slow reader (re-reading; further losses are not logged)", droppedWords(ev.Dropped))
				}
				switch {
				case w.OnLost != nil:
					w.OnLost()
				case w.OnConnect != nil:
					w.OnConnect(true)
				}
				return
			}
			if d.fresh(ev) {
				handle(ev)
			}
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			// The dialer times out at the deadline itself, a moment before
			// the context's timer marks it done: that is our end, not a
			// failure of Herdr's.
			<-ctx.Done()
			return ctx.Err()
		}
		var he *Error
		if errors.As(err, &he) {
			return err
		}
		if w.OnDown != nil {
			w.OnDown(err)
		}
		if k := KindOf(err); !logged[k] && w.Logf != nil {
			logged[k] = true
			w.Logf("herdr: event stream: %v (reconnecting; further failures of this kind are not logged)", err)
		}
		if time.Since(started) > maxB {
			backoff = minB // it ran for a while: a fresh failure
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, maxB)
	}
}

// stream runs one subscription connection until it ends.
func (w *Watcher) stream(ctx context.Context, acked func(), handle func(Event)) error {
	c := w.Client
	const method = "events.subscribe"
	fail := func(kind FailureKind, err error) error {
		if errors.Is(err, errGarbage) {
			kind = FailGarbage
		}
		return &TransportError{Kind: kind, Socket: c.Socket, Method: method, After: subscribeDeadline, Err: err}
	}
	id := newID()
	line, err := json.Marshal(request{ID: id, Method: method, Params: map[string]any{"subscriptions": w.Subscriptions}})
	if err != nil {
		return fmt.Errorf("herdr: encode %s: %w", method, err)
	}
	dctx, cancel := context.WithTimeout(ctx, subscribeDeadline)
	defer cancel()
	conn, err := c.dial(dctx)
	if err != nil {
		return fail(c.dialKind(err), err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(subscribeDeadline))
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fail(FailClosed, err)
	}
	br := bufio.NewReader(conn)
	first, err := readLine(br, maxReplyBytes)
	if err != nil {
		return fail(streamKind(err), err)
	}
	r, err := parseReply(first)
	if err != nil {
		return fail(FailGarbage, err)
	}
	if r.Err != nil {
		// A rejected subscription entry comes back under a derived probe id
		// (§5.1), so any id is accepted with an error.
		r.Err.Method, r.Err.Socket = method, c.Socket
		return r.Err
	}
	if r.ID != id || r.ResultType != "subscription_started" {
		return fail(FailGarbage, fmt.Errorf("acknowledgement %q with id %q, want subscription_started with id %q", r.ResultType, r.ID, id))
	}
	_ = conn.SetDeadline(time.Time{})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	acked()
	for {
		l, err := readLine(br, maxReplyBytes)
		if err != nil {
			return fail(streamKind(err), err)
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		ev, err := parseEvent(l)
		if err != nil {
			return fail(FailGarbage, err)
		}
		handle(ev)
	}
}

func streamKind(err error) FailureKind {
	switch {
	case errors.Is(err, errLineTooLong):
		return FailGarbage
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return FailTimeout
	}
	return FailClosed
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// dedupMemory bounds how many generic events a Watcher remembers.
const dedupMemory = 4096

// deduper drops events already delivered. Generic events carry no sequence
// number, so identity is the event name plus its data in canonical form.
type deduper struct {
	seen   map[string]bool
	order  []string
	status map[string]string // pane id → last delivered status event
}

func newDeduper() *deduper {
	return &deduper{seen: map[string]bool{}, status: map[string]string{}}
}

func (d *deduper) fresh(ev Event) bool {
	key := ev.Name + " " + canonical(ev.Data)
	if ev.Name == "pane.agent_status_changed" {
		if d.status[ev.PaneID] == key {
			return false
		}
		d.status[ev.PaneID] = key
		return true
	}
	if d.seen[key] {
		return false
	}
	d.seen[key] = true
	d.order = append(d.order, key)
	if len(d.order) > dedupMemory {
		delete(d.seen, d.order[0])
		d.order = d.order[1:]
	}
	return true
}

// canonical re-encodes JSON with sorted keys, so equal data compares equal
// however the server ordered it.
func canonical(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}
