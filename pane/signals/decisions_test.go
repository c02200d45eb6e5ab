package signals

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// These pin decisions that no other test in the package could fail on
// (found by hand mutation): each names what a person would see go wrong.

// recordingWatcher stands for the session file watcher and records what it
// is asked.
type recordingWatcher struct {
	follows []string
	pokes   int
}

func (w *recordingWatcher) Follow(path string) { w.follows = append(w.follows, path) }
func (w *recordingWatcher) Poke()              { w.pokes++ }
func (w *recordingWatcher) Pin(string, bool)   {}
func (w *recordingWatcher) Unpin()             {}

// A session_shutdown without a reason (a Pi that does not say) ends the
// session as quit does: a pane blocked on a question goes idle at once,
// rather than holding the question for the replace grace.
func TestShutdownWithoutReasonEndsTheSession(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(blockedReply...)
	r.feed(control.SessionShutdown{})
	if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
		t.Fatalf("after a shutdown without a reason: %+v", s)
	}
}

// Pi 0.73.1 has no agent_settled: its agent_end ends the run, and the
// reply is in the file already, so the watcher is asked to look now (not
// at its next poll) — the same for a Pi that settles.
func TestAgentEndAsksForTheSessionFile(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	w := &recordingWatcher{}
	r.s.SetWatcher(w)
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", ModeInferred: true},
		control.AgentStart{})
	if w.pokes != 0 {
		t.Fatalf("%d looks asked for before the run ended", w.pokes)
	}
	r.feed(control.AgentEnd{StopReason: "stop"})
	if w.pokes != 1 {
		t.Fatalf("after agent_end: %d looks asked for, want 1", w.pokes)
	}
}

// A session_start names the session file to follow; one without a file
// (pi --no-session) names none, and the watcher keeps whatever it
// follows rather than being told to follow "".
func TestSessionStartFollowsOnlyANamedFile(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	w := &recordingWatcher{}
	r.s.SetWatcher(w)
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl"},
		control.SessionShutdown{Reason: "new"}, control.SessionStart{Reason: "new", Mode: "tui"})
	if !slices.Equal(w.follows, []string{"/s.jsonl"}) {
		t.Fatalf("followed %q, want only /s.jsonl", w.follows)
	}
}

// A reply that Pi aborted stays aborted in `status` even when the settle
// that follows does not repeat it (a live handoff asks whether the turn
// was cut).
func TestAbortedReplyOutlivesAQuietSettle(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.AgentStart{}, control.AgentEnd{StopReason: "aborted"}, control.AgentSettled{Idle: true})
	if st := r.s.Status(); st.LastStopReason != "aborted" || !st.LastAborted {
		t.Fatalf("after an aborted reply and a plain settle: %q aborted %v", st.LastStopReason, st.LastAborted)
	}
}

// Pi's dialogs nest: the one that ends is the newest, and the pane stays
// blocked on the one under it, listed as a ui-prompt (docs/status.md).
func TestNestedDialogsEndNewestFirst(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.UIPromptStart{Kind: "select", Title: "Pick a model"}, control.UIPromptStart{Kind: "confirm", Title: "Sure?"},
		control.UIPromptEnd{})
	s := r.s.Status()
	if s.State != "blocked" || len(s.Reasons) != 1 || s.Reasons[0].Key != "ui_prompt#1" || s.Reasons[0].Kind != "ui-prompt" {
		t.Fatalf("after the inner dialog ended: %+v", s)
	}
	r.feed(control.UIPromptEnd{})
	if s := r.s.Status(); s.State != "idle" {
		t.Fatalf("after both ended: %+v", s)
	}
}

// An ask flow is the probe's to close: when Pi goes away the pane does not
// stay blocked on it once the probe has had its time to come back
// (TestChannelWaitsSurviveAProbeReconnect).
func TestProbeDisconnectClosesAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
			control.AskStarted{FlowID: "f1", Title: "Choose deployment"}, control.ProbeDisconnected{PID: 1})
		time.Sleep(ProbeReturnGrace)
		synctest.Wait()
		if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
			t.Fatalf("after the probe left during an ask: %+v", s)
		}
	})
}

// The file said open during a run and then answered: should Pi leave
// before the run settles, the answered question is not reopened.
func TestFileAnsweredDuringARunIsNotReopenedOnDisconnect(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop"})
	r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
	r.s.SessionSentinel(session.Sentinel{Open: false, File: "/s.jsonl"})
	r.feed(control.ProbeDisconnected{PID: 1})
	if s := r.s.Status(); s.State == "blocked" {
		t.Fatalf("an answered question came back when the probe left: %+v", s)
	}
}

// `herdr-pi waiting start` without a label says who waits; `status`
// carries Herdr's health as the Presence says it.
func TestWaitDefaultLabelAndHerdrHealth(t *testing.T) {
	m := state.New(state.Config{})
	defer m.Stop()
	s := New(Config{Machine: m, Agent: "pi", HerdrHealth: func() string { return "reporting to pane p1" }})
	if err := s.Wait(control.WaitRequest{Action: control.WaitStart, Source: "deploy", ID: "7"}); err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if len(st.Reasons) != 1 || st.Reasons[0].Label != "waiting for deploy" || st.Herdr != "reporting to pane p1" {
		t.Fatalf("status: %+v", st)
	}
}
