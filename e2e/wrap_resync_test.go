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
	// The agent waits for a line, not for a time: on a loaded machine the
	// steps below can take longer than any sleep it might have.
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, "print ready\\r\\n", "readline")}})
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
	// Only a stream whose start the watcher saw counts as one that ended;
	// one dropped before its acknowledgement is a first subscribe retried.
	h.WaitFor(t, 2*time.Minute, "the event stream", func() bool { return h.Streams() > 0 })
	handoff := time.Now()
	h.DropSubscriptions()
	h.WaitFor(t, 2*time.Minute, "idle reported again", func() bool { return len(states()) == 3 && states()[2] == "idle" })
	reps := h.Reports(h.PaneID())
	if !reps[2].Accepted || reps[2].Seq <= reps[1].Seq {
		t.Fatalf("the repeated report was not accepted: %+v", reps[2])
	}
	t.Logf("state reported again %v after the stream ended", reps[2].At.Sub(handoff).Round(time.Millisecond))
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
}

// Herdr answers ok to reports it ignores. After a plain pi exited in the
// pane, Herdr drops custom reports labelled pi: the wrapper reads its claim
// back, logs why, and `herdr-pi status` says so. The stand-in agent is
// labelled pi by the config ([herdr] agent): by its own name it would be
// shown as fakeagent, whose reports Herdr takes.
func TestWrapNoticesHerdrIgnoringItsReports(t *testing.T) {
	for _, ignored := range []bool{false, true} {
		dir := t.TempDir()
		h := herdrtest.Start(t)
		if ignored {
			h.SimulateAgentProcessExit(h.PaneID(), "pi")
		}
		config := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(config, []byte("[herdr]\nagent = \"pi\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "HERDR_PI_CONFIG="+config)
		env = append(env, h.Env()...)
		// The agent lives until the status has been read, however long
		// that takes on a loaded machine.
		r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, "print ready\\r\\n", "readline")}})
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Herdr string }
		deadline := time.Now().Add(time.Minute) // a bound, not a wait: each status is a process start
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
		if _, err := r.master.Write([]byte("\r")); err != nil {
			t.Fatal(err)
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
