package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
)

// The owner link: a workflow owner's probe (a Pi running the workflow
// engine under `herdr-pi wrap`) opens a second connection to its wrapper,
// with role "owner", once it finds the engine loaded. Both sides speak on
// it; every line is a [Message] whose ID names the handoff (or the tool
// call) and whose Data carries the payload below.
//
//	owner → wrapper  {"type":"hello","token":"…","role":"owner","pid":N,"version":2}
//	wrapper → owner  {"type":"hello","ok":true,"version":2}
//
//	owner → wrapper  engine           {registered, error, upstream, fullyInspectable}     no id
//	owner → wrapper  attempt          {runId, sessionId, sessionFile, label, …, live}     no id
//	owner → wrapper  handoff_request  id=r…  {runId, agentId, attempt, sessionId, label}  (menu: live)
//	                                         with turn true: a prompt of the attempt runs in Herdr
//	                                         (fully inspectable mode)
//	owner → wrapper  run_ended        {runId, state}: a run with such turns reached a terminal state     no id
//	owner → wrapper  inspect_request  id=r…  {runId, agentId, attempt, sessionId, …}      (menu: inspect)
//	wrapper → owner  request_refused  id=r…  {error}
//
//	wrapper → owner  handoff          id=h   {runId, sessionId, request}
//	owner → wrapper  launch           id=h   [Launch], sent only after the turn boundary,
//	                                         with the local session suspended
//	owner → wrapper  handoff_error    id=h   {code, error}: no handoff happens
//	wrapper → owner  pane_state       id=h   {state}: for the owner's status line
//	wrapper → owner  tool_call        id=c   {handoff, toolCallId, name, params}
//	owner → wrapper  tool_update      id=c   {value}            (0..n)
//	owner → wrapper  tool_result      id=c   {value}  or  tool_error id=c {error}   (exactly one)
//	wrapper → owner  tool_abort       id=c   (the tool's signal aborts; the call still ends with one result or error)
//	owner → wrapper  handoff_cancel   id=h   {reason, sessionEnding}: the owner gives up (run cancelled,
//	                                         attempt disposed, its session ending); the wrapper closes
//	                                         the pane and sends handback
//	wrapper → owner  handback         id=h   {reason, transferred, needsContinue, lastStopReason, error,
//	                                         paneRunning, leftOpen}
//	owner → wrapper  resumed          id=h   {transferred, continued, error}: the local session is back
//
// A handback may come at any point after handoff: before the turn boundary
// it withdraws the order (the owner answers resumed, transferred false).

// RoleOwner is the owner link's role in its hello.
const RoleOwner = "owner"

// OwnerVersion is the version an owner hello must carry: the owner link
// exists from version 2 of the protocol on.
const OwnerVersion = 2

// MaxOwnerLine bounds one line on the owner link, newline included. A
// launch carries whole system prompts, context files and inline extension
// sources, a tool call its arguments and result; the probe and client
// connections keep [MaxLine].
const MaxOwnerLine = 16 << 20

// Owner link message types.
const (
	TypeEngine         = "engine"
	TypeAttempt        = "attempt"
	TypeHandoffRequest = "handoff_request"
	TypeInspectRequest = "inspect_request"
	TypeRequestRefused = "request_refused"
	TypeHandoff        = "handoff"
	TypeLaunch         = "launch"
	TypeHandoffError   = "handoff_error"
	TypePaneState      = "pane_state"
	TypeToolCall       = "tool_call"
	TypeToolUpdate     = "tool_update"
	TypeToolResult     = "tool_result"
	TypeToolError      = "tool_error"
	TypeToolAbort      = "tool_abort"
	TypeHandoffCancel  = "handoff_cancel"
	TypeHandback       = "handback"
	TypeResumed        = "resumed"
	TypeRunEnded       = "run_ended"
)

