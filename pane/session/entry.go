package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Entry is the part of one session line the sentinel rule needs. Texts are
// not kept: an assistant message is reduced to whether its text ends with
// the marker, so a long session costs little memory.
type Entry struct {
	// Type is the line's type ("message", "model_change", …); the header
	// line has type "session" and is not an entry of the tree.
	Type     string
	ID       string
	ParentID string // "" for a root
	// Role, StopReason and Marker are set for type "message".
	Role       string
	StopReason string
	// Marker is true for an assistant message whose text parts, joined
	// with "\n", end with the marker line.
	Marker bool
	// Cwd is set on the header line.
	Cwd string
	// Omits is, for a context_edit that leaves an entry out of what the
	// model sees again (its replacement null), that entry's id. Pi 1.6.0
	// writes one for a failed reply it is about to retry.
	Omits string
	// Time is when Pi made the entry (its timestamp; zero when it has none
	// that parses). A copy of a session — a fork, a clone, an import —
	// keeps its entries' times, whenever the file is written.
	Time time.Time
}

// ErrNotEntry is returned for a line that is JSON but not a session line.
var ErrNotEntry = errors.New("not a session entry")

type line struct {
	Type     string      `json:"type"`
	ID       string      `json:"id"`
	ParentID *string     `json:"parentId"`
	Cwd      string      `json:"cwd"`
	Message  messageHead `json:"message"`
	// Timestamp is kept raw: a line whose time is not a string is still
	// an entry, with no time.
	Timestamp json.RawMessage `json:"timestamp"`
	// TargetID and Replacement are a context_edit's; Replacement is the
	// JSON null for an omission, nil when the line has none.
	TargetID    string          `json:"targetId"`
	Replacement json.RawMessage `json:"replacement"`
}

// messageHead is what the rules read of a line's message: its role and
// stop reason, and for an assistant reply whether its text asks. It is
// read in place, from the line: the content of any other message (a tool
// result of megabytes) is passed over, never copied.
type messageHead struct {
	Role       string
	StopReason string
	Marker     bool
}

// UnmarshalJSON never fails: a message that is not an object, or whose
// role is not a string, leaves the head empty (Role ""), and the line is
// no message entry, as before; a line of another type keeps its entry.
func (h *messageHead) UnmarshalJSON(b []byte) error {
	var head struct {
		Role       string `json:"role"`
		StopReason string `json:"stopReason"`
	}
	if json.Unmarshal(b, &head) != nil {
		*h = messageHead{}
		return nil
	}
	*h = messageHead{Role: head.Role, StopReason: head.StopReason}
	if head.Role == "assistant" {
		var body struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(b, &body) == nil {
			h.Marker = HasMarker(assistantText(body.Content))
		}
	}
	return nil
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ParseLine reads one line of a session file. Pi skips lines it cannot
// parse, and so does the caller: any error means "skip".
func ParseLine(b []byte) (Entry, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Entry{}, ErrNotEntry
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Entry{}, err
	}
	if l.Type == "" {
		return Entry{}, ErrNotEntry
	}
	e := Entry{Type: l.Type, ID: l.ID, Cwd: l.Cwd}
	if l.Type == "session" {
		return e, nil
	}
	if l.ID == "" {
		return Entry{}, ErrNotEntry
	}
	if l.ParentID != nil {
		e.ParentID = *l.ParentID
	}
	var stamp string
	if json.Unmarshal(l.Timestamp, &stamp) == nil {
		e.Time, _ = time.Parse(time.RFC3339Nano, stamp)
	}
	if l.Type == "context_edit" && string(l.Replacement) == "null" {
		e.Omits = l.TargetID
	}
	if l.Type != "message" {
		return e, nil
	}
	m := l.Message
	if m.Role == "" {
		return Entry{}, ErrNotEntry
	}
	e.Role, e.StopReason, e.Marker = m.Role, m.StopReason, m.Marker
	return e, nil
}

// assistantText joins the text parts with "\n" (§16); thinking parts and
// tool calls do not count. A plain string content is taken as it is.
func assistantText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		var pt part
		if json.Unmarshal(p, &pt) == nil && pt.Type == "text" {
			texts = append(texts, pt.Text)
		}
	}
	return strings.Join(texts, "\n")
}
