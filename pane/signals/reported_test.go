package signals

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

func (r *rig) wait(t *testing.T, action, id, label string) {
	t.Helper()
	if err := r.s.Wait(control.WaitRequest{Action: action, Source: "deploy", ID: id, Label: label}); err != nil {
		t.Fatal(err)
	}
}

// A script's wait turns the pane blocked, Pi's reply then asks, and the
// script's wait ends: the pane waits on Pi's question now, and `herdr-pi
// status` says so — the message the state is reported with, and which
// reason that is — as the report to Herdr does (no new transition).
func TestStatusNamesTheReasonStillOpenWhenTheOpenerCloses(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.wait(t, control.WaitStart, "42", "approve the deploy")
	r.feed(blockedReply...)
	if s := r.s.Status(); s.Message != "approve the deploy" || len(s.Reasons) != 2 || !s.Reasons[0].Reported || s.Reasons[1].Reported {
		t.Fatalf("while the script's wait names the state: %+v", s)
	}
	r.wait(t, control.WaitStop, "42", "")
	s := r.s.Status()
	if s.State != "blocked" || s.Message != "input needed" || len(s.Reasons) != 1 || !s.Reasons[0].Reported || s.Reasons[0].Kind != "sentinel" {
		t.Fatalf("after the script's wait ended: state %s, message %q, reasons %+v; want blocked on the sentinel, %q, marked reported", s.State, s.Message, s.Reasons, "input needed")
	}
	if gt, _ := r.got(); gt != "idle blocked(approve the deploy)" {
		t.Errorf("transitions %q: the pane stayed blocked, no new transition", gt)
	}
	r.feed(control.AgentStart{})
	if s := r.s.Status(); s.Message != "" || len(s.Reasons) != 0 {
		t.Errorf("working: message %q, reasons %+v", s.Message, s.Reasons)
	}
}

// A script's wait is a new thing the person must act on: one that opens
// while the pane is blocked already (on Pi's question) is told, once, as
// a reply that asks while the pane waits on a script is. Its notification
// names its --label, as a question's names the question; one without a
// label is told without.
func TestAScriptWaitThatOpensWhileBlockedIsToldByItsLabel(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(blockedReply...)
	r.wait(t, control.WaitStart, "42", "approve the deploy")
	r.wait(t, control.WaitStart, "42", "approve the deploy") // the same wait
	r.wait(t, control.WaitStart, "7", "")
	r.expect(t, "idle working blocked(input needed)", "input-needed("+q+"),input-needed(approve the deploy),input-needed")
}

// A script's wait or another extension's herdr:blocked that turns the pane
// blocked is told by its label.
func TestAWaitThatBlocksIsToldByItsLabel(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.wait(t, control.WaitStart, "42", "approve the deploy")
	r.wait(t, control.WaitStop, "42", "")
	r.feed(control.HerdrBlocked{Active: true, Label: "approve bash"}, control.HerdrBlocked{})
	r.wait(t, control.WaitStart, "43", "")
	r.expect(t, "idle blocked(approve the deploy) idle blocked(approve bash) idle blocked(waiting for deploy)",
		"input-needed(approve the deploy),input-needed(approve bash),input-needed")
}

// `herdr-pi status` lists the open reasons by age, oldest first, also
// after a reload restores Pi's question, asked before a script's wait
// that the reload keeps; when the question is answered, the report moves
// to the wait.
func TestStatusListsTheReasonsByAgeAfterAReload(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(blockedReply...)
	r.wait(t, control.WaitStart, "42", "approve the deploy")
	r.feed(control.SessionShutdown{Reason: "reload"},
		control.SessionStart{Reason: "reload", Mode: "tui", InputNeeded: true, Question: q})
	s := r.s.Status()
	if len(s.Reasons) != 2 || s.Reasons[0].Kind != "sentinel" || !s.Reasons[0].Reported || s.Reasons[1].Kind != "wait" {
		t.Fatalf("after the reload: %+v; want the sentinel (reported), then the script's wait", s.Reasons)
	}
	r.feed(control.AgentStart{})
	if s := r.s.Status(); s.Message != "approve the deploy" || len(s.Reasons) != 1 || !s.Reasons[0].Reported {
		t.Fatalf("after the answer: message %q, reasons %+v", s.Message, s.Reasons)
	}
}

// A run that ends while the pane is blocked on something else — a
// script's wait holds it, another extension's herdr:blocked — is told as
// any run is: a failure always, a finish too. Only a run that ends asking
// (its reply's question, or the question it left open) is told as
// blocked instead; an aborted run is never told.
func TestARunThatEndsWhileBlockedOnSomethingElseIsTold(t *testing.T) {
	end := func(stop, err string, inputNeeded bool) []control.Event {
		return []control.Event{control.AgentStart{},
			control.AgentEnd{StopReason: stop, ErrorMessage: err, InputNeeded: inputNeeded, Question: q},
			control.AgentSettled{Idle: true, Aborted: stop == "aborted", InputNeeded: inputNeeded, Question: q}}
	}
	cases := []struct {
		name  string
		run   []control.Event
		notes string
	}{
		{"failed", end("error", "rate limited", false), "input-needed(approve),failed[rate limited]"},
		{"finished", end("stop", "", false), "input-needed(approve),finished"},
		{"asking", end("stop", "", true), "input-needed(approve),input-needed(" + q + ")"},
		{"aborted", end("aborted", "", false), "input-needed(approve)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			r.wait(t, control.WaitStart, "42", "approve")
			r.feed(c.run...)
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
		})
	}
}