// ownerTypes: which owner-link types need an id, and which direction they
// travel (true: owner → wrapper).
var ownerTypes = map[string]struct{ needsID, fromOwner bool }{
	TypeEngine:         {false, true},
	TypeAttempt:        {false, true},
	TypeHandoffRequest: {true, true},
	TypeInspectRequest: {true, true},
	TypeRequestRefused: {true, false},
	TypeHandoff:        {true, false},
	TypeLaunch:         {true, true},
	TypeHandoffError:   {true, true},
	TypePaneState:      {true, false},
	TypeToolCall:       {true, false},
	TypeToolUpdate:     {true, true},
	TypeToolResult:     {true, true},
	TypeToolError:      {true, true},
	TypeToolAbort:      {true, false},
	TypeHandoffCancel:  {true, true},
	TypeHandback:       {true, false},
	TypeResumed:        {true, true},
	TypeRunEnded:       {false, true},
}

// OwnerMessage is one decoded owner → wrapper message. The concrete types
// below are the whole set.
type OwnerMessage interface{ ownerType() string }

// EngineStatus says whether herdr-pi's actions and setup hook are
// registered with the workflow engine in the owner, and who owns workflow
// panes there.
type EngineStatus struct {
	Registered bool `json:"registered"`
	// Error says why not (the registry was frozen before the probe could
	// register: the probe loaded too late).
	Error string `json:"error,omitempty"`
	// Upstream is true when the engine's own Herdr extension (@piewf/herdr)
	// is loaded too; Hidden lists what of it the probe hid (its attempt
	// actions) so one set of actions is shown.
	Upstream bool     `json:"upstream"`
	Hidden   []string `json:"hidden,omitempty"`
	// FullyInspectable is the engine's fully inspectable mode setting as
	// the probe read it when it registered. Only the probe's own actions
	// go by it: the wrapper places a handoff by the settings file as it
	// is at the handoff.
	FullyInspectable bool `json:"fullyInspectable"`
}

// Attempt announces a live agent attempt in the owner (Live true, when its
// session is created) and its end (Live false, when the engine disposes
// it). Only live attempts can be handed off.
type Attempt struct {
	RunID       string `json:"runId"`
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile,omitempty"`
	Workflow    string `json:"workflow,omitempty"`
	Label       string `json:"label,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	Live        bool   `json:"live"`
}

// HandoffRequest: the person chose "Open live session in Herdr pane" in the
// owner's /workflow menu. The wrapper answers with a handoff order (or
// request_refused); the ID is the request's, not the handoff's.
type HandoffRequest struct {
	ID        string `json:"-"`
	RunID     string `json:"runId"`
	AgentID   string `json:"agentId,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	SessionID string `json:"sessionId"`
	Label     string `json:"label,omitempty"`
	// Standalone is true for a standalone subagent (no run).
	Standalone bool `json:"standalone,omitempty"`
	// Turn is true when no person asked: in the engine's fully inspectable
	// mode the owner hands each prompt of the attempt to Herdr as it comes
	// (the launch carries the prompt). Its pane goes to the run's
	// workspace, and the workspace is closed when the run ends.
	Turn bool `json:"turn,omitempty"`
}

// RunEnded: a run whose turns ran in Herdr (HandoffRequest.Turn) reached a
// terminal state; what was opened for it can close.
type RunEnded struct {
	RunID string `json:"runId"`
	State string `json:"state,omitempty"`
}

// InspectRequest: the person chose "Open session in Herdr pane" for a
// settled attempt. The wrapper opens it for inspection (or refuses).
type InspectRequest struct {
	ID          string `json:"-"`
	RunID       string `json:"runId"`
	AgentID     string `json:"agentId,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile,omitempty"`
	// Cwd is the first existing directory of the attempt's and the run's.
	Cwd        string `json:"cwd,omitempty"`
	Standalone bool   `json:"standalone,omitempty"`
}

// HandoffOrder (wrapper → owner): hand off the live attempt whose session
// is SessionID at its next turn boundary. Request, when set, is the id of
// the owner's handoff_request this answers.
type HandoffOrder struct {
	ID        string `json:"-"`
	RunID     string `json:"runId"`
	SessionID string `json:"sessionId"`
	Request   string `json:"request,omitempty"`
}

