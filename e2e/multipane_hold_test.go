package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/procstat"
)

// A wrapper started inside another's agent in the same pane holds the
// pane alone while it runs: its agent blocked (a hook's wait) stays
// blocked in Herdr however the outer wrapper reads the screen meanwhile
// (the inner agent's spinner, then its idle editor, which the outer
// reads as its own working and idle). Neither wrapper blames Herdr's
// own detection (herdr#4020): the outer's status names the wrapper that
// holds the pane, the inner's says it reports to it; when the inner one
// ends the outer's state goes back to the pane, with no re-assert.
func TestANestedWrapperHoldsThePaneAlone(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	saved := filepath.Join(t.TempDir(), "outer-control")
	inner := agentScript(t, `print inner-ready\r\n`, "readline", "pi-working 1500ms", "pi-idle", `print inner-after\r\n`, "readline")
	outer1 := agentScript(t, `print outer-ready\r\n`, "readline")
	outer2 := agentScript(t, `print outer-back\r\n`, "readline")
	shell := fmt.Sprintf(`fakeagent %s; printf "%%s\n%%s\n" "$HERDR_PI_CONTROL" "$HERDR_PI_CONTROL_TOKEN" > %s; herdr-pi wrap --label inner -- fakeagent %s; fakeagent %s`,
		outer1, saved, inner, outer2)
	sh := "cd " + m.project("api") + " && exec herdr-pi wrap --label outer -- sh -c '" + shell + "'"
	r, err := startOuter(outerOptions{Keep: true, Env: m.paneEnv(p), Argv: []string{"sh", "-c", sh}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-ready")
	m.waitPane(p, "idle")
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-ready")
	var in paneStatus
	m.h.WaitFor(t, 30*time.Second, "the inner wrapper registered", func() bool {
		in = m.status(p)
		return in.WrapperPID != r.pid()
	})
	m.mustHook(p, "waiting", "start", "--source", "hook", "--id", "inner")
	m.waitPane(p, "blocked")
	blockedAt := len(m.h.AgentCalls(p))

	// The inner agent works, then idles: the outer reads its screen.
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "inner-after")
	outerCtl := outerControl(t, saved)
	m.h.WaitFor(t, 30*time.Second, "the outer wrapper idle again", func() bool {
		return strings.Contains(outerCtl.status(t, m), "state    idle")
	})
	if st := m.h.Pane(p); st.Status != "blocked" {
		t.Errorf("the pane shows %+v while the inner agent is blocked; calls since it blocked: %+v", st, m.h.AgentCalls(p)[blockedAt:])
	}
	innerSays := herdrLine(m.hookStatus(t, p))
	outerSays := herdrLine(outerCtl.status(t, m))
	if strings.Contains(innerSays, "herdr#4020") || !strings.Contains(innerSays, "reporting to pane "+p) {
		t.Errorf("the inner wrapper's status says %q, want it reporting to pane %s", innerSays, p)
	}
	wantHeld := fmt.Sprintf("held by the herdr-pi wrapper pid %d", in.WrapperPID)
	if strings.Contains(outerSays, "herdr#4020") || !strings.Contains(outerSays, wantHeld) || !strings.Contains(outerSays, "inside this one's agent") {
		t.Errorf("the outer wrapper's status says %q, want %q, nested in its agent", outerSays, wantHeld)
	}

	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, r, "outer-back")
	m.waitPane(p, "idle")
	m.h.WaitFor(t, 30*time.Second, "the outer wrapper reporting again", func() bool {
		return strings.Contains(herdrLine(m.hookStatus(t, p)), "reporting to pane")
	})
	if says := herdrLine(m.hookStatus(t, p)); strings.Contains(says, "herdr#4020") {
		t.Errorf("the outer wrapper's status after the inner one ended: %q", says)
	}
	if err := sendKeys(r, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("outer wrapper: exit %d, %v", st, err)
	}
	if st := m.h.Pane(p); st.Agent != "" {
		t.Errorf("the pane still shows %+v", st)
	}
}

