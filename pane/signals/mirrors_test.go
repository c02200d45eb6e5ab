package signals

import (
	"fmt"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// pi-terminal-notifications (or pi-notify), if still installed beside
// herdr-pi, mirrors each pi-ask question and permission prompt that turns
// Pi blocked on herdr:blocked, labelled as the question (seed 003,
// notifications-and-sentinel.md §8), from its own listener of the same
// event: the mirror may reach the wrapper before or after the question's
// own event. One question, one notification, in either order (the
// mirror's, when it came first: it was told as it turned the pane
// blocked) — and the next question, in the same words or not, is told.
func TestAQuestionMirroredOnHerdrBlockedIsToldOnce(t *testing.T) {
	ask := control.AskStarted{FlowID: "f1", Title: "Choose deployment"}
	ask2 := control.AskStarted{FlowID: "f2", Title: "Choose deployment"}
	prompt := parsed(t, control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "req-1", "git status"))
	mirror := func(label string) control.Event { return control.HerdrBlocked{Active: true, Label: label} }
	cases := []struct {
		name   string
		events []control.Event
		notes  string
	}{
		{"an ask, its mirror first", []control.Event{mirror("Choose deployment"), ask},
			"input-needed(Choose deployment)"},
		{"an ask, its mirror second", []control.Event{ask, mirror("Choose deployment")},
			"ask-started(Choose deployment)"},
		{"a permission prompt, its mirror first", []control.Event{mirror("Permission required"), prompt},
			"input-needed(Permission required)"},
		{"a mirrored ask, then another in the same words", []control.Event{mirror("Choose deployment"), ask, ask2},
			"input-needed(Choose deployment),ask-started(Choose deployment)"},
		{"another extension's herdr:blocked, then an ask", []control.Event{mirror("approve bash"), ask},
			"input-needed(approve bash),ask-started(Choose deployment)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			r.feed(c.events...)
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
		})
	}
}

// pi-herdr-integration, if still installed, mirrors both a reply's
// question and an extension's wait on herdr:blocked with one label,
// "input needed", and only as Pi turns blocked. Which it mirrored shows by
// what the probe hears next: the question (the sentinel) or the wait. A
// wait that opens later, under the mirrored question, is news of its own,
// told once, and its dialog is its question; under a mirrored wait, or the
// wait itself, it was told with the spell.
func TestAWaitUnderAQuestionMirroredOnHerdrBlockedIsTold(t *testing.T) {
	mirror := control.HerdrBlocked{Active: true, Label: "input needed"}
	question := []control.Event{control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q},
		mirror, control.AgentSettled{Idle: true, InputNeeded: true, Question: q}}
	plan := control.WaitingForInput{Source: "plan-md", ID: "c1", Waiting: true}
	review := control.WaitingForInput{Source: "task-subagents:launch-review", ID: "r1", Waiting: true}
	dialog := control.UIPromptStart{Kind: "select", Title: "Launch the review?"}
	cases := []struct {
		name   string
		events []control.Event
		notes  string
	}{
		{"a wait under the mirrored question", append(append([]control.Event{}, question...), review, dialog),
			"input-needed,input-needed"},
		{"a wait under a mirrored wait", []control.Event{mirror, plan, review, dialog}, "input-needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			r.feed(c.events...)
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
		})
	}
}
