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
