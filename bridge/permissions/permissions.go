// Package permissions correlates Pi permission prompts with the decisions
// that close them (reference notifications-and-sentinel.md §9): a prompt is
// opened by permissions:ui_prompt and closed by the matching
// permissions:decision (direct prompts) or permissions:forwarded_decision
// (prompts forwarded from a child session, matched by requestId).
//
// It is pure logic: it parses payloads into typed values and keeps the
// pending prompts; it neither reports nor notifies.
package permissions

import (
	"encoding/json"
	"math"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// Prompt is one permissions:ui_prompt payload.
type Prompt struct {
	RequestID string
	AgentName string
	Message   string
	Surface   string
	Value     string
	// Forwarded is true when the payload carried a forwarding object: the
	// prompt belongs to a child session and only a forwarded decision with
	// the same requestId closes it.
	Forwarded          bool
	RequesterAgentName string
	RequesterSessionID string
}

// Label is what a pane shows while this prompt is open (§7.1).
func (p Prompt) Label() string {
	if p.RequesterAgentName != "" {
		return "Permission required by " + p.RequesterAgentName
	}
	return "Permission required"
}

// Text is the notification body for this prompt (§7.1).
func (p Prompt) Text() string {
	requester := "Pi"
	if p.Forwarded && p.RequesterAgentName != "" {
		requester = "Subagent " + p.RequesterAgentName
	}
	switch {
	case p.Message != "":
		return requester + " is waiting for permission approval: " + p.Message
	case p.Surface != "" && p.Value != "":
		return requester + " is waiting for permission approval: " + p.Surface + " " + p.Value
	}
	return requester + " is waiting for permission approval."
}

// Decision is one permissions:decision payload. It carries no requestId, so
// it is matched against pending direct prompts by surface, value and agent.
type Decision struct {
	Resolution string
	Surface    string
	Value      string
	AgentName  string
}

// ForwardedDecision is one permissions:forwarded_decision payload.
type ForwardedDecision struct {
	RequestID          string
	Result             string
	Resolution         string
	ResponderSessionID string
	RespondedAt        float64
	RequesterAgentName string
	RequesterSessionID string
}

// str reads a trimmed string field; a missing, non-string or blank value is
// absent ("").
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return jstext.Trim(s)
}

func object(raw json.RawMessage) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// ParsePrompt reads a ui_prompt payload; ok is false when it has no
// requestId and must be ignored.
func ParsePrompt(raw json.RawMessage) (Prompt, bool) {
	m, ok := object(raw)
	if !ok {
		return Prompt{}, false
	}
	p := Prompt{
		RequestID: str(m, "requestId"),
		AgentName: str(m, "agentName"),
		Message:   str(m, "message"),
		Surface:   str(m, "surface"),
		Value:     str(m, "value"),
	}
	if p.RequestID == "" {
		return Prompt{}, false
	}
	if f, isObj := m["forwarding"].(map[string]any); isObj {
		p.Forwarded = true
		p.RequesterAgentName = str(f, "requesterAgentName")
		p.RequesterSessionID = str(f, "requesterSessionId")
	}
	return p, true
}

// ParseDecision reads a decision payload; ok is false unless resolution,
// surface and value are all present.
func ParseDecision(raw json.RawMessage) (Decision, bool) {
	m, ok := object(raw)
	if !ok {
		return Decision{}, false
	}
	d := Decision{
		Resolution: str(m, "resolution"),
		Surface:    str(m, "surface"),
		Value:      str(m, "value"),
		AgentName:  str(m, "agentName"),
	}
	if d.Resolution == "" || d.Surface == "" || d.Value == "" {
		return Decision{}, false
	}
	return d, true
}

// ParseForwardedDecision reads a forwarded_decision payload; ok is false
// unless every field §9 requires is there and well-formed.
func ParseForwardedDecision(raw json.RawMessage) (ForwardedDecision, bool) {
	m, ok := object(raw)
	if !ok {
		return ForwardedDecision{}, false
	}
	id, isStr := m["requestId"].(string)
	at, isNum := m["respondedAt"].(float64)
	f, isObj := m["forwarding"].(map[string]any)
	d := ForwardedDecision{
		RequestID:          jstext.Trim(id),
		Result:             str(m, "result"),
		Resolution:         str(m, "resolution"),
		ResponderSessionID: str(m, "responderSessionId"),
		RespondedAt:        at,
	}
	if !isStr || !isNum || !isObj || math.IsInf(at, 0) || math.IsNaN(at) ||
		(d.Result != "allow" && d.Result != "deny") ||
		d.Resolution == "" || d.ResponderSessionID == "" {
		return ForwardedDecision{}, false
	}
	d.RequesterAgentName = str(f, "requesterAgentName")
	d.RequesterSessionID = str(f, "requesterSessionId")
	return d, true
}

