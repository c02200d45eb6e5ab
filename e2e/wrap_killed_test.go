package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// An agent killed mid-run is never reported idle: its probe's connection
// ends with it, a moment before the wrapper sees its exit, and its screen
// shows nothing busy (an extension may hide Pi's working indicator, and a
// run younger than the debounce has none confirmed yet). An idle after
// working is what makes Herdr toast "finished" and play its sound: for a
// crash, the pane goes from working straight to its release.
func TestAKilledAgentIsNotReportedIdleBeforeItsExit(t *testing.T) {
	dir := t.TempDir()
	fake := herdrtest.Start(t)
	trace := filepath.Join(dir, "trace.jsonl")
	env := linkCommands(t, dir, append(fake.Env(), "HERDR_PI_TRACE="+trace)...)
	// The run starts, and the agent kills itself at the Enter the test
	// types once Herdr shows the pane working.
	script := `probe;event agent_start {};readline;kill KILL`
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", "-e", script}, Env: env, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	fake.WaitFor(t, 2*time.Minute, "the working report", func() bool {
		for _, c := range fake.Reports(fake.PaneID()) {
			if c.State == "working" {
				return true
			}
		}
		return false
	})
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 128+9 {
		t.Fatalf("wrap: status %d, %v, want 137 (the agent's SIGKILL)", status, err)
	}
	var calls []string
	for _, c := range fake.AgentCalls(fake.PaneID()) {
		calls = append(calls, strings.TrimSuffix(strings.TrimPrefix(c.Method, "pane."), "_agent")+" "+c.State)
	}
	if got := strings.Join(calls, ", "); !strings.HasSuffix(got, "report working, release ") {
		t.Fatalf("Herdr heard %q, want the working state kept until the release", got)
	}
	// The trace has every transition the machine made, also one the
	// release overtook on its way to Herdr: none is to idle once the run
	// began.
	causes := transitionCauses(t, trace)
	for i, c := range causes {
		if strings.HasPrefix(c, "working<-") {
			for _, d := range causes[i:] {
				if strings.HasPrefix(d, "idle<-") {
					t.Fatalf("the machine turned the killed agent idle (%s); transitions: %q", d, causes)
				}
			}
			break
		}
	}
	if n := fake.Notifications(); len(n) != 0 {
		t.Fatalf("a killed agent was told: %+v", n)
	}
}
