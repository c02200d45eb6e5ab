package control

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// Event is something the probe saw inside Pi, decoded and validated. The
// concrete types below are the whole set.
type Event interface{ EventName() string }

// Event names as they travel on the wire: Pi's own lifecycle event names,
// and the inter-extension bus channels verbatim.
const (
	EvSessionStart      = "session_start"
	EvSessionShutdown   = "session_shutdown"
	EvAgentStart        = "agent_start"
	EvAgentEnd          = "agent_end"
	EvAgentSettled      = "agent_settled"
	EvCompactionStart   = "compaction_start"
	EvCompactionEnd     = "compaction_end"
	EvSessionTree       = "session_tree"
	EvUIPromptStart     = "ui_prompt_start"
	EvUIPromptEnd       = "ui_prompt_end"
	EvWaitingForInput   = "pi:waiting-for-user-input"
	EvHerdrBlocked      = "herdr:blocked"
	EvAskStarted        = "@eko24ive/pi-ask:started"
	EvAskCompleted      = "@eko24ive/pi-ask:completed"
	EvPermissionPrompt  = "permissions:ui_prompt"
	EvPermissionDecided = "permissions:decision"
	EvPermissionForward = "permissions:forwarded_decision"
	EvChannelEventsLost = "channel_events_lost"
)

// ReasonReconnect is the reason of a session_start the probe repeats on a
// new connection (a resync), rather than one Pi started.
const ReasonReconnect = "reconnect"

// SessionStart: Pi (re)started a session: startup, /reload, /new, /resume,
// /fork. Every reason clears the probe-fed reasons (reference §18, §20),
// but a resync of the session the wrapper knows (see ReasonReconnect and
// pane/signals).
type SessionStart struct {
	Reason              string `json:"reason"`
	SessionFile         string `json:"sessionFile"`
	SessionID           string `json:"sessionId"`
	PreviousSessionFile string `json:"previousSessionFile"`
	// SessionName is the session's display name (Pi's /name; "" when it
	// has none), read afresh as each run ends too: notifications name it.
	SessionName string `json:"sessionName"`
	// Mode is ctx.mode (tui, rpc, json, print). Pi 0.73.1 has no ctx.mode:
	// the probe then infers it from hasUI and Pi's argv and sets
	// ModeInferred.
	Mode         string `json:"mode"`
	ModeInferred bool   `json:"modeInferred"`
	HasUI        bool   `json:"hasUI"`
	Cwd          string `json:"cwd"`
	// InputNeeded is the probe's own reading of the branch with the
	// sentinel rule (§16/§20). pane/session reads the same from the file;
	// this one also works with --no-session.
	InputNeeded bool `json:"inputNeeded"`
	// Question is, when InputNeeded, the line of the reply that ended with
	// the marker that asks: the last one ending in a question mark outside
	// code, else the first line of its last paragraph (raw: the consumer
	// sanitises it).
	Question string `json:"question"`
	// QuestionEntry is, when InputNeeded, the session entry id of that
	// reply ("" from a probe that does not say): another reply that asks
	// is another question, though it may ask in the same words.
	QuestionEntry string `json:"questionEntry"`
	// SessionSeq counts the sessions this Pi process started, this one
	// included (1 for the first; 0 from a probe that does not say). A
	// resync (reason reconnect) repeats it: the same number from the same
	// process means no session started or ended while the wrapper was not
	// listening, so the waits it had open still belong to this session.
	SessionSeq int `json:"sessionSeq"`
	// Running: a run of the session is under way (a resync's agent_start
	// follows). A resync says it up front so that the session repeated
	// mid-run is not taken for an idle one in between.
	Running bool `json:"running"`
	// LeafID: see [Leaf].
	LeafID Leaf `json:"leafId"`
	// LastRun is, in a resync (reason reconnect), how the session's
	// latest run ended, nil before any did: a run that ended while the
	// wrapper was not listening is told from it.
	LastRun *RunEnd `json:"lastRun"`
}