// Two wrappers in one pane that are not nested (HERDR_PANE_ID copied to
// a second terminal): the newer holds the pane, as the pane's hooks
// reach it; the older's changes do not reach Herdr meanwhile, and its
// status says which wrapper holds the pane and how to have both shown.
// The older ending meanwhile leaves the newer's state on the pane (no
// release of a pane it does not hold); the newer's status never blames
// Herdr's own detection.
func TestASecondWrapperHoldsThePaneTheOlderStandsAside(t *testing.T) {
	m := newMultiHerdr(t, 1)
	p := m.panes[0]
	first := m.wrap(p, "api", "first", `print first-ready\r\n`, "readline", "pi-working 1500ms", "pi-idle", `print first-after\r\n`, "readline")
	m.waitPane(p, "idle")
	second := m.wrap(p, "web", "second", `print second-ready\r\n`, "readline")
	waitOutput(t, second, "second-ready")
	m.h.WaitFor(t, 30*time.Second, "the second wrapper registered", func() bool { return m.status(p).WrapperPID == second.pid() })
	m.mustHook(p, "waiting", "start", "--source", "hook", "--id", "second")
	m.waitPane(p, "blocked")
	blockedAt := len(m.h.AgentCalls(p))

	// The first agent works and idles in its own terminal.
	if err := sendKeys(first, "\r"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, first, "first-after")
	firstCtl := controlOf(t, first.pid())
	m.h.WaitFor(t, 30*time.Second, "the first wrapper idle again", func() bool {
		return strings.Contains(firstCtl.status(t, m), "state    idle for")
	})
	if st := m.h.Pane(p); st.Status != "blocked" {
		t.Errorf("the pane shows %+v while the second agent is blocked; calls since: %+v", st, m.h.AgentCalls(p)[blockedAt:])
	}
	firstSays := herdrLine(firstCtl.status(t, m))
	want := fmt.Sprintf("held by the herdr-pi wrapper pid %d", second.pid())
	if strings.Contains(firstSays, "herdr#4020") || !strings.Contains(firstSays, want) || !strings.Contains(firstSays, "a pane of its own") {
		t.Errorf("the first wrapper's status says %q, want %q and the way out", firstSays, want)
	}

	// The first ends: the pane keeps the second's state.
	if err := sendKeys(first, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := first.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("the first wrapper: exit %d, %v", st, err)
	}
	if st := m.h.Pane(p); st.Status != "blocked" || st.Agent == "" {
		t.Errorf("the pane after the first wrapper (standing aside) ended: %+v, want the second's blocked", st)
	}
	if says := herdrLine(m.hookStatus(t, p)); strings.Contains(says, "herdr#4020") || !strings.Contains(says, "reporting to pane") {
		t.Errorf("the second wrapper's status: %q", says)
	}
	if err := sendKeys(second, "\r"); err != nil {
		t.Fatal(err)
	}
	if st, err := second.wait(30 * time.Second); err != nil || st != 0 {
		t.Fatalf("the second wrapper: exit %d, %v", st, err)
	}
}

// wrapperControl is how to ask one wrapper directly: its control socket
// and token, as its agent's environment has them.
type wrapperControl struct{ socket, token string }

// outerControl reads the socket and token a wrapped shell saved.
func outerControl(t *testing.T, file string) wrapperControl {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(f) != 2 || f[0] == "" || f[1] == "" {
		t.Fatalf("saved control %q", b)
	}
	return wrapperControl{f[0], f[1]}
}

// controlOf reads them from the environment of the wrapper's children
// (its agent, or the session leader it starts the agent through).
func controlOf(t *testing.T, wrapper int) wrapperControl {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var c wrapperControl
	for _, stat := range procs {
		if st, err := procstat.ReadPath(stat); err != nil || st.Fields < 2 || st.PPID != wrapper {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(filepath.Dir(stat), "environ"))
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "HERDR_PI_CONTROL="); ok {
				c.socket = v
			}
			if v, ok := strings.CutPrefix(kv, "HERDR_PI_CONTROL_TOKEN="); ok {
				c.token = v
			}
		}
	}
	if c.socket == "" || c.token == "" {
		t.Fatalf("no control socket in the environment of wrapper %d's children", wrapper)
	}
	return c
}

// status is `herdr-pi status` asked of that wrapper.
func (c wrapperControl) status(t *testing.T, m *multiHerdr) string {
	t.Helper()
	env := append(m.paneEnv(m.panes[0]), "HERDR_PI_CONTROL="+c.socket, "HERDR_PI_CONTROL_TOKEN="+c.token)
	out, errs, code := runIn(t, env, "status")
	if code != 0 {
		t.Fatalf("status of %s: exit %d %s%s", c.socket, code, out, errs)
	}
	return out
}

// hookStatus is `herdr-pi status` from pane's hook.
func (m *multiHerdr) hookStatus(t *testing.T, pane string) string {
	t.Helper()
	out, errs, code := m.hook(pane, "status")
	if code != 0 {
		t.Fatalf("status from pane %s's hook: exit %d %s%s", pane, code, out, errs)
	}
	return out
}

// herdrLine is the herdr row of `herdr-pi status`, without its name.
func herdrLine(status string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, "herdr "); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// runIn runs herdr-pi ARGS with env.
func runIn(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("herdr-pi", args...)
	cmd.Env = env
	path, err := lookPathIn("herdr-pi", env)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Path = path
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), exitStatus(err)
}
