package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr keeps a custom source's state in memory only. When its event
// stream ends (a live handoff, a restart), wrap reports the current state
// again as soon as the stream is back, without waiting for a change.
func TestWrapReportsAgainAfterHerdrHandoff(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t)
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = append(env, h.Env()...)
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, "print ready\\r\\n", "sleep 6s")}})
	if err != nil {
		t.Fatal(err)
	}
	states := func() []string {
		var out []string
		for _, c := range h.Reports(h.PaneID()) {
			out = append(out, c.State)
		}
		return out
	}
	h.WaitFor(t, 2*time.Minute, "unknown then idle", func() bool { return len(states()) == 2 && states()[1] == "idle" })
	time.Sleep(300 * time.Millisecond) // the watcher is subscribed by now
	handoff := time.Now()
	h.DropSubscriptions()
	h.WaitFor(t, 2*time.Minute, "idle reported again", func() bool { return len(states()) == 3 && states()[2] == "idle" })
	reps := h.Reports(h.PaneID())
	if !reps[2].Accepted || reps[2].Seq <= reps[1].Seq {
		t.Fatalf("the repeated report was not accepted: %+v", reps[2])
	}
	t.Logf("state reported again %v after the stream ended", reps[2].At.Sub(handoff).Round(time.Millisecond))
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
}

// Herdr answers ok to reports it ignores. After a plain pi exited in the
// pane, Herdr drops custom reports labelled pi: the wrapper reads its claim
// back, logs why, and `herdr-pi status` says so.
func TestWrapNoticesHerdrIgnoringItsReports(t *testing.T) {
	for _, ignored := range []bool{false, true} {
		dir := t.TempDir()
		h := herdrtest.Start(t)
		if ignored {
			h.SimulateAgentProcessExit(h.PaneID(), "pi")
		}
		env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
		env = append(env, h.Env()...)
		r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, "print ready\\r\\n", "sleep 3s")}})
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Herdr string }
		deadline := time.Now().Add(10 * time.Second)
		for {
			cmd := exec.Command("herdr-pi", "status", "--json")
			cmd.Env = env
			out, err := cmd.Output()
			if err == nil && json.Unmarshal(out, &st) == nil && (strings.Contains(st.Herdr, "ignores") || !ignored && st.Herdr != "") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ignored=%v: status never said how Herdr takes the reports: %s (%v)", ignored, out, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := strings.Contains(st.Herdr, "ignores"); got != ignored {
			t.Fatalf("ignored=%v: status says %q", ignored, st.Herdr)
		}
		if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
			t.Fatalf("status %d, %v", status, err)
		}
		if ignored {
			log, _ := os.ReadFile(filepath.Join(dir, "herdr-pi", "herdr-pi.log"))
			if !strings.Contains(string(log), "Herdr ignores herdr-pi's reports for pane w1:p1: it shows no agent") {
				t.Fatalf("the log does not say why:\n%s", log)
			}
		}
	}
}