// RunEnd is how a run ended, as its agent_end and agent_settled said.
type RunEnd struct {
	StopReason          string `json:"stopReason"`
	ErrorMessage        string `json:"errorMessage"`
	Aborted             bool   `json:"aborted"`
	RetryCancelled      bool   `json:"retryCancelled"`
	CompactionCancelled bool   `json:"compactionCancelled"`
	// Ended counts the runs of the session that have ended, this one
	// included: the wrapper compares it with those it heard end.
	Ended int `json:"ended"`
	// EndedMsAgo is how long before the resync was written the run
	// ended, in milliseconds of Pi's monotonic clock (nil when the probe
	// does not say): the wrapper, which did not hear the end, counts the
	// run's length to it rather than to the probe's return.
	EndedMsAgo *float64 `json:"endedMsAgo,omitempty"`
}

// Leaf is the id of the entry this Pi's session continues from
// (ctx.sessionManager.getLeafId()): another Pi continuing the same session
// file appends from its own leaf (pi-agent.md §5.1), and the file's last
// line may be that Pi's. nil from a probe that does not say; "" for an
// empty session (Pi's null).
type Leaf *string

// AgentStart: an agent run began.
type AgentStart struct {
	// LeafID: the leaf the run starts from (see [Leaf]).
	LeafID Leaf `json:"leafId"`
}

// SessionShutdown: the session ends (quit, or before a replacement).
type SessionShutdown struct {
	Reason            string `json:"reason"`
	TargetSessionFile string `json:"targetSessionFile"`
}

// AgentEnd: an agent run ended. StopReason is the last assistant message's
// stop reason (stop, length, toolUse, error, aborted), else "".
type AgentEnd struct {
	StopReason string `json:"stopReason"`
	// ErrorMessage is, when that message failed (stop reason error),
	// what Pi said went wrong, e.g. `429: {"message":"Rate limit reached"}`
	// or "Connection error." (raw, cut to its first 2000 code units by
	// the probe: the consumer sanitises it and hides secrets).
	ErrorMessage string `json:"errorMessage"`
	// SessionName: see [SessionStart.SessionName].
	SessionName string `json:"sessionName"`
	InputNeeded bool   `json:"inputNeeded"`
	// Question: see [SessionStart.Question].
	Question string `json:"question"`
	// QuestionEntry: see [SessionStart.QuestionEntry].
	QuestionEntry string `json:"questionEntry"`
	// LeafID: see [Leaf].
	LeafID Leaf `json:"leafId"`
}

// AgentSettled: the run fully settled: no retry, compaction or queued
// message follows (Pi 1.6.0; Pi 0.73.1 has no such event).
type AgentSettled struct {
	Aborted bool `json:"aborted"`
	// RetryCancelled: the run's last reply failed and the person cancelled
	// the retry Pi had scheduled for it (Escape on "Retrying (1/3) in
	// 2s..."). Pi says neither aborted nor anything else of it: the probe
	// reads it off the session's branch.
	RetryCancelled bool `json:"retryCancelled"`
	// CompactionCancelled: the person cancelled a compaction the run made
	// (Escape on "Context overflow detected, Auto-compacting..."), which
	// ends the run with the reply before it; Pi's agent_settled says
	// aborted false.
	CompactionCancelled bool `json:"compactionCancelled"`
	// SessionName: see [SessionStart.SessionName].
	SessionName string `json:"sessionName"`
	Idle        bool   `json:"idle"`
	InputNeeded bool   `json:"inputNeeded"`
	// Question: see [SessionStart.Question].
	Question string `json:"question"`
	// QuestionEntry: see [SessionStart.QuestionEntry].
	QuestionEntry string `json:"questionEntry"`
	// LeafID: see [Leaf].
	LeafID Leaf `json:"leafId"`
}

// SessionTree: the person moved the session to another entry of its tree
// (Pi's /tree), which starts no run: a question on the branch left is no
// longer the one the session waits on.
type SessionTree struct {
	// LeafID: the leaf moved to (see [Leaf]).
	LeafID Leaf `json:"leafId"`
}

// UIPromptStart: Pi is waiting on one of its own blocking dialogs (select,
// confirm, input, editor, custom; Pi 1.6.0).
type UIPromptStart struct {
	Kind  string `json:"kind"`
	Title string `json:"title"`
}

// UIPromptEnd: that dialog closed.
type UIPromptEnd struct {
	Kind  string `json:"kind"`
	Title string `json:"title"`
}

// WaitingForInput is a valid pi:waiting-for-user-input payload (§18):
// source and id non-blank (trimmed), waiting a boolean.
type WaitingForInput struct {
	Source  string
	ID      string
	Waiting bool
}