// Launch is the prepared launch of a handed-off attempt, as data: the
// wrapper writes Files (0600, in its private directory), puts their paths
// where Argv names them, starts Argv in Cwd with Env added, and bridges
// Tools. The owner's local session is suspended when it arrives.
type Launch struct {
	ID        string `json:"-"`
	RunID     string `json:"runId"`
	SessionID string `json:"sessionId"`
	// SessionFile is the attempt's transcript; the pane continues it.
	SessionFile string `json:"sessionFile"`
	Workflow    string `json:"workflow,omitempty"`
	// Label names the agent for people ("reviewer"); SessionLabel is the
	// engine's ("flow:reviewer:attempt-1").
	Label        string `json:"label"`
	SessionLabel string `json:"sessionLabel,omitempty"`
	Attempt      int    `json:"attempt,omitempty"`
	// TUIIndex is the agent's number in the run's dashboard (0: unknown).
	TUIIndex int `json:"tuiIndex,omitempty"`
	// Breadcrumb is the attempt's place in the run when TUIIndex is
	// unknown ("review > nested > reviewLoop > function:agent/foo #3"):
	// the label of its tab in fully inspectable mode.
	Breadcrumb string `json:"breadcrumb,omitempty"`
	// Model is provider/model[:thinking]; Tools the names the pane's Pi is
	// allowed (built-in and bridged).
	Model      string   `json:"model"`
	ToolNames  []string `json:"toolNames"`
	Executable string   `json:"executable"`
	// Entrypoint is the Pi CLI script Executable runs (empty for a single
	// binary).
	Entrypoint string `json:"entrypoint,omitempty"`
	// Argv is the whole command, Executable first.
	Argv  []Arg             `json:"argv"`
	Env   map[string]string `json:"env,omitempty"`
	Cwd   string            `json:"cwd"`
	Files []LaunchFile      `json:"files,omitempty"`
	// Tools are the custom and structured-result tools the pane reaches
	// through the tool bridge (bridge/tools.Spec has the same JSON shape).
	Tools []ToolSpec `json:"tools,omitempty"`
	// NeedsContinue is true when the local turn was cut mid-task (its last
	// reply ended on a tool call or was aborted): Argv then ends with a
	// message telling the pane's Pi to continue. LastStopReason is that
	// reply's stop reason.
	NeedsContinue  bool   `json:"needsContinue"`
	LastStopReason string `json:"lastStopReason,omitempty"`
	// Notes say what the launch leaves out and why (the engine's tool
	// timing when the probe could not locate the engine), for the
	// wrapper's log: nothing in them stops a handoff.
	Notes []string `json:"notes,omitempty"`
}

// LaunchFile is a file the launch needs, by content.
type LaunchFile struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// Arg is one word of a launch's command line: literal Text, or the path of
// one of the launch's Files (with Prefix before it, as in Pi's @file), or
// the path of the tool bridge's client extension, which only the wrapper
// can write.
type Arg struct {
	Text       string
	File       string
	Prefix     string
	ToolBridge bool
}

// MarshalJSON: a string for text, else {"file":…,"prefix":…} or
// {"toolBridge":true}.
func (a Arg) MarshalJSON() ([]byte, error) {
	switch {
	case a.ToolBridge:
		return []byte(`{"toolBridge":true}`), nil
	case a.File != "":
		return json.Marshal(struct {
			File   string `json:"file"`
			Prefix string `json:"prefix,omitempty"`
		}{a.File, a.Prefix})
	}
	return json.Marshal(a.Text)
}

// UnmarshalJSON accepts exactly the shapes MarshalJSON writes.
func (a *Arg) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*a = Arg{}
		return json.Unmarshal(b, &a.Text)
	}
	var o struct {
		File       *string `json:"file"`
		Prefix     string  `json:"prefix"`
		ToolBridge bool    `json:"toolBridge"`
	}
	if err := strictUnmarshal(b, &o); err != nil {
		return fmt.Errorf("argument: %w", err)
	}
	switch {
	case o.ToolBridge && o.File == nil && o.Prefix == "":
		*a = Arg{ToolBridge: true}
	case o.File != nil && !o.ToolBridge && *o.File != "":
		*a = Arg{File: *o.File, Prefix: o.Prefix}
	default:
		return errors.New(`argument: want a string, {"file":…} or {"toolBridge":true}`)
	}
	return nil
}

