package commands

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// sentinelReason is the one reason the :input_needed: marker opens.
var sentinelReason = state.Reason{Key: "sentinel", Kind: state.KindSentinel}

// announcer is the part of the Notifier the signal glue needs: pi-ask
// flows and permission prompts are announced one by one (as the seed
// extension does), and resolved so the same id may be announced again.
type announcer interface {
	Notify(notify.Event)
	Resolved(notify.Event)
}

// agentSignals translates what the agent's side says — the probe's events
// (control.EventSink), `herdr-pi waiting` and `status` (control.Requests)
// and the session file (session.Sink) — into the state machine's inputs.
// It decides nothing itself: counting and correlation only. Control calls
// it one at a time; the session watcher calls from its own goroutine, so
// its bookkeeping sits behind mu.
type agentSignals struct {
	m       *state.Machine
	notes   announcer // nil: no notifications
	agent   string
	logf    func(string, ...any)
	watcher *session.Watcher // nil without a Pi session to follow
	// herdrHealth says how Herdr takes the reports (nil: not in Herdr).
	herdrHealth func() string

	childPID atomic.Int64

	mu sync.Mutex
	// settles is false for a Pi without agent_settled (0.73.1): its
	// agent_end is the end of the run.
	settles      bool
	sessionFile  string
	perms        permissions.Tracker
	herdrBlocked []string // open herdr:blocked reasons, oldest first
	uiPrompts    []string
	seq          int
}

func (a *agentSignals) setWatcher(w *session.Watcher) {
	a.mu.Lock()
	a.watcher = w
	a.mu.Unlock()
}

func (a *agentSignals) next(prefix string) string {
	a.seq++
	return fmt.Sprintf("%s#%d", prefix, a.seq)
}

// ProbeEvent implements control.EventSink.
func (a *agentSignals) ProbeEvent(ev control.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch e := ev.(type) {
	case control.ProbeConnected:
		a.m.ProbeConnected(true)
	case control.ProbeDisconnected:
		// Pi is gone or lost its socket: nothing it opened can be closed by
		// it any more. The sentinel stays (the session file says it).
		a.m.ProbeConnected(false)
		a.forgetProbeReasons()
	case control.SessionStart:
		a.settles = !e.ModeInferred // Pi 0.73.1: no ctx.mode, no agent_settled
		a.sessionFile = e.SessionFile
		a.resetBookkeeping()
		var restore []state.Reason
		if e.InputNeeded {
			restore = append(restore, sentinelReason)
		}
		a.m.SessionStart(restore...)
		if a.watcher != nil && e.SessionFile != "" {
			a.watcher.Follow(e.SessionFile)
		}
	case control.SessionShutdown:
		a.resetBookkeeping()
		a.m.SessionShutdown()
	case control.AgentStart:
		a.m.AgentStart()
	case control.AgentEnd:
		a.m.AgentEnd(e.StopReason)
		if a.watcher != nil {
			a.watcher.Poke()
		}
		if !a.settles {
			a.settle(e.InputNeeded)
		}
	case control.AgentSettled:
		a.settle(e.InputNeeded)
	case control.UIPromptStart:
		key := a.next("ui_prompt")
		a.uiPrompts = append(a.uiPrompts, key)
		a.open(state.Reason{Key: key, Kind: state.KindUIPrompt, Label: "waiting for your answer"})
	case control.UIPromptEnd:
		if n := len(a.uiPrompts); n > 0 {
			a.m.Close(a.uiPrompts[n-1])
			a.uiPrompts = a.uiPrompts[:n-1]
		}
	case control.WaitingForInput:
		key := "wait:" + e.Key()
		if e.Waiting {
			a.open(state.Reason{Key: key, Kind: state.KindWait, Label: state.SentinelMessage})
		} else {
			a.m.Close(key)
		}
	case control.HerdrBlocked:
		// Herdr's own consumer counts: each active opens one, anything else
		// closes one (notifications-and-sentinel.md §8, §21).
		if e.Active {
			key := a.next("herdr:blocked")
			a.herdrBlocked = append(a.herdrBlocked, key)
			a.open(state.Reason{Key: key, Kind: state.KindHerdrBlocked, Label: e.Label})
		} else if n := len(a.herdrBlocked); n > 0 {
			a.m.Close(a.herdrBlocked[n-1])
			a.herdrBlocked = a.herdrBlocked[:n-1]
		}
	case control.AskStarted:
		key := "ask:" + e.FlowID
		a.announce(notify.Event{Kind: notify.AskStarted, Key: key})
		a.open(state.Reason{Key: key, Kind: state.KindAsk, Label: e.Label()})
	case control.AskCompleted:
		key := "ask:" + e.FlowID
		a.m.Close(key)
		a.resolve(notify.Event{Kind: notify.AskStarted, Key: key})
	case control.PermissionPrompt:
		if a.perms.Track(e.Prompt) {
			key := "permission:" + e.RequestID
			a.announce(notify.Event{Kind: notify.PermissionNeeded, Key: key})
			a.open(state.Reason{Key: key, Kind: state.KindPermission, Label: e.Label()})
		}
	case control.PermissionDecision:
		if id, ok := a.perms.ResolveDecision(e.Decision); ok {
			a.closePermission(id)
		}
	case control.PermissionForwarded:
		if id, ok := a.perms.ResolveForwarded(e.ForwardedDecision); ok {
			a.closePermission(id)
		}
	}
}