// Key identifies the wait among all open ones: "source:id" (see [WaitKey]).
func (w WaitingForInput) Key() string { return WaitKey(w.Source, w.ID) }

// HerdrBlocked is a herdr:blocked payload as Herdr's own consumer reads it
// (§8, §21): a truthy active opens one, anything else closes one.
type HerdrBlocked struct {
	Active bool
	Label  string
}

// AskStarted: a pi-ask flow is waiting for the user (§7.1).
type AskStarted struct {
	FlowID string
	Title  string
}

// Label is the trimmed title, else "Waiting for input".
func (a AskStarted) Label() string {
	if a.Title != "" {
		return a.Title
	}
	return "Waiting for input"
}

// AskCompleted: the pi-ask flow ended.
type AskCompleted struct{ FlowID string }

// PermissionPrompt, PermissionDecision and PermissionForwarded carry the
// permission events; [permissions.Tracker] correlates them.
type PermissionPrompt struct{ permissions.Prompt }

// PermissionDecision is a permissions:decision.
type PermissionDecision struct{ permissions.Decision }

// PermissionForwarded is a permissions:forwarded_decision.
type PermissionForwarded struct{ permissions.ForwardedDecision }

// CompactionStart: Pi is about to compact the session's context (/compact,
// or on its own before or after a run): it calls the model for a summary,
// outside any run. CompactionEnd: it is over, done, failed or cancelled.
// Pi before 1.x says no end of a compaction that failed or was cancelled.
type CompactionStart struct{}

// CompactionEnd: see [CompactionStart].
type CompactionEnd struct{}

// ChannelEventsLost: the probe had to drop channel events it kept for the
// wrapper (more piled up than it keeps while the wrapper could not take
// them): the channel waits open now may have closed meanwhile. The events
// it still had follow.
type ChannelEventsLost struct {
	Dropped int `json:"dropped"`
}

// ProbeConnected and ProbeDisconnected bracket one probe connection (one Pi
// process). A disconnect without a session_shutdown means Pi died or the
// probe lost its socket: what it had opened can no longer be closed by it.
// Conn numbers the server's probe connections from 1: the probe may be
// connected again before the end of its old connection is delivered (two
// connections, two goroutines), and that end is no longer news.
//
// Dialogs says the probe reports Pi's own dialogs (UIPromptStart): Pi
// tells its extensions of them since 0.84.4. A probe in an older Pi
// cannot, and the screen must tell them.
type ProbeConnected struct {
	PID     int
	Conn    uint64
	Dialogs bool
}

// ProbeDisconnected: see [ProbeConnected].
type ProbeDisconnected struct {
	PID  int
	Conn uint64
}

func (SessionStart) EventName() string        { return EvSessionStart }
func (SessionShutdown) EventName() string     { return EvSessionShutdown }
func (AgentStart) EventName() string          { return EvAgentStart }
func (AgentEnd) EventName() string            { return EvAgentEnd }
func (AgentSettled) EventName() string        { return EvAgentSettled }
func (CompactionStart) EventName() string     { return EvCompactionStart }
func (CompactionEnd) EventName() string       { return EvCompactionEnd }
func (SessionTree) EventName() string         { return EvSessionTree }
func (UIPromptStart) EventName() string       { return EvUIPromptStart }
func (UIPromptEnd) EventName() string         { return EvUIPromptEnd }
func (WaitingForInput) EventName() string     { return EvWaitingForInput }
func (HerdrBlocked) EventName() string        { return EvHerdrBlocked }
func (AskStarted) EventName() string          { return EvAskStarted }
func (AskCompleted) EventName() string        { return EvAskCompleted }
func (PermissionPrompt) EventName() string    { return EvPermissionPrompt }
func (PermissionDecision) EventName() string  { return EvPermissionDecided }
func (PermissionForwarded) EventName() string { return EvPermissionForward }
func (ChannelEventsLost) EventName() string   { return EvChannelEventsLost }
func (ProbeConnected) EventName() string      { return "probe_connected" }
func (ProbeDisconnected) EventName() string   { return "probe_disconnected" }

// ErrIgnored marks a payload the reference says to ignore (a bus event
// with missing or malformed fields). It is not a protocol error: the
// connection stays.
var ErrIgnored = errors.New("payload ignored")

