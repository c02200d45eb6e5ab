package e2e

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// An agent killed mid-run, whose wrapper then takes longer than the
// probe-gone hold to reach the pane's release, is still never reported
// idle: once the wrapper has seen the exit, that the probe never came back
// is no news. The way out is held here by the person's terminal, which
// takes no output for a while (paused, or a slow link): the wrapper cannot
// drain what the agent wrote last, so the release waits. Live handoffs
// that end through a slow Herdr hold it the same way.
func TestAKilledAgentStaysWorkingWhileTheWayOutIsHeld(t *testing.T) {
	dir := t.TempDir()
	fake := herdrtest.Start(t)
	trace := filepath.Join(dir, "trace.jsonl")
	env := linkCommands(t, dir, append(fake.Env(), "HERDR_PI_TRACE="+trace)...)
	// The run starts; at the Enter the test types once Herdr shows the
	// pane working, the agent floods its terminal and kills itself.
	script := `probe;event agent_start {};readline;flood flooding the terminal\r\n;sleep 500ms;kill KILL`
	var stalled atomic.Bool
	resume := make(chan struct{})
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", "-e", script}, Env: env, Rows: 24, Cols: 80,
		OnBytes: func([]byte) {
			if stalled.Load() {
				<-resume
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			close(resume)
		}
	}()
	// reported says whether Herdr heard the pane go to st after it heard
	// it working (the idle at the probe's connection may come before).
	reported := func(st string) func() bool {
		return func() bool {
			working := false
			for _, c := range fake.Reports(fake.PaneID()) {
				working = working || c.State == "working"
				if working && c.State == st {
					return true
				}
			}
			return false
		}
	}
	fake.WaitFor(t, 2*time.Minute, "the working report", reported("working"))
	stalled.Store(true)
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	// Past the hold and then some, the terminal still taking nothing: an
	// idle would have been reported by now.
	fake.Await(state.ProbeGoneGrace+3*time.Second, reported("idle"))
	if n := len(fake.Releases(fake.PaneID())); n != 0 {
		t.Fatalf("the pane was released while the terminal took no output (%d releases): the way out was not held", n)
	}
	resumed = true
	close(resume)
	if status, err := r.wait(time.Minute); err != nil || status != 128+9 {
		t.Fatalf("wrap: status %d, %v, want 137 (the agent's SIGKILL)", status, err)
	}
	var calls []string
	for _, c := range fake.AgentCalls(fake.PaneID()) {
		calls = append(calls, strings.TrimSuffix(strings.TrimPrefix(c.Method, "pane."), "_agent")+" "+c.State)
	}
	if got := strings.Join(calls, ", "); !strings.HasSuffix(got, "report working, release ") {
		t.Fatalf("Herdr heard %q, want the working state kept until the release; transitions %q", got, transitionCauses(t, trace))
	}
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