// settle ends a run; a reply that asks for input opens the sentinel first,
// so the run's end already finds the agent blocked.
func (a *agentSignals) settle(inputNeeded bool) {
	if inputNeeded {
		a.open(sentinelReason)
	}
	a.m.AgentSettled()
}

func (a *agentSignals) open(r state.Reason) { a.m.Open(r) }

// announce notifies about a pi-ask flow or permission prompt that opens
// while the agent is already blocked; one that makes it blocked is
// announced by the transition (notifyStateEvent), so it is never told
// twice.
func (a *agentSignals) announce(ev notify.Event) {
	if a.notes != nil && a.m.Snapshot().State == state.Blocked {
		a.notes.Notify(ev)
	}
}

func (a *agentSignals) resolve(ev notify.Event) {
	if a.notes != nil {
		a.notes.Resolved(ev)
	}
}

func (a *agentSignals) closePermission(requestID string) {
	key := "permission:" + requestID
	a.m.Close(key)
	a.resolve(notify.Event{Kind: notify.PermissionNeeded, Key: key})
}

// forgetProbeReasons closes what only the probe could close.
func (a *agentSignals) forgetProbeReasons() {
	for _, k := range []state.Kind{state.KindWait, state.KindHerdrBlocked, state.KindAsk, state.KindPermission, state.KindUIPrompt} {
		a.m.CloseKind(k)
	}
	a.resetBookkeeping()
}

func (a *agentSignals) resetBookkeeping() {
	a.perms.Shutdown()
	a.perms = permissions.Tracker{}
	a.herdrBlocked, a.uiPrompts = nil, nil
}

// SessionSentinel implements session.Sink: the file says whether the last
// reply still waits for an answer. It agrees with the probe when both
// speak, and is the only word when Pi runs without the probe.
func (a *agentSignals) SessionSentinel(s session.Sentinel) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.File != "" && a.sessionFile == "" {
		a.sessionFile = s.File
	}
	if s.Open {
		a.open(sentinelReason)
	} else {
		a.m.Close(sentinelReason.Key)
	}
}

// Wait implements control.Requests for `herdr-pi waiting start|stop`.
func (a *agentSignals) Wait(w control.WaitRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := "hook:" + w.Key()
	if w.Action == control.WaitStart {
		label := w.Label
		if label == "" {
			label = "waiting for " + w.Source
		}
		a.open(state.Reason{Key: key, Kind: state.KindHook, Label: label})
		return nil
	}
	a.m.Close(key)
	return nil
}

// Status implements control.Requests for `herdr-pi status`.
func (a *agentSignals) Status() control.Status {
	snap := a.m.Snapshot()
	a.mu.Lock()
	file := a.sessionFile
	a.mu.Unlock()
	st := control.Status{
		Agent: a.agent, State: string(snap.State), Since: snap.Since,
		SessionFile: file, ChildPID: int(a.childPID.Load()),
		Reasons: make([]control.Reason, 0, len(snap.Reasons)),
	}
	for _, r := range snap.Reasons {
		st.Reasons = append(st.Reasons, control.Reason{Kind: statusKind(r.Kind), Key: r.Key, Label: r.Message(), Since: r.Since})
	}
	if a.herdrHealth != nil {
		st.Herdr = a.herdrHealth()
	}
	return st
}

// statusKind names reason kinds the way `herdr-pi status` documents them.
func statusKind(k state.Kind) string {
	switch k {
	case state.KindHook:
		return "wait"
	case state.KindHerdrBlocked:
		return "herdr-blocked"
	case state.KindUIPrompt:
		return "ui-prompt"
	}
	return strings.ReplaceAll(string(k), "_", "-")
}

// notifyStateEvent turns the machine's events into notifications: the
// agent turning blocked (once per blocked spell, whatever keeps it blocked),
// and a run that ended on its own, finished or failed. Aborted runs are
// silent, and a run that ends waiting for the person is told as blocked,
// not as finished.
// current is the state after e (the run-finished event follows the
// transition of the same step).
func notifyStateEvent(n announcer, current state.State, blockedSpells *int, e state.Event) {
	switch e.Kind {
	case state.EventTransition:
		if e.To != state.Blocked || e.Reason == nil {
			return
		}
		*blockedSpells++
		kind := notify.InputNeeded
		switch e.Reason.Kind {
		case state.KindPermission:
			kind = notify.PermissionNeeded
		case state.KindAsk:
			kind = notify.AskStarted
		}
		// Keyed by the reason for pi-ask and permissions (so a later
		// announce of the same id stays quiet), by the spell otherwise.
		key := fmt.Sprintf("blocked#%d", *blockedSpells)
		if kind != notify.InputNeeded {
			key = e.Reason.Key
		}
		n.Notify(notify.Event{Kind: kind, Key: key})
	case state.EventRunFinished:
		if current == state.Blocked {
			return
		}
		switch e.Outcome {
		case state.Completed:
			n.Notify(notify.Event{Kind: notify.Finished, Key: fmt.Sprintf("run@%d", e.At.UnixNano())})
		case state.Errored:
			n.Notify(notify.Event{Kind: notify.Failed, Key: fmt.Sprintf("run@%d", e.At.UnixNano())})
		}
	}
}
