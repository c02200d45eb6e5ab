package herdrtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ringSize is how many generic events Herdr's event hub retains and replays
// to a new subscription (herdr-socket-api.md §5.4).
const ringSize = 512

// genericTypes are the subscription types that take no parameters (§5.3).
var genericTypes = map[string]bool{}

func init() {
	for _, t := range []string{
		"workspace.created", "workspace.updated", "workspace.metadata_updated", "workspace.renamed",
		"workspace.moved", "workspace.reordered", "workspace.closed", "workspace.focused",
		"worktree.created", "worktree.opened", "worktree.removed",
		"tab.created", "tab.closed", "tab.focused", "tab.renamed", "tab.moved",
		"pane.created", "pane.closed", "pane.updated", "pane.focused", "pane.moved", "pane.exited",
		"pane.agent_detected", "layout.updated",
	} {
		genericTypes[t] = true
	}
}

type ringEvent struct {
	seq  uint64
	typ  string // dotted subscription type
	line []byte
}

// hub is the fake's event hub; guarded by Server.mu.
type hub struct {
	ring    []ringEvent
	nextSeq uint64
}

type subEntry struct {
	typ       string
	paneID    string
	status    string
	hasStatus bool
	cursor    uint64 // next ring seq to look at, generic entries only
}

// subscriber is one events.subscribe connection; its queue is guarded by
// Server.mu.
type subscriber struct {
	conn    net.Conn
	started bool // its acknowledgement was written: the client has it
	entries []*subEntry
	queue   []outLine
	// lost counts the events of its generic entries that the ring dropped
	// before they were sent (protocol 22 says so with events_lost).
	lost uint64
	wake chan struct{}
}

// outLine is a line to send and the schema it must satisfy.
type outLine struct {
	line []byte
	kind string // "event" or "subscription_event"
}

func (sub *subscriber) poke() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// emit publishes a generic event under its snake_case name with data.type
// set (§5.2). Called with s.mu held.
func (s *Server) emit(typ string, data map[string]any) {
	name := strings.ReplaceAll(typ, ".", "_")
	data["type"] = name
	line, err := json.Marshal(map[string]any{"event": name, "data": data})
	if err != nil {
		s.logf("emit %s: %v", typ, err)
		return
	}
	s.nextSeq++
	s.ring = append(s.ring, ringEvent{seq: s.nextSeq, typ: typ, line: line})
	if over := len(s.ring) - ringSize; over > 0 {
		s.overrun(s.ring[:over])
		s.ring = s.ring[over:]
	}
	for sub := range s.subs {
		sub.poke()
	}
}

// overrun counts, for every subscriber, the events of gone (about to
// leave the ring) that it was still to be sent: they are lost to it
// (§5.4). Protocol 20 drops them silently; its cursor simply ends up
// before the ring. Called with s.mu held.
func (s *Server) overrun(gone []ringEvent) {
	if s.protocol < Protocol22 {
		return
	}
	for sub := range s.subs {
		for _, e := range sub.entries {
			if !genericTypes[e.typ] {
				continue
			}
			for _, ev := range gone {
				if ev.seq >= e.cursor && ev.typ == e.typ {
					sub.lost++
					e.cursor = ev.seq + 1
				}
			}
		}
	}
}

// emitStatus queues pane.agent_status_changed for every subscription of the
// pane whose filter matches. Called with s.mu held.
func (s *Server) emitStatus(pn *pane) {
	line := s.statusLine(pn)
	for sub := range s.subs {
		for _, e := range sub.entries {
			if e.typ == "pane.agent_status_changed" && e.paneID == pn.id && (!e.hasStatus || e.status == pn.status()) {
				sub.queue = append(sub.queue, outLine{line, "subscription_event"})
				sub.poke()
			}
		}
	}
}

func (s *Server) statusLine(pn *pane) []byte {
	data := map[string]any{"pane_id": pn.id, "workspace_id": pn.tab.ws.id, "agent_status": pn.status()}
	if a := pn.agent(); a != "" {
		data["agent"] = a
	}
	if title := pn.title(); title != "" {
		data["title"] = title
	}
	line, _ := json.Marshal(map[string]any{"event": "pane.agent_status_changed", "data": data})
	return line
}

var paneScoped = map[string]bool{"pane.agent_status_changed": true, "pane.output_matched": true, "pane.scroll_changed": true}

