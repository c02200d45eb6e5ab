package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// A real Pi 1.6.0 without the probe, blocked on a question, and an
// extension (not the person) starts a run with a message of its own: the
// session file passes over that message (only a user message answers), so
// the file still ends with the question while the run goes on. The pane
// shows the run — from Pi's status channel, or from the screen when Pi
// reports nothing — and the run's reply that asks again is a new
// question, told again. The extension's run is held at the model until
// the pane was seen working, so the order is the test, not the timing.
func TestWrapNoProbeExtensionRunAfterAQuestion(t *testing.T) {
	for _, c := range []struct {
		name, env string
	}{
		{"status channel", "PI_PROGRAM_STATUS=1"},
		{"screen", "PI_PROGRAM_STATUS=0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			const again = "Which function should I change?"
			release := make(chan struct{})
			r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
				if strings.Contains(req.LastUser(), "go on") {
					select {
					case <-release:
					case <-time.After(2 * time.Minute):
					}
					return fakellm.Reply{Text: again + "\n" + session.Marker}
				}
				return fakellm.Reply{Text: question + "\n" + session.Marker}
			}, true)
			r.answerOnceWorking()
			waiter, err := filepath.Abs("realpi/testdata/waiter.mjs")
			if err != nil {
				t.Fatal(err)
			}
			trace := filepath.Join(t.TempDir(), "trace.jsonl")
			tm := r.wrapNoProbe(trace, []string{c.env}, "-e", waiter)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("screen:\n%s\nnotifications: %+v\ntransitions: %q", tm.Screen(), r.herdr.Notifications(), transitionCauses(t, trace))
				}
			})
			r.waitTraced(trace, "the start", "unknown", "idle")
			tm.Type(t, "which file?")
			r.submitted(tm)
			r.waitTraced(trace, "the question", "unknown", "idle", "working", "blocked(input needed)")
			awaitToasts(t, r.herdr, "the question's toast", 1)

			tm.Type(t, "/nudge")
			if _, err := r.llm.WaitRequests(2, time.Minute); err != nil {
				t.Fatalf("the extension's run never asked the model: %v", err)
			}
			r.waitTraced(trace, "the extension's run", "unknown", "idle", "working", "blocked(input needed)", "working")
			close(release)
			tm.WaitText(t, again, time.Minute)
			r.waitTraced(trace, "the new question", "unknown", "idle", "working", "blocked(input needed)", "working", "blocked(input needed)")
			n := awaitToasts(t, r.herdr, "the new question's toast", 2)
			quit(t, tm) // wrap drains its queued toasts before it exits
			if n = r.herdr.Notifications(); len(n) != 2 || n[0].Title != "Pi needs your input" || n[1].Title != "Pi needs your input" {
				t.Fatalf("notifications %+v, want one per question", n)
			}
			r.noGuidance()
		})
	}
}