// ParseEvent turns an event line's name and data into a typed Event.
func ParseEvent(name string, data json.RawMessage) (Event, error) {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	switch name {
	case EvSessionStart:
		return lifecycle[SessionStart](data)
	case EvSessionShutdown:
		return lifecycle[SessionShutdown](data)
	case EvAgentStart:
		return lifecycle[AgentStart](data)
	case EvSessionTree:
		return lifecycle[SessionTree](data)
	case EvAgentEnd:
		return lifecycle[AgentEnd](data)
	case EvAgentSettled:
		return lifecycle[AgentSettled](data)
	case EvCompactionStart:
		return CompactionStart{}, nil
	case EvCompactionEnd:
		return CompactionEnd{}, nil
	case EvChannelEventsLost:
		return lifecycle[ChannelEventsLost](data)
	case EvUIPromptStart:
		return lifecycle[UIPromptStart](data)
	case EvUIPromptEnd:
		return lifecycle[UIPromptEnd](data)
	case EvWaitingForInput:
		w, ok := ParseWaitingForInput(data)
		if !ok {
			return nil, fmt.Errorf("%s: %w (want {source, id, waiting})", name, ErrIgnored)
		}
		return w, nil
	case EvHerdrBlocked:
		return parseHerdrBlocked(data), nil
	case EvAskStarted, EvAskCompleted:
		m, _ := anyObject(data)
		id := trimmed(m, "flowId")
		if id == "" {
			return nil, fmt.Errorf("%s: %w (no flowId)", name, ErrIgnored)
		}
		if name == EvAskCompleted {
			return AskCompleted{FlowID: id}, nil
		}
		return AskStarted{FlowID: id, Title: trimmed(m, "title")}, nil
	case EvPermissionPrompt:
		p, ok := permissions.ParsePrompt(data)
		if !ok {
			return nil, fmt.Errorf("%s: %w (no requestId)", name, ErrIgnored)
		}
		return PermissionPrompt{p}, nil
	case EvPermissionDecided:
		d, ok := permissions.ParseDecision(data)
		if !ok {
			return nil, fmt.Errorf("%s: %w (needs resolution, surface, value)", name, ErrIgnored)
		}
		return PermissionDecision{d}, nil
	case EvPermissionForward:
		d, ok := permissions.ParseForwardedDecision(data)
		if !ok {
			return nil, fmt.Errorf("%s: %w (incomplete)", name, ErrIgnored)
		}
		return PermissionForwarded{d}, nil
	}
	return nil, fmt.Errorf("unknown event %q", Clip(name))
}

// lifecycle decodes the probe's own payload shapes; null means all zero.
func lifecycle[T Event](data json.RawMessage) (Event, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: bad payload: %w", v.EventName(), err)
	}
	return v, nil
}

// ParseWaitingForInput applies the pi:waiting-for-user-input rules (§18,
// D3.1): an object whose source and id are strings that are not blank
// (kept trimmed) and whose waiting is a boolean; anything else is ignored.
func ParseWaitingForInput(data json.RawMessage) (WaitingForInput, bool) {
	m, ok := anyObject(data)
	if !ok {
		return WaitingForInput{}, false
	}
	src, ok1 := m["source"].(string)
	id, ok2 := m["id"].(string)
	waiting, ok3 := m["waiting"].(bool)
	src, id = jstext.Trim(src), jstext.Trim(id)
	if !ok1 || !ok2 || !ok3 || src == "" || id == "" {
		return WaitingForInput{}, false
	}
	return WaitingForInput{Source: src, ID: id, Waiting: waiting}, true
}

// parseHerdrBlocked reads the payload the way Herdr's managed integration
// does: JavaScript truthiness of active decides open or close, so a payload
// without active, or not an object at all, closes one.
func parseHerdrBlocked(data json.RawMessage) HerdrBlocked {
	m, _ := anyObject(data)
	b := HerdrBlocked{Active: truthy(m["active"])}
	if b.Active {
		b.Label = trimmed(m, "label")
	}
	return b
}

// truthy is JavaScript's truthiness for a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	}
	return true // objects and arrays, even empty ones
}

func anyObject(data json.RawMessage) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func trimmed(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return jstext.Trim(s)
}