// userResolutions are the decisions a person made; policy results such as
// policy_allow never close a prompt, because no prompt was shown for them.
var userResolutions = map[string]bool{
	"user_approved":             true,
	"user_approved_for_session": true,
	"user_denied":               true,
	"confirmation_unavailable":  true,
}

// Tracker keeps the pending prompts in the order they were opened. It is
// not safe for concurrent use; its owner serialises calls.
type Tracker struct {
	pending []Prompt
	// echoes are forwarded prompts already answered whose child has yet
	// to emit its own permissions:decision (seed 003), oldest first. That
	// late decision reaches this bus too; it must not close a direct
	// prompt of the parent, which the person has not answered.
	echoes []Prompt
}

// maxEchoes bounds the answered forwarded prompts kept: a child that runs
// in another process never echoes here, and its entries must not pile up.
const maxEchoes = 16

// requester is the agent a forwarded prompt came from: the child whose
// own decision will echo it.
func (p Prompt) requester() string {
	if p.RequesterAgentName != "" {
		return p.RequesterAgentName
	}
	return p.AgentName
}

// Track opens a prompt; false when one with the same requestId is pending.
func (t *Tracker) Track(p Prompt) bool {
	for _, q := range t.pending {
		if q.RequestID == p.RequestID {
			return false
		}
	}
	t.pending = append(t.pending, p)
	return true
}

// Pending returns the open prompts in insertion order.
func (t *Tracker) Pending() []Prompt { return append([]Prompt(nil), t.pending...) }

// compatible is the matching rule of §9: absent on either side, or equal.
func compatible(a, b string) bool { return a == "" || b == "" || a == b }

// ResolveDecision closes the direct prompt a decision answers and returns
// its requestId. The first prompt whose surface, value and agent all match
// wins; when none matches but exactly one direct prompt of a compatible
// agent is pending, that one is closed, because bash prompts announce
// surface "bash" but are decided as "external_directory". Before any of
// that, a child's late echo of an answered forwarded prompt is set aside
// (see consumeEcho): the reference assumes it finds nothing to close, yet
// the fallback would close the parent's own sole prompt with it.
func (t *Tracker) ResolveDecision(d Decision) (string, bool) {
	if !userResolutions[d.Resolution] {
		return "", false
	}
	if t.consumeEcho(d) {
		return "", false
	}
	var candidates []int
	for i, p := range t.pending {
		if !p.Forwarded && compatible(p.AgentName, d.AgentName) {
			candidates = append(candidates, i)
		}
	}
	for _, i := range candidates {
		p := t.pending[i]
		if compatible(p.Surface, d.Surface) && compatible(p.Value, d.Value) {
			return t.remove(i), true
		}
	}
	if len(candidates) == 1 {
		return t.remove(candidates[0]), true
	}
	return "", false
}

// consumeEcho reports whether d is the child's own decision for a
// forwarded prompt already answered, and forgets that prompt if so. Only a
// decision naming the same agent as the child counts: the parent's own
// decisions, which name another agent or none, are never taken for an
// echo, so an echo that never comes cannot keep a parent's prompt open.
// The surface is not compared, because the child decides a bash prompt as
// external_directory; the value is.
func (t *Tracker) consumeEcho(d Decision) bool {
	if d.AgentName == "" {
		return false
	}
	for i, e := range t.echoes {
		if e.requester() == d.AgentName && compatible(e.Value, d.Value) {
			t.echoes = append(t.echoes[:i], t.echoes[i+1:]...)
			return true
		}
	}
	return false
}

// ResolveForwarded closes the forwarded prompt with the decision's
// requestId. A direct prompt is never closed this way.
func (t *Tracker) ResolveForwarded(d ForwardedDecision) (string, bool) {
	for i, p := range t.pending {
		if p.Forwarded && p.RequestID == d.RequestID {
			if p.requester() != "" {
				if len(t.echoes) == maxEchoes {
					t.echoes = t.echoes[1:]
				}
				t.echoes = append(t.echoes, p)
			}
			return t.remove(i), true
		}
	}
	return "", false
}

// Shutdown drops every pending prompt without resolving any, and forgets
// the answered ones: the session whose children would echo them is over.
func (t *Tracker) Shutdown() { t.pending, t.echoes = nil, nil }

func (t *Tracker) remove(i int) string {
	id := t.pending[i].RequestID
	t.pending = append(t.pending[:i], t.pending[i+1:]...)
	return id
}