// subscribe validates every entry first, then probes pane-scoped ones: an
// unknown pane answers one error under the probe id and the connection
// closes (§5.1). Called with s.mu held.
func (s *Server) subscribe(id string, p *params) (map[string]any, *apiError, *subscriber) {
	var raws []json.RawMessage
	if !p.required("subscriptions") || !p.decode("subscriptions", &raws, "a sequence") {
		return nil, nil, nil
	}
	var entries []*subEntry
	for i, raw := range raws {
		ep := newParams(raw)
		if ep.err != "" {
			p.fail("subscriptions[%d]: %s", i, ep.err)
			return nil, nil, nil
		}
		e := &subEntry{typ: ep.str("type")}
		switch {
		case ep.err != "":
		case genericTypes[e.typ]:
		case paneScoped[e.typ]:
			e.paneID = ep.str("pane_id")
			if e.typ == "pane.agent_status_changed" {
				e.status, e.hasStatus = ep.optStr("agent_status")
				ep.enum("agent_status", e.status, e.hasStatus, "idle", "working", "blocked", "done", "unknown")
			}
			if e.typ == "pane.output_matched" {
				ep.fail("pane.output_matched is not supported by herdrfake")
			}
		default:
			ep.fail("unknown variant `%s`", e.typ)
		}
		if ep.err != "" {
			p.fail("subscriptions[%d]: %s", i, ep.err)
			return nil, nil, nil
		}
		entries = append(entries, e)
	}
	for i, e := range entries {
		if e.paneID != "" && s.panes[e.paneID] == nil {
			probe := fmt.Sprintf("%s:sub:%d:probe", id, i)
			return nil, &apiError{code: "pane_not_found", message: fmt.Sprintf("pane %s not found", e.paneID), id: &probe}, nil
		}
	}
	sub := &subscriber{entries: entries, wake: make(chan struct{}, 1)}
	oldest := s.nextSeq + 1
	if len(s.ring) > 0 && s.protocol < Protocol22 {
		oldest = s.ring[0].seq // protocol 22 starts at the live edge
	}
	for _, e := range entries {
		e.cursor = oldest // protocol 20's generic subscriptions replay the retained ring
		if e.typ == "pane.agent_status_changed" && e.hasStatus {
			if pn := s.panes[e.paneID]; pn.status() == e.status {
				sub.queue = append(sub.queue, outLine{s.statusLine(pn), "subscription_event"})
			}
		}
	}
	// Registered now, under the same lock, so no status change between the
	// acknowledgement and the stream's start is missed.
	s.subs[sub] = true
	return map[string]any{"type": "subscription_started"}, nil, sub
}

// stream pushes events to one subscriber until the client disconnects or
// the fake stops. It runs on the connection's goroutine; the reader it
// starts only watches for the client going away and is waited for here.
func (s *Server) stream(c net.Conn, sub *subscriber) {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = io.Copy(io.Discard, c)
	}()
	defer func() {
		c.Close()
		<-gone
	}()
	var tick <-chan time.Time
	if !s.opts.NoEventPacing {
		t := time.NewTicker(eventTick)
		defer t.Stop()
		tick = t.C
	}
	ticked := false
	for {
		for _, l := range s.pending(sub, ticked) {
			if !s.write(c, 0, l.line, l.kind) {
				return
			}
		}
		ticked = false
		select {
		case <-sub.wake:
		case <-tick:
			ticked = true
		case <-gone:
			return
		case <-s.closing:
			return
		}
	}
}

// pending takes what a subscriber should be sent now: every queued status
// event, and generic events — all of them without pacing, at most one per
// subscription per tick with it.
func (s *Server) pending(sub *subscriber, ticked bool) []outLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled {
		return nil
	}
	out := sub.queue
	sub.queue = nil
	if sub.lost > 0 {
		out = append([]outLine{eventsLostLine(sub.lost)}, out...)
		sub.lost = 0
	}
	paced := !s.opts.NoEventPacing
	if paced && !ticked {
		return out
	}
	for _, e := range sub.entries {
		if !genericTypes[e.typ] {
			continue
		}
		for _, ev := range s.ring {
			if ev.seq < e.cursor || ev.typ != e.typ {
				continue
			}
			out = append(out, outLine{ev.line, "event"})
			e.cursor = ev.seq + 1
			if paced {
				break
			}
		}
	}
	return out
}
