package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// The live handoff as `herdr-pi open` asks for it from another pane: one
// request on a client connection, whose answer streams until the handback.
//
//	client → server  {"type":"request","id":"1","method":"handoff","params":HandoffAsk}
//	server → client  {"type":"progress","id":"1","data":Progress}            0..n, one per change
//	server → client  {"type":"response","id":"1","ok":true,"result":Progress} the handback
//	                 or {"type":"response","id":"1","error":"…"}              nothing was handed off
//	client → server  {"type":"cancel","id":"1"}                              at most once: give it up
//
// While the stream runs the client sends nothing but its cancel; closing
// the connection cancels too (the person interrupted `open`). The server
// closes the connection after the response. HandoffAsk carries its own
// version, so a wrapper and an `open` from different builds refuse each
// other in words instead of misreading a field.

// MethodHandoff asks the wrapper for a live handoff of its owner's attempt.
const MethodHandoff = "handoff"

// Stream message types.
const (
	TypeProgress = "progress"
	TypeCancel   = "cancel"
)

// HandoffVersion is the version a HandoffAsk must carry.
const HandoffVersion = 1

// HandoffAsk asks a wrapper whose Pi owns a workflow run to hand one live
// attempt of it off to a Herdr pane.
type HandoffAsk struct {
	Version   int    `json:"version"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	// OwnerPID is the pid of the run's owner lease: the wrapper checks its
	// own owner link comes from that process.
	OwnerPID int `json:"owner_pid"`
	// Hold keeps the pane across turns until it exits or is closed; by
	// default the pane hands back when it goes idle after working.
	Hold bool `json:"hold,omitempty"`
	// Place is "", "split", "tab" or "workspace" ("" lets the wrapper
	// decide: the run's workspace in fully inspectable mode, else a split
	// of the owner's pane).
	Place string `json:"place,omitempty"`
	// CallerPane and HerdrSocket are the asking `open`'s Herdr pane: the
	// pane to split when the owner's wrapper is not in Herdr itself.
	CallerPane  string `json:"caller_pane,omitempty"`
	HerdrSocket string `json:"herdr_socket,omitempty"`
	// Label says who asks, for the wrapper's log ("herdr-pi open, pid 42").
	Label string `json:"label,omitempty"`
}

// Progress events, in the order they can come.
const (
	// ProgressOrdered: the owner holds the order and hands off at the end
	// of the attempt's current turn.
	ProgressOrdered  = "ordered"
	ProgressLaunched = "launched"
	ProgressWorking  = "working"
	ProgressIdle     = "idle"
	ProgressBlocked  = "blocked"
	// ProgressHandback is the last: ownership is back with the owner.
	ProgressHandback = "handback"
	// ProgressStopping: the pane closed (or was to) but its Pi has not
	// exited yet, and the handback waits until the wrapper has stopped it
	// (terminate, then kill): two Pis never share the session file.
	ProgressStopping = "stopping"
	// ProgressFocused is the only answer when the attempt already runs in
	// a tab of its run's workspace (fully inspectable mode): that tab was
	// focused, nothing was handed off.
	ProgressFocused = "focused"
)

var progressEvents = map[string]bool{ProgressOrdered: true, ProgressLaunched: true, ProgressWorking: true,
	ProgressIdle: true, ProgressBlocked: true, ProgressHandback: true, ProgressFocused: true, ProgressStopping: true}

// Progress is one change of a live handoff, as `open --json` prints it.
type Progress struct {
	Event   string `json:"event"`
	RunID   string `json:"run,omitempty"`
	Label   string `json:"label,omitempty"`
	Handoff string `json:"handoff,omitempty"`
	// Where the pane is (from launched on).
	PaneID      string `json:"pane_id,omitempty"`
	TabID       string `json:"tab_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	// What it runs (launched): the whole command, herdr-pi wrap first, the
	// environment added to the pane's, and the directory. CommandOmitted
	// says they did not fit in a line and were left out.
	Command        []string `json:"command,omitempty"`
	Env            []string `json:"env,omitempty"`
	Cwd            string   `json:"cwd,omitempty"`
	CommandOmitted bool     `json:"command_omitted,omitempty"`
	// AgentPID is the pane's Pi (launched).
	AgentPID int `json:"agent_pid,omitempty"`
	// The handback (handback only): why, whether the pane's Pi ran, how
	// its last turn ended, whether the owner must continue, and whether it
	// did.
	Reason         string `json:"reason,omitempty"`
	Transferred    bool   `json:"transferred,omitempty"`
	LastStopReason string `json:"last_stop_reason,omitempty"`
	NeedsContinue  bool   `json:"needs_continue"`
	Continued      bool   `json:"continued,omitempty"`
	Error          string `json:"error,omitempty"`
	// ErrorCode names what Error says, for scripts (one of the Code
	// constants; docs/open.md): present exactly when Error is.
	ErrorCode string `json:"error_code,omitempty"`
	// LeftOpen (handback): what stays open in Herdr, which would not
	// close it, and how to close it later; the handback still succeeded.
	LeftOpen string `json:"left_open,omitempty"`
	// OwnerGone (handback): the workflow owner's Pi went away during the
	// handoff, so nobody took the attempt back; it will not finish.
	OwnerGone bool `json:"owner_gone,omitempty"`
	// Joined marks the first line an ask hears that joined a handoff
	// under way: not a change, but where the handoff stands — its latest
	// change, with what launched said once the pane launched, Since when
	// that change came, and AskedBy who asked for the handoff ("herdr-pi
	// open (pid 42)", "the owner's /workflow menu").
	Joined  bool      `json:"joined,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	AskedBy string    `json:"asked_by,omitempty"`
}

// Handoffs carries out `herdr-pi open`'s handoff requests. Unlike the other
// consumers its calls are not serialised: each lasts as long as its
// handoff, and runs on its own connection's goroutine. progress may be
// called from any goroutine until Handoff returns. ctx ends when the asker
// cancels or goes away; Handoff then gives the attempt back and returns.
type Handoffs interface {
	Handoff(ctx context.Context, ask HandoffAsk, progress func(Progress)) (Progress, error)
}

// ErrAskerGone is the cause of a handoff's context when its `open` cancelled
// or went away.
var ErrAskerGone = errors.New("herdr-pi open, which asked for the handoff, cancelled it or went away")

const maxPlaceWord = 16

// ParseHandoffAsk decodes and checks a handoff request's parameters. It
// never panics, whatever the bytes (FuzzParseHandoffAsk).
func ParseHandoffAsk(params []byte) (HandoffAsk, error) {
	// The version first: an ask of another version may carry fields this
	// one does not know, and its refusal must say why.
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(params, &v); err == nil && v.Version != HandoffVersion {
		way := "run herdr-pi open from the herdr-pi that started the owner"
		if v.Version > HandoffVersion {
			way = "restart the owner's Pi under the newer herdr-pi"
		}
		return HandoffAsk{}, fmt.Errorf("%w: handoff: request version %d, this wrapper speaks %d: herdr-pi open and the owner's herdr-pi wrap are different builds; %s", ErrSkew, v.Version, HandoffVersion, way)
	}
	var a HandoffAsk
	if err := strictUnmarshal(params, &a); err != nil {
		return HandoffAsk{}, fmt.Errorf("handoff: bad parameters: %w", err)
	}
	if err := checkAttemptIDs(a.RunID, "", a.SessionID, a.Label, false); err != nil {
		return HandoffAsk{}, fmt.Errorf("handoff: %w", err)
	}
	if a.OwnerPID <= 0 {
		return HandoffAsk{}, errors.New("handoff: owner_pid must be a pid")
	}
	switch a.Place {
	case "", "split", "tab", "workspace":
	default:
		return HandoffAsk{}, fmt.Errorf("handoff: place %q is none of split, tab, workspace", Clip(a.Place))
	}
	if err := checkID("caller_pane", a.CallerPane, false); err != nil {
		return HandoffAsk{}, fmt.Errorf("handoff: %w", err)
	}
	if a.HerdrSocket != "" {
		if err := checkPath("herdr_socket", a.HerdrSocket); err != nil {
			return HandoffAsk{}, fmt.Errorf("handoff: %w", err)
		}
	}
	return a, nil
}

// ParseProgress decodes and checks one progress payload (a progress line's
// data, or the final response's result). It never panics
// (FuzzParseProgress).
func ParseProgress(data []byte) (Progress, error) {
	var p Progress
	// Not strict, unlike the ask: a newer wrapper may add fields, and an
	// `open` that gave up on one would cancel the handoff it follows.
	if err := json.Unmarshal(data, &p); err != nil {
		return Progress{}, fmt.Errorf("handoff progress: %w", err)
	}
	if !progressEvents[p.Event] {
		return Progress{}, &unknownEventError{p.Event}
	}
	for _, f := range []struct{ name, v string }{{"run", p.RunID}, {"handoff", p.Handoff}, {"pane_id", p.PaneID},
		{"tab_id", p.TabID}, {"workspace_id", p.WorkspaceID}, {"reason", p.Reason}, {"last_stop_reason", p.LastStopReason}, {"error_code", p.ErrorCode}} {
		if err := checkID(f.name, f.v, false); err != nil {
			return Progress{}, fmt.Errorf("handoff progress: %w", err)
		}
	}
	if len(p.Label) > maxLabel || !PrintableLabel(p.Label) {
		return Progress{}, errors.New("handoff progress: label is not printable")
	}
	if len(p.AskedBy) > maxLabel || !PrintableLabel(p.AskedBy) {
		return Progress{}, errors.New("handoff progress: asked_by is not printable")
	}
	if len(p.Error) > maxError || len(p.LeftOpen) > maxError {
		return Progress{}, errors.New("handoff progress: error text too long")
	}
	if len(p.Command) > maxArgs || len(p.Env) > maxEnv+8 {
		return Progress{}, errors.New("handoff progress: command or environment too long")
	}
	if p.Cwd != "" {
		if err := checkPath("cwd", p.Cwd); err != nil {
			return Progress{}, fmt.Errorf("handoff progress: %w", err)
		}
	}
	if p.AgentPID < 0 {
		return Progress{}, errors.New("handoff progress: negative agent_pid")
	}
	switch {
	case p.Error == "":
		p.ErrorCode = ""
	case p.ErrorCode != "":
	// A wrapper older than error_code sends none: named from what it
	// does send, so that a script always finds one with an error.
	case p.OwnerGone:
		p.ErrorCode = CodeOwnerGone
	case p.Reason == HandbackAborted:
		p.ErrorCode = CodeCancelled
	default:
		p.ErrorCode = CodeFailed
	}
	return p, nil
}

// unknownEventError is a progress event this build does not know (a
// newer wrapper's).
type unknownEventError struct{ event string }

func (e *unknownEventError) Error() string {
	return fmt.Sprintf("handoff progress: unknown event %q", Clip(e.event))
}

// streamHandoff serves one handoff request to its end: progress lines, the
// response, then the connection closes. It owns the goroutine that watches
// the client for a cancel (or its going away) and waits for it.
func (s *Server) streamHandoff(c net.Conn, read func() (Message, error), m Message, peerBuild string) {
	var wmu sync.Mutex
	emit := func(msg Message) bool {
		wmu.Lock()
		defer wmu.Unlock()
		return s.write(c, msg)
	}
	// Whole sentences: a refusal says what to do about it.
	fail := func(err error) { emit(Message{Type: TypeResponse, ID: m.ID, Error: printableLong(err.Error())}) }
	if s.cfg.Handoffs == nil {
		fail(errors.New("handoff: this wrapper takes no handoff requests (it was started without the live handoff)"))
		return
	}
	ask, err := ParseHandoffAsk(m.Params)
	if errors.Is(err, ErrSkew) {
		err = fmt.Errorf("%w (this wrapper runs herdr-pi %s, the asking open %s)", err, Clip(s.build()), strings.TrimPrefix(buildWords(peerBuild), "herdr-pi "))
	}
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	_ = c.SetReadDeadline(time.Time{})
	watched := make(chan struct{})
	// Joined by the defer below on every way out, a panic in Handoff
	// included: it must not read the connection after serve closed it.
	defer func() {
		_ = c.SetReadDeadline(time.Now()) // unblock the watcher's read
		<-watched
	}()
	go func() {
		defer close(watched)
		// A panic here loses only the watch for a cancel: the handoff
		// runs to its handback, whose reply still goes out.
		guard.Run(s.cfg.Logf, "control: a handoff's cancel watch", "a cancel from the asker is not heard; the handoff runs to its handback", func() { watchCancel(read, m.ID, cancel, s.cfg.Logf) })
	}()
	progress := func(p Progress) {
		b, err := jsonData(p)
		if err != nil {
			return
		}
		msg := Message{Type: TypeProgress, ID: m.ID, Data: b}
		if _, err := Encode(msg); errors.Is(err, ErrLineTooLong) {
			p.Command, p.Env, p.CommandOmitted = nil, nil, true
			if msg.Data, err = jsonData(p); err != nil {
				return
			}
		}
		emit(msg)
	}
	// The handoff is the wrapper's own code at work on the asker's behalf:
	// a panic in it fails this handoff with an answer the asker can show,
	// rather than a connection that just closes.
	var final Progress
	if guard.Run(s.cfg.Logf, "control: a live handoff", "this handoff fails; the wrapper goes on", func() {
		final, err = s.cfg.Handoffs.Handoff(ctx, ask, progress)
	}) {
		err = errHandoffPanicked
	}
	if err != nil {
		fail(err)
	} else if b, jerr := jsonData(final); jerr != nil {
		fail(jerr)
	} else {
		emit(Message{Type: TypeResponse, ID: m.ID, OK: true, Result: b})
	}
}

// errHandoffPanicked answers a handoff whose code panicked in the wrapper.
var errHandoffPanicked = errors.New("handoff: it failed inside the pane's herdr-pi wrapper (a bug; the panic is in the wrapper's log)")

// watchCancel reads the asker's side of a handoff stream: a cancel, any
// other line or the asker's going away cancels the handoff.
func watchCancel(read func() (Message, error), id string, cancel context.CancelCauseFunc, logf func(string, ...any)) {
	for {
		msg, err := read()
		if err != nil {
			cancel(ErrAskerGone)
			return
		}
		if msg.Type != TypeCancel || msg.ID != id {
			logf("control: a %q line during handoff %s: cancelling it", msg.Type, Clip(id))
		}
		cancel(ErrAskerGone)
	}
}

// MaxErrorText is how long a handoff's error text may be (Progress.Error
// and LeftOpen, a handback's error): ParseProgress refuses a longer one.
const MaxErrorText = maxError

// ClipText cuts text from elsewhere (a Herdr error, say) to at most n
// bytes, on a character boundary and ending in "…" when cut, and makes it
// harmless on a terminal as Clip does: what a handoff says fits its field
// (MaxErrorText), and the person still reads how it begins.
func ClipText(s string, n int) string {
	const more = "…"
	if len(s) > n {
		s = clipLong(s, max(n-len(more), 0)) + more
	}
	return strings.Map(func(r rune) rune {
		if termtext.Harmful(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// printableLong is s cut to maxError bytes with control characters
// replaced.
func printableLong(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(clipLong(s, maxError), "?"))
}

func jsonData(v any) (json.RawMessage, error) { return json.Marshal(v) }

// Handoff asks the wrapper for a live handoff and follows it: progress
// receives every change, and the handback is returned. When ctx ends first
// the handoff is cancelled (the wrapper closes the pane and gives the
// attempt back) and Handoff still waits, up to cancelGrace, for the
// handback that says so.
func (c *Client) Handoff(ctx context.Context, ask HandoffAsk, progress func(Progress)) (Progress, error) {
	ask.Version = HandoffVersion
	b, err := jsonData(ask)
	if err != nil {
		return Progress{}, err
	}
	_ = c.conn.SetDeadline(time.Time{})
	c.next++
	id := fmt.Sprintf("%d", c.next)
	if err := c.send(Message{Type: TypeRequest, ID: id, Method: MethodHandoff, Params: b}); err != nil {
		return Progress{}, err
	}
	stop, watched := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-watched }()
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			_ = c.send(Message{Type: TypeCancel, ID: id})
			_ = c.conn.SetReadDeadline(time.Now().Add(cancelGrace))
		case <-stop:
		}
	}()
	for {
		m, err := c.recv()
		if err != nil {
			if ctx.Err() != nil {
				return Progress{}, fmt.Errorf("%w (and the wrapper did not confirm the handback: %v)", context.Cause(ctx), err)
			}
			return Progress{}, err
		}
		switch {
		case m.ID != id:
			return Progress{}, fmt.Errorf("the wrapper answered request %q, not %q", Clip(m.ID), id)
		case m.Type == TypeProgress:
			p, err := ParseProgress(m.Data)
			if ue := (*unknownEventError)(nil); errors.As(err, &ue) {
				// A newer wrapper's news this build cannot word: the
				// handoff goes on (giving up would cancel it).
				continue
			}
			if err != nil {
				return Progress{}, err
			}
			if progress != nil {
				progress(p)
			}
		case m.Type == TypeResponse && !m.OK:
			return Progress{}, c.refused(m.Error)
		case m.Type == TypeError:
			return Progress{}, c.refused(m.Error)
		case m.Type == TypeResponse:
			return ParseProgress(m.Result)
		default:
			return Progress{}, fmt.Errorf("unexpected %q during a handoff", Clip(m.Type))
		}
	}
}

// cancelGrace bounds how long a cancelled handoff's asker waits for the
// wrapper's word that the pane is closed and the attempt given back.
const cancelGrace = 30 * time.Second

// Words for people: what each progress event means.
func (p Progress) String() string {
	switch p.Event {
	case ProgressOrdered:
		return "handing off at the end of its current turn"
	case ProgressLaunched:
		return "launched in pane " + p.PaneID
	case ProgressStopping:
		return stoppingWords(p)
	case ProgressHandback:
		var b strings.Builder
		if p.OwnerGone {
			// Nobody took it back: "handed back" would say otherwise.
			b.WriteString("not handed back, its owner Pi is gone: " + handbackWords(p.Reason))
		} else {
			b.WriteString("handed back: " + handbackWords(p.Reason))
		}
		if p.LastStopReason != "" {
			b.WriteString("; the last reply stopped with " + p.LastStopReason)
		}
		switch {
		case p.Continued:
			b.WriteString("; the owner continues the turn")
		case p.NeedsContinue:
			b.WriteString("; the turn was cut")
		}
		if p.Error != "" {
			b.WriteString(" (" + p.Error + ")")
		}
		if p.LeftOpen != "" {
			// A note, not a failure: the attempt is back.
			b.WriteString("; " + p.LeftOpen)
		}
		return b.String()
	}
	return p.Event
}

// stoppingWords says why a handback waits: the pane's Pi outlived its
// pane.
func stoppingWords(p Progress) string {
	pi := "its Pi"
	if p.AgentPID > 0 {
		pi = fmt.Sprintf("its Pi (pid %d)", p.AgentPID)
	}
	return fmt.Sprintf("pane %s is to close, but %s has not exited: stopping it before the session goes back to its owner", p.PaneID, pi)
}

func handbackWords(reason string) string {
	switch reason {
	case HandbackExited:
		return "the pane's Pi exited"
	case HandbackClosed:
		return "the pane was closed"
	case HandbackIdle:
		return "the pane's Pi went idle after working"
	case HandbackAborted:
		return "the handoff was given up"
	case HandbackFailed:
		return "the launch failed"
	}
	return reason
}
