package commands

import (
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// signalRig feeds agentSignals and records what reaches Herdr (the
// machine's transitions) and the person (notifications), as wrap wires
// them.
type signalRig struct {
	a *agentSignals

	mu          sync.Mutex
	transitions []string
	notes       []string
}

func (r *signalRig) Notify(ev notify.Event) {
	r.mu.Lock()
	r.notes = append(r.notes, ev.Kind.String())
	r.mu.Unlock()
}
func (r *signalRig) Resolved(ev notify.Event) {}

func newSignalRig() *signalRig {
	r := &signalRig{}
	spells := 0
	current := state.Unknown
	m := state.New(state.Config{Sink: func(e state.Event) {
		if e.Kind == state.EventTransition {
			current = e.To
			s := string(e.To)
			if e.Message != "" {
				s += "(" + e.Message + ")"
			}
			r.mu.Lock()
			r.transitions = append(r.transitions, s)
			r.mu.Unlock()
		}
		notifyStateEvent(r, current, &spells, e)
	}})
	r.a = &agentSignals{m: m, notes: r, agent: "pi"}
	return r
}

func (r *signalRig) feed(evs ...control.Event) {
	for _, e := range evs {
		r.a.ProbeEvent(e)
	}
}

func (r *signalRig) got() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.transitions, " "), strings.Join(r.notes, ",")
}

func (r *signalRig) expect(t *testing.T, transitions, notes string) {
	t.Helper()
	gt, gn := r.got()
	if gt != transitions || gn != notes {
		t.Fatalf("transitions %q, want %q\nnotifications %q, want %q", gt, transitions, gn, notes)
	}
}

func TestSentinelRunNotifiesBlockedNotFinished(t *testing.T) {
	r := newSignalRig()
	defer r.a.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true}, control.AgentSettled{Idle: true, InputNeeded: true})
	r.expect(t, "idle working blocked(input needed)", notify.InputNeeded.String())
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true})
	r.expect(t, "idle working blocked(input needed) working idle", notify.InputNeeded.String()+","+notify.Finished.String())
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "aborted"}, control.AgentSettled{Aborted: true})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{})
	_, notes := r.got()
	if !strings.HasSuffix(notes, ","+notify.Finished.String()+","+notify.Failed.String()) {
		t.Fatalf("aborted must be silent, error must notify: %q", notes)
	}
}

// Pi 0.73.1 has no agent_settled (the probe infers its mode): agent_end
// ends the run.
func TestOldPiSettlesOnAgentEnd(t *testing.T) {
	r := newSignalRig()
	defer r.a.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", ModeInferred: true},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true})
	r.expect(t, "idle working blocked(input needed)", notify.InputNeeded.String())
}

// herdr:blocked is counted as Herdr's own consumer counts it: each active
// opens one, each other payload closes one; the pane stays blocked until
// the count is back to zero.
func TestHerdrBlockedIsBalanced(t *testing.T) {
	r := newSignalRig()
	defer r.a.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"},
		control.HerdrBlocked{Active: true, Label: "approve bash"}, control.HerdrBlocked{Active: true, Label: "second"},
		control.HerdrBlocked{Active: false})
	r.expect(t, "idle blocked(approve bash)", notify.InputNeeded.String())
	r.feed(control.HerdrBlocked{Active: false}, control.HerdrBlocked{Active: false})
	r.expect(t, "idle blocked(approve bash) idle", notify.InputNeeded.String())
}

// A permission prompt blocks with its label and a permission notification;
// its decision unblocks. A prompt arriving while already blocked is
// announced once of its own.
func TestPermissionPromptsAndAsks(t *testing.T) {
	r := newSignalRig()
	defer r.a.m.Stop()
	p := permissions.Prompt{RequestID: "r1", AgentName: "Worker", Surface: "bash", Value: "git push"}
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"}, control.PermissionPrompt{Prompt: p},
		control.AskStarted{FlowID: "f1", Title: "Choose deployment"})
	_, notes := r.got()
	if notes != notify.PermissionNeeded.String()+","+notify.AskStarted.String() {
		t.Fatalf("notifications %q", notes)
	}
	r.feed(control.PermissionDecision{Decision: permissions.Decision{Resolution: "user_approved", Surface: "bash", Value: "git push", AgentName: "Worker"}})
	if s := r.a.Status(); s.State != "blocked" || len(s.Reasons) != 1 || s.Reasons[0].Kind != "pi-ask" {
		t.Fatalf("after the decision: %+v", s)
	}
	r.feed(control.AskCompleted{FlowID: "f1"})
	if s := r.a.Status(); s.State != "idle" {
		t.Fatalf("after the ask: %+v", s)
	}
}

// When Pi goes away without shutting its session down, what only it could
// close is closed; hook waits and the sentinel from the file stay.
func TestProbeDisconnectKeepsHooksAndSentinel(t *testing.T) {
	r := newSignalRig()
	defer r.a.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"},
		control.WaitingForInput{Source: "plan-md", ID: "1", Waiting: true}, control.UIPromptStart{Kind: "confirm"})
	if err := r.a.Wait(control.WaitRequest{Action: control.WaitStart, Source: "deploy", ID: "7"}); err != nil {
		t.Fatal(err)
	}
	r.a.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl"})
	r.feed(control.ProbeDisconnected{PID: 1})
	s := r.a.Status()
	var kinds []string
	for _, reason := range s.Reasons {
		kinds = append(kinds, reason.Kind)
	}
	if s.State != "blocked" || strings.Join(kinds, ",") != "wait,sentinel" || s.SessionFile != "/s.jsonl" {
		t.Fatalf("after the probe left: %+v (kinds %v)", s, kinds)
	}
	// A new Pi session keeps the hook wait too.
	r.feed(control.ProbeConnected{PID: 2}, control.SessionStart{Reason: "startup"})
	if s := r.a.Status(); len(s.Reasons) != 1 || s.Reasons[0].Key != "hook:deploy:7" {
		t.Fatalf("after a new session: %+v", s)
	}
}