// ToolSpec describes one bridged tool to the pane's Pi: the data fields of
// Pi's tool definition (its functions stay in the owner).
type ToolSpec struct {
	Name             string          `json:"name"`
	Label            string          `json:"label,omitempty"`
	Description      string          `json:"description"`
	PromptSnippet    string          `json:"promptSnippet,omitempty"`
	PromptGuidelines []string        `json:"promptGuidelines,omitempty"`
	Parameters       json.RawMessage `json:"parameters,omitempty"`
	RenderShell      string          `json:"renderShell,omitempty"`
	ExecutionMode    string          `json:"executionMode,omitempty"`
}

// HandoffError: the owner could not (or will not) hand the attempt off;
// nothing was suspended or it was resumed already.
type HandoffError struct {
	ID string `json:"-"`
	// Code is one of the HandoffErr* codes.
	Code  string `json:"code"`
	Error string `json:"error"`
}

// Handoff error codes.
const (
	HandoffErrNotLive         = "not_live"         // no live attempt with that session in this owner
	HandoffErrBusy            = "busy"             // a handoff of that attempt is under way
	HandoffErrNotTransferable = "not_transferable" // the attempt has no session file
	HandoffErrStopped         = "stopped"          // the attempt stopped before its turn ended
	HandoffErrRuntime         = "runtime"          // the owner's Pi runtime could not be found
	HandoffErrTooLarge        = "too_large"        // the launch does not fit in a line
	HandoffErrInternal        = "internal"
)

// PaneState states (wrapper → owner).
const (
	PaneLaunched = "launched"
	PaneWorking  = "working"
	PaneIdle     = "idle"
	PaneBlocked  = "blocked"
	PaneDone     = "done"
	// PaneStopping: the pane closed (or was to), but its Pi has not
	// exited yet; the wrapper stops it before it hands the session back.
	PaneStopping = "stopping"
)

// ToolCall is one bridged tool call the wrapper asks the owner to run.
type ToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Params     json.RawMessage `json:"params"`
}

// HandoffCancel: the owner gives up a handoff it has not been handed back
// (its run was cancelled, the attempt was disposed, Pi is quitting).
// SessionEnding says the owner's session is going (Pi quits, or starts
// another session), which interrupted the run: nobody will take the
// attempt back, as when the owner goes away.
type HandoffCancel struct {
	ID            string `json:"-"`
	Reason        string `json:"reason"`
	SessionEnding bool   `json:"sessionEnding,omitempty"`
}

// Handback reasons.
const (
	HandbackExited  = "exited"  // the pane's Pi exited (/quit, double Ctrl-C, crash)
	HandbackClosed  = "closed"  // the pane was closed
	HandbackIdle    = "idle"    // the pane's Pi went idle after working
	HandbackAborted = "aborted" // owner or run cancelled, or the handoff withdrawn
	HandbackFailed  = "failed"  // the launch failed; Error says why
)

// What went wrong in a handoff, for scripts: a handback's error_code
// (docs/open.md). A handback with an error carries exactly one, the
// first thing that went wrong.
const (
	CodeHerdr            = "herdr"               // Herdr refused to place the pane, or could not be reached
	CodePaneFailed       = "pane_failed"         // the pane's command failed before Pi started
	CodePaneClosed       = "pane_closed"         // the pane closed before its Pi started
	CodeStartTimeout     = "start_timeout"       // Pi did not start in the pane in time
	CodePaneStillRunning = "pane_still_running"  // the pane's Pi could not be stopped: the session is not reopened
	CodeCancelled        = "cancelled"           // the handoff was given up: by the owner, its run, the asker, close
	CodeOwnerGone        = "owner_gone"          // the owner's Pi went away: nobody has the attempt back
	CodeOwnerUnconfirmed = "owner_unconfirmed"   // the owner did not confirm it has its session back
	CodeOwnerReopen      = "owner_reopen_failed" // the owner could not reopen its session
	CodeFailed           = "failed"              // anything else; the error says what
)

// Handback returns ownership to the owner.
type Handback struct {
	Reason string `json:"reason"`
	// Transferred is true when the pane's Pi ran (ownership really moved).
	Transferred bool `json:"transferred"`
	// NeedsContinue is true when the pane's last turn was cut (aborted):
	// the owner then continues locally whatever the transcript says.
	NeedsContinue  bool   `json:"needsContinue"`
	LastStopReason string `json:"lastStopReason,omitempty"`
	Error          string `json:"error,omitempty"`
	// PaneRunning is true when the pane's Pi could not be stopped: it may
	// still write the session file, so the owner must not reopen it (the
	// attempt fails instead). Reason is then failed.
	PaneRunning bool `json:"paneRunning,omitempty"`
	// LeftOpen says what of the handoff stays open in Herdr, which would
	// not close it, and how to close it later (herdr-pi close): the
	// handback itself succeeded, so it is a note, not an Error.
	LeftOpen string `json:"leftOpen,omitempty"`
	// Code names what Error says (a Code constant), for the asker's
	// handback line; the owner is not sent it.
	Code string `json:"-"`
}

