package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// A real Pi 1.6.0 with neither the probe nor its status channel: only the
// screen and the session file speak. Its runs here are quicker than the
// screen's debounce (set long, so that no machine is slow enough for the
// screen to see them), so nothing but the file ever sees them: a question
// Pi writes while herdr-pi watches is news all the same, told once, and
// so is the one it asks at once after the answer. Started again on that
// session, or on a fork of it, the same question is history: blocked, and
// not told again.
func TestWrapNoProbeQuickQuestionIsTold(t *testing.T) {
	const again = "Which function should I change?"
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "ANSWER") {
			return fakellm.Reply{Text: again + "\n" + session.Marker}
		}
		return fakellm.Reply{Text: question + "\n" + session.Marker}
	}, true)
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, []byte("[detect]\ndebounce = \"10s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PI_PROGRAM_STATUS=0", "HERDR_PI_CONFIG=" + config}
	blocked := func(what string) {
		t.Helper()
		r.herdr.WaitFor(t, time.Minute, what, func() bool {
			s := r.states()
			return len(s) > 0 && s[len(s)-1] == "blocked(input needed)"
		})
	}
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nnotifications: %+v\ntransitions: %q", tm.Screen(), r.herdr.Notifications(), transitionCauses(t, trace))
		}
	})
	tm.Type(t, "which file?")
	r.submitted(tm)
	blocked("the question")
	tm.Type(t, "ANSWER: main.go")
	tm.WaitText(t, again, time.Minute)
	awaitToasts(t, r.herdr, "the second question's toast", 2)
	quit(t, tm) // wrap drains its queued toasts before it exits
	if n := r.herdr.Notifications(); len(n) != 2 || n[0].Title != "Pi needs your input" || n[1].Title != "Pi needs your input" {
		t.Fatalf("notifications %+v, want one per question; transitions %q", n, transitionCauses(t, trace))
	}
	if s := strings.Join(r.states(), " "); strings.Contains(s, "working") {
		t.Fatalf("reports %q: the screen saw a run, the test no longer tells the file's word apart", s)
	}

	files := r.agent.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	for _, args := range [][]string{{"--session", files[0]}, {"--fork", files[0]}} {
		r.herdr.ClearRecords()
		tm = r.wrapNoProbe(filepath.Join(t.TempDir(), "trace.jsonl"), env, args...)
		blocked("the question restored with " + args[0])
		quit(t, tm)
		if n := r.herdr.Notifications(); len(n) != 0 {
			t.Fatalf("started with %s: notifications %+v, want none (told before)", args[0], n)
		}
	}
}
