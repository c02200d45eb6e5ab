package herdrtest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Protocol22 is the protocol of Herdr 0.9.x. A fake started with it (or
// switched to it with SetProtocol) differs from a protocol-20 one where
// ../shared/reference/landscape.md §9 says Herdr 0.9 does:
//
//   - ping's capabilities carry endpoint_protocol_generation, a number;
//   - an error answer keeps the request's id even when the request could
//     not be read (protocol 20 answers "");
//   - a new subscription starts at the live edge: nothing retained is
//     replayed;
//   - a subscriber that falls behind (LoseEvents, or the 512-event ring
//     moving past what it was still to be sent) gets events_lost in place
//     of what it missed;
//   - pane.report_agent takes resume_argv, a list of strings (AgentCall
//     records it); protocol 20 ignores the key, as it ignores every
//     unknown one;
//   - real panes get TERM_PROGRAM=herdr.
//
// What 0.9 sends for events_lost is not in the reference; the fake sends
// {"event":"events_lost","data":{"type":"events_lost","dropped":N}}.
const Protocol22 = 22

// endpointGeneration is what a protocol-22 fake says for
// capabilities.endpoint_protocol_generation (a number on Herdr 0.9.1).
const endpointGeneration = 2

// capabilities is ping's "capabilities" under the current protocol.
// Called with s.mu held.
func (s *Server) capabilities() map[string]any {
	if s.opts.Capabilities != nil {
		return s.opts.Capabilities
	}
	c := map[string]any{"live_handoff": false, "detached_server_daemon": false}
	if s.protocol >= Protocol22 {
		c["endpoint_protocol_generation"] = endpointGeneration
	}
	return c
}

// StallEvents stops delivering events to every subscriber, as to readers
// too slow to take them: they wait until LoseEvents.
func (s *Server) StallEvents() {
	s.mu.Lock()
	s.stalled = true
	s.mu.Unlock()
}

// LoseEvents imitates subscribers too slow for Herdr: whatever waits to be
// sent to them is dropped, they skip to the live edge, and delivery goes
// on (after StallEvents too). Under protocol 22 each first gets one
// events_lost line; under protocol 20 nothing says so (the ring simply
// moved on).
func (s *Server) LoseEvents() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseEventsLocked()
}

func (s *Server) loseEventsLocked() {
	s.stalled = false
	for sub := range s.subs {
		dropped := uint64(len(sub.queue)) + sub.lost
		sub.queue, sub.lost = nil, 0
		for _, e := range sub.entries {
			if !genericTypes[e.typ] {
				continue
			}
			for _, ev := range s.ring {
				if ev.seq >= e.cursor && ev.typ == e.typ {
					dropped++
				}
			}
			e.cursor = s.nextSeq + 1
		}
		if s.protocol >= Protocol22 {
			sub.queue = append(sub.queue, eventsLostLine(dropped))
		}
		sub.poke()
	}
}

// eventsLostLine is the line that tells a subscriber dropped events were
// lost to it.
func eventsLostLine(dropped uint64) outLine {
	line, _ := json.Marshal(map[string]any{"event": "events_lost",
		"data": map[string]any{"type": "events_lost", "dropped": dropped}})
	return outLine{line, kindEventsLost}
}

// kindUnchecked is the output kind of a line no schema describes.
const kindUnchecked = "unchecked"

// kindEventsLost is the output kind of an events_lost line, which the
// protocol-20 schema does not know; checkEventsLost checks its shape.
const kindEventsLost = "events_lost"

func checkEventsLost(line []byte) string {
	var ev struct {
		Event string `json:"event"`
		Data  struct {
			Type    string  `json:"type"`
			Dropped *uint64 `json:"dropped"`
		} `json:"data"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return "not JSON: " + err.Error()
	}
	if ev.Event != "events_lost" || ev.Data.Type != "events_lost" || ev.Data.Dropped == nil {
		return fmt.Sprintf("not an events_lost line: %s", line)
	}
	return ""
}

// LocalDetection imitates herdr#4020: Herdr's own detection of the agent
// labelled agent takes the pane. A custom source's report with that label
// is cleared; while status is not empty the detection holds the pane
// (it shows agent with status) and such reports are answered ok but not
// applied. An empty status clears and lets go at once: the pane shows no
// agent, as in the issue (it drops out of the sidebar).
func (s *Server) LocalDetection(paneID, agent, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pn := s.panes[paneID]
	if pn == nil {
		return
	}
	label := canonicalAgent(agent)
	before := pn.status() + "\x00" + pn.agent()
	if pn.auth != nil && !official(pn.auth.source) && pn.auth.agent == label {
		pn.auth = nil
	}
	pn.detected = nil
	if status != "" {
		pn.detected = &authority{source: "herdr:detection", agent: label, state: status}
	}
	s.changed(pn, before)
}

// EndLocalDetection lets go of a pane LocalDetection holds: it shows no
// agent until a report claims it.
func (s *Server) EndLocalDetection(paneID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pn := s.panes[paneID]
	if pn == nil || pn.detected == nil {
		return
	}
	before := pn.status() + "\x00" + pn.agent()
	pn.detected = nil
	s.changed(pn, before)
}

// heldByDetection reports whether Herdr's detection holds pn for label, so
// a custom report with it is dropped.
func (pn *pane) heldByDetection(label string) bool {
	return pn.detected != nil && pn.detected.agent == label
}

// resumeArgv reads pane.report_agent's resume_argv: a list of strings
// under protocol 22, an ignored unknown key under protocol 20. Called with
// s.mu held.
func (s *Server) resumeArgv(p *params) []string {
	if s.protocol < Protocol22 {
		return nil
	}
	return slices.Clone(p.optStrSlice("resume_argv"))
}