// Resumed: the owner has its local session back after a handback.
type Resumed struct {
	ID          string `json:"-"`
	Transferred bool   `json:"transferred"`
	// Continued is true when the owner prompted its local session to
	// continue (the turn was cut or ended on a tool call).
	Continued bool `json:"continued"`
	// Error is a failure to reopen the session (the attempt then fails).
	Error string `json:"error,omitempty"`
}

// ToolUpdate, ToolResult and ToolError answer a tool call.
type ToolUpdate struct {
	ID    string          `json:"-"`
	Value json.RawMessage `json:"value"`
}

// ToolResult is the one result of a tool call.
type ToolResult struct {
	ID    string          `json:"-"`
	Value json.RawMessage `json:"value"`
}

// ToolError is the one error of a tool call.
type ToolError struct {
	ID    string `json:"-"`
	Error string `json:"error"`
}

func (EngineStatus) ownerType() string   { return TypeEngine }
func (Attempt) ownerType() string        { return TypeAttempt }
func (HandoffRequest) ownerType() string { return TypeHandoffRequest }
func (InspectRequest) ownerType() string { return TypeInspectRequest }
func (Launch) ownerType() string         { return TypeLaunch }
func (HandoffError) ownerType() string   { return TypeHandoffError }
func (HandoffCancel) ownerType() string  { return TypeHandoffCancel }
func (Resumed) ownerType() string        { return TypeResumed }
func (ToolUpdate) ownerType() string     { return TypeToolUpdate }
func (ToolResult) ownerType() string     { return TypeToolResult }
func (ToolError) ownerType() string      { return TypeToolError }
func (RunEnded) ownerType() string       { return TypeRunEnded }

// Limits of owner-link fields.
const (
	maxLabel     = 200
	maxPath      = 4096
	maxFileName  = 64
	maxArgs      = 4096
	maxFiles     = 64
	maxNotes     = 8
	maxEnv       = 64
	maxTools     = 256
	maxToolsText = 64 << 10 // description, snippet, guidelines of one tool
)

