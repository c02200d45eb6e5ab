package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// RunRecord is the part of a run's state.json that open needs. Every other
// field of the engine's record is ignored, so a field the engine adds or
// changes the type of cannot break decoding unless open reads it.
type RunRecord struct {
	ID           string        `json:"id"`
	WorkflowName string        `json:"workflowName"`
	Cwd          string        `json:"cwd"`       // launch cwd of the owning Pi session
	SessionID    string        `json:"sessionId"` // the owning (parent) Pi session
	State        string        `json:"state"`
	ParentRunID  string        `json:"parentRunId,omitempty"`
	Agents       []AgentRecord `json:"agents"`
	Error        *ErrorRecord  `json:"error,omitempty"`
}

// AgentRecord is one agent of a run.
type AgentRecord struct {
	// ID is "<runId>:<n>"; n counts per owning Pi process, not per run
	// (a second run of one session starts at :3), see Number.
	ID    string `json:"id"`
	Name  string `json:"name"`  // the scheduler's label
	Label string `json:"label"` // the label of the workflow call, may be absent
	State string `json:"state"`
	Role  string `json:"role,omitempty"`
	// ParentID is set for an agent started by another agent.
	ParentID  string          `json:"parentId,omitempty"`
	Model     ModelRef        `json:"model"`
	StartedAt float64         `json:"startedAt,omitempty"` // epoch ms
	Attempts  []AttemptRecord `json:"attemptDetails,omitempty"`
}

// AttemptRecord is one attempt of an agent (AgentAttemptSummary).
type AttemptRecord struct {
	N         int          `json:"attempt"` // 1-based
	Transport string       `json:"transport"`
	Session   *SessionRef  `json:"session,omitempty"`
	Setup     SetupRecord  `json:"setup"`
	Error     *ErrorRecord `json:"error,omitempty"`
}

// SessionRef names the attempt's native Pi session.
type SessionRef struct {
	Transport string `json:"transport"`
	SessionID string `json:"sessionId"`
	Locator   *struct {
		SessionFile string `json:"sessionFile"`
	} `json:"locator,omitempty"`
}

// SetupRecord is how the attempt was set up. Its tools are not read: an
// inspection gets read-only tools whatever the attempt had, and the
// recorded list includes tools of extensions an inspection does not load.
type SetupRecord struct {
	Model ModelRef `json:"model"`
	Cwd   string   `json:"cwd"`
}

// ModelRef is a provider, model and optional thinking level.
type ModelRef struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Thinking string `json:"thinking,omitempty"`
}

// String is the model as Pi's --model takes it: provider/model[:thinking],
// "" when the record names no model.
func (m ModelRef) String() string {
	if m.Provider == "" || m.Model == "" {
		return ""
	}
	s := m.Provider + "/" + m.Model
	if m.Thinking != "" {
		s += ":" + m.Thinking
	}
	return s
}

// ErrorRecord is an engine error (code and message).
type ErrorRecord struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Number is the agent's number, the n of its id "<runId>:n", or 0 when the
// id has no such suffix.
func (a *AgentRecord) Number() int {
	i := strings.LastIndexByte(a.ID, ':')
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(a.ID[i+1:])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// DisplayName is the agent's name, else its label, else its id: what a
// person types to pick it and what lists show.
func (a *AgentRecord) DisplayName() string {
	switch {
	case a.Name != "":
		return a.Name
	case a.Label != "":
		return a.Label
	}
	return a.ID
}

// Latest is the attempt with the highest number, nil when there is none.
func (a *AgentRecord) Latest() *AttemptRecord {
	var best *AttemptRecord
	for i := range a.Attempts {
		if best == nil || a.Attempts[i].N > best.N {
			best = &a.Attempts[i]
		}
	}
	return best
}

// DecodeRun decodes a state.json. Unknown fields are ignored and every
// optional field may be absent; it fails on invalid JSON, on anything but
// an object, on a field open reads having the wrong type, on a field the
// engine always writes (id, workflowName, state) being absent or empty, or
// on an attempt number that is not positive. The error says which field
// is wrong.
func DecodeRun(data []byte) (*RunRecord, error) {
	var r RunRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, describeJSONError(err)
	}
	// encoding/json takes null for an object it leaves as it was.
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, errors.New("want a JSON object, got null")
	}
	if missing := r.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("no %s (the engine always writes %s)", andList(missing), plural(missing, "it", "them"))
	}
	for i := range r.Agents {
		for _, at := range r.Agents[i].Attempts {
			if at.N <= 0 {
				return nil, fmt.Errorf("agent %s: attempt number %d is not positive", r.Agents[i].DisplayName(), at.N)
			}
		}
	}
	return &r, nil
}

// missing are the fields the engine writes in every run record (a run's
// id, workflow and state; reference/workflows-handoff.md §2.1) that r
// lacks: without them, what decoded is not a run, whatever else it holds.
func (r *RunRecord) missing() []string {
	var out []string
	for _, f := range []struct{ name, value string }{{"id", r.ID}, {"workflowName", r.WorkflowName}, {"state", r.State}} {
		if f.value == "" {
			out = append(out, f.name)
		}
	}
	return out
}

// andList joins words as a sentence does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func plural(s []string, one, many string) string {
	if len(s) == 1 {
		return one
	}
	return many
}

// describeJSONError turns encoding/json's errors into what is wrong where.
func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input":
		return errors.New("truncated JSON (unexpected end of input)")
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("want a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("field %s: want %s, got %s", typ.Field, jsonKind(typ.Type), typ.Value)
	}
	return err
}

// jsonKind names what JSON a field of Go type t holds, in JSON's words:
// the person reading the error wrote (or found) JSON, not Go.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another value"
}
