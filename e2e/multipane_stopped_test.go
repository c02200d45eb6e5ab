package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Ctrl-Z in a nested wrapper (herdr-pi wrap bash, herdr-pi wrap pi in
// that shell) stops its agent and it, and the shell is in front again:
// the pane no longer shows the question the stopped agent was asking, but
// idle, with why; fg shows the question again, without a second toast.
// The outer wrapper stays aside and silent meanwhile: its screen still
// shows the stopped agent's last frame.
func TestAStoppedNestedWrapperShowsThePaneIdleUntilFg(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	inner := agentScript(t, `print inner-ready\r\n`, "readline", piDialog, "readline", `print inner-after\r\n`)
	sh := "cd " + m.project("api") + " && PS1='jc$ ' exec herdr-pi wrap --label outer -- " + bash + " --norc --noprofile -i"
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(p), Argv: []string{"sh", "-c", sh}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "jc$")
	m.waitPane(p, "idle")
	if err := sendKeys(r, "herdr-pi wrap --label inner -- fakeagent "+inner+"\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-ready")
	m.h.WaitFor(t, 30*time.Second, "the inner wrapper registered", func() bool { return m.status(p).WrapperPID != r.pid() })
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	m.waitPane(p, "blocked")
	m.h.WaitFor(t, 30*time.Second, "the inner agent's toast", func() bool { return len(m.shown()) == 1 })

	if err := sendKeys(r, "\x1a"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "Stopped")
	m.h.WaitFor(t, 30*time.Second, "the pane idle while the inner agent is stopped", func() bool {
		st := m.h.Pane(p)
		return st.Status == "idle"
	})
	calls := m.h.AgentCalls(p)
	if last := calls[len(calls)-1]; !strings.Contains(last.Message, "Ctrl-Z") {
		t.Errorf("the pane's last report while stopped: %+v, want it saying why", last)
	}

	if err := sendKeys(r, "fg\r"); err != nil {
		t.Fatal(err)
	}
	m.waitPane(p, "blocked")
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-after")
	if err := sendKeys(r, "exit\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("outer wrapper: exit %d, %v", st, err)
	}
	if n := m.h.Notifications(); len(n) != 1 || !strings.HasPrefix(n[0].Body, "inner · ") {
		t.Errorf("toasts offered to Herdr: %+v, want the inner agent's question once", n)
	}
}

// A wrapper Herdr runs straight in a pane (its resume command after a
// restart, say) has no shell to stop in front of: its process group is
// orphaned, the kernel discards its stop, and the agent goes on at once
// after Ctrl-Z. The pane then never shows the stopped agent idle, "fg in
// the pane's shell resumes it": there is no such shell, and working or
// blocked turned idle for a moment reads as the agent finished.
func TestCtrlZUnderAWrapperWithoutAShellLeavesThePanesState(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	agent := agentScript(t, `print solo-ready\r\n`, "readline", piDialog, "readline", `print solo-after\r\n`)
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(p), Argv: []string{"herdr-pi", "wrap", "--label", "solo", "--", "fakeagent", agent}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "solo-ready")
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	m.waitPane(p, "blocked")
	// Ctrl-Z stops the agent, which reads a line in cooked mode; the
	// wrapper follows, is not stopped, and continues it: the line typed
	// next, after the ^Z in the same stream, reaches it.
	if err := sendKeys(r, "\x1a"); err != nil {
		t.Fatal(err)
	}
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "solo-after")
	if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("wrapper: exit %d, %v; screen %q", st, err, r.bytes())
	}
	for _, c := range m.h.AgentCalls(p) {
		if strings.Contains(c.Message, "Ctrl-Z") {
			t.Errorf("the pane was shown %s %q, though nothing stopped but the agent for an instant; reports %+v", c.State, c.Message, m.h.AgentCalls(p))
		}
	}
}