var (
	fileNameRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	envNameRE  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ParseOwnerMessage turns one owner → wrapper line (already decoded and
// checked by [DecodeOwner]) into its typed payload, and checks the payload.
func ParseOwnerMessage(m Message) (OwnerMessage, error) {
	switch m.Type {
	case TypeEngine:
		return parseData[EngineStatus](m, func(e *EngineStatus) error {
			return checkText("error", e.Error, maxError)
		})
	case TypeAttempt:
		return parseData[Attempt](m, func(a *Attempt) error { return a.check() })
	case TypeHandoffRequest:
		return parseData[HandoffRequest](m, func(r *HandoffRequest) error {
			r.ID = m.ID
			return checkAttemptIDs(r.RunID, r.AgentID, r.SessionID, r.Label, r.Standalone)
		})
	case TypeInspectRequest:
		return parseData[InspectRequest](m, func(r *InspectRequest) error {
			r.ID = m.ID
			if err := checkAttemptIDs(r.RunID, r.AgentID, r.SessionID, "", r.Standalone); err != nil {
				return err
			}
			for _, p := range []struct{ name, v string }{{"sessionFile", r.SessionFile}, {"cwd", r.Cwd}} {
				if p.v != "" {
					if err := checkPath(p.name, p.v); err != nil {
						return err
					}
				}
			}
			return nil
		})
	case TypeLaunch:
		return parseData[Launch](m, func(l *Launch) error { l.ID = m.ID; return l.check() })
	case TypeHandoffError:
		return parseData[HandoffError](m, func(e *HandoffError) error {
			e.ID = m.ID
			if e.Code == "" || len(e.Code) > maxName || !Printable(e.Code) {
				return errors.New("handoff_error without a proper code")
			}
			return checkText("error", e.Error, maxError)
		})
	case TypeHandoffCancel:
		return parseData[HandoffCancel](m, func(c *HandoffCancel) error { c.ID = m.ID; return checkText("reason", c.Reason, maxError) })
	case TypeResumed:
		return parseData[Resumed](m, func(r *Resumed) error { r.ID = m.ID; return checkText("error", r.Error, maxError) })
	case TypeToolUpdate:
		return parseData[ToolUpdate](m, func(u *ToolUpdate) error { u.ID = m.ID; return checkValue(u.Value) })
	case TypeToolResult:
		return parseData[ToolResult](m, func(r *ToolResult) error { r.ID = m.ID; return checkValue(r.Value) })
	case TypeToolError:
		return parseData[ToolError](m, func(e *ToolError) error { e.ID = m.ID; return checkText("error", e.Error, maxError) })
	case TypeRunEnded:
		return parseData[RunEnded](m, func(e *RunEnded) error {
			if err := checkID("runId", e.RunID, true); err != nil {
				return err
			}
			return checkID("state", e.State, false)
		})
	}
	return nil, fmt.Errorf("%q is not an owner → wrapper message", Clip(m.Type))
}

func parseData[T OwnerMessage](m Message, check func(*T) error) (OwnerMessage, error) {
	var v T
	if err := strictUnmarshal(m.Data, &v); err != nil {
		return nil, fmt.Errorf("%s: bad payload: %w", m.Type, err)
	}
	if err := check(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Type, err)
	}
	return v, nil
}

// strictUnmarshal decodes one JSON object into v, refusing unknown fields
// and trailing data: both ends of the owner link ship in one binary, so a
// field one side does not know is a bug worth stopping at.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// Nothing but space may follow the value. More alone lets a stray
	// closing bracket through ({…}}}): the version check before the
	// decode, which reads with json.Unmarshal, refuses such input and so
	// said nothing, and an ask of another version was taken as this one's
	// (FuzzParseHandoffAsk).
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value, or text after it")
	}
	return nil
}

func checkText(name, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%s is longer than %d bytes", name, limit)
	}
	return nil
}

// checkID: run, agent and session ids end up in file names, logs and
// messages: short and printable.
func checkID(name, v string, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%s is empty", name)
	case len(v) > maxName || !Printable(v):
		return fmt.Errorf("%s must be at most %d printable bytes", name, maxName)
	}
	return nil
}

func checkAttemptIDs(runID, agentID, sessionID, label string, standalone bool) error {
	if err := checkID("runId", runID, !standalone); err != nil {
		return err
	}
	if err := checkID("agentId", agentID, false); err != nil {
		return err
	}
	if err := checkID("sessionId", sessionID, true); err != nil {
		return err
	}
	if len(label) > maxLabel || !PrintableLabel(label) {
		return fmt.Errorf("label must be at most %d printable bytes", maxLabel)
	}
	return nil
}

func checkPath(name, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s is empty", name)
	case len(p) > maxPath:
		return fmt.Errorf("%s is longer than %d bytes", name, maxPath)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%s contains a NUL byte", name)
	case !filepath.IsAbs(p):
		return fmt.Errorf("%s %q is not absolute", name, Clip(p))
	}
	return nil
}

func checkValue(v json.RawMessage) error {
	if len(bytes.TrimSpace(v)) == 0 {
		return errors.New("no value")
	}
	return nil
}

func (a *Attempt) check() error {
	if err := checkAttemptIDs(a.RunID, "", a.SessionID, a.Label, a.RunID == ""); err != nil {
		return err
	}
	if a.SessionFile != "" {
		if err := checkPath("sessionFile", a.SessionFile); err != nil {
			return err
		}
	}
	return checkID("workflow", a.Workflow, false)
}

// check validates everything the wrapper will turn into files, a command
// line and an environment.
func (l *Launch) check() error {
	if err := checkAttemptIDs(l.RunID, "", l.SessionID, l.Label, l.RunID == ""); err != nil {
		return err
	}
	if err := checkID("workflow", l.Workflow, false); err != nil {
		return err
	}
	if len(l.SessionLabel) > maxLabel || !PrintableLabel(l.SessionLabel) {
		return errors.New("sessionLabel is not printable")
	}
	if len(l.Breadcrumb) > maxLabel || !PrintableLabel(l.Breadcrumb) {
		return fmt.Errorf("breadcrumb must be at most %d printable bytes", maxLabel)
	}
	for _, p := range []struct{ name, v string }{{"sessionFile", l.SessionFile}, {"cwd", l.Cwd}, {"executable", l.Executable}} {
		if err := checkPath(p.name, p.v); err != nil {
			return err
		}
	}
	if l.Entrypoint != "" {
		if err := checkPath("entrypoint", l.Entrypoint); err != nil {
			return err
		}
	}
	if l.Model == "" || len(l.Model) > maxLabel || !Printable(l.Model) {
		return errors.New("model must be provider/model[:thinking]")
	}
	for _, n := range l.ToolNames {
		if err := checkID("tool name", n, true); err != nil {
			return err
		}
	}
	files := map[string]bool{}
	if len(l.Files) > maxFiles {
		return fmt.Errorf("more than %d files", maxFiles)
	}
	for _, f := range l.Files {
		if len(f.Name) > maxFileName || !fileNameRE().MatchString(f.Name) {
			return fmt.Errorf("file name %q is not a plain name ([A-Za-z0-9._-], at most %d bytes)", Clip(f.Name), maxFileName)
		}
		if files[f.Name] {
			return fmt.Errorf("file %q is listed twice", f.Name)
		}
		files[f.Name] = true
	}
	tools := map[string]bool{}
	if len(l.Tools) > maxTools {
		return fmt.Errorf("more than %d tools", maxTools)
	}
	for _, t := range l.Tools {
		if err := checkID("tool name", t.Name, true); err != nil {
			return err
		}
		if tools[t.Name] {
			return fmt.Errorf("tool %q is listed twice", t.Name)
		}
		tools[t.Name] = true
		if len(t.Description)+len(t.PromptSnippet)+len(strings.Join(t.PromptGuidelines, "")) > maxToolsText {
			return fmt.Errorf("tool %q: its texts are longer than %d bytes", t.Name, maxToolsText)
		}
		if len(t.Parameters) > 0 && !isJSONObject(t.Parameters) {
			return fmt.Errorf("tool %q: parameters must be a JSON schema object", t.Name)
		}
	}
	if len(l.Argv) == 0 || len(l.Argv) > maxArgs {
		return fmt.Errorf("argv must have 1 to %d words", maxArgs)
	}
	if l.Argv[0].Text != l.Executable {
		return errors.New("argv does not start with the executable")
	}
	bridge := 0
	used := map[string]bool{}
	for i, a := range l.Argv {
		switch {
		case a.ToolBridge:
			bridge++
		case a.File != "":
			if !files[a.File] {
				return fmt.Errorf("argv[%d] names file %q, which the launch does not carry", i, Clip(a.File))
			}
			if len(a.Prefix) > 8 || !Printable(a.Prefix) {
				return fmt.Errorf("argv[%d]: prefix %q", i, Clip(a.Prefix))
			}
			used[a.File] = true
		default:
			if strings.ContainsRune(a.Text, 0) || !utf8.ValidString(a.Text) {
				return fmt.Errorf("argv[%d] contains a NUL byte or invalid UTF-8", i)
			}
		}
	}
	if bridge > 1 || (bridge == 1) != (len(l.Tools) > 0) {
		return errors.New("argv must name the tool bridge once exactly when there are tools")
	}
	for name := range files {
		if !used[name] {
			return fmt.Errorf("file %q is not used on the command line", name)
		}
	}
	if len(l.Env) > maxEnv {
		return fmt.Errorf("more than %d environment variables", maxEnv)
	}
	if len(l.Notes) > maxNotes {
		return fmt.Errorf("more than %d notes", maxNotes)
	}
	// Notes go to a log as they are: cut and made printable, never refused.
	for i, n := range l.Notes {
		l.Notes[i] = printableLong(n)
	}
	for k, v := range l.Env {
		if !envNameRE().MatchString(k) || strings.ContainsRune(v, 0) || len(v) > maxPath {
			return fmt.Errorf("environment variable %q is not NAME=value", Clip(k))
		}
	}
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
