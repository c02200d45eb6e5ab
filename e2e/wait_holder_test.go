package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// herdrPiIn runs the herdr-pi on env's PATH and returns its exit code and
// output.
func herdrPiIn(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	path, err := lookPathIn("herdr-pi", env)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = "herdr-pi"
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// A hook holds its wait with --pid; killed with kill -9 (no trap runs),
// its wait ends anyway: Herdr sees the pane leave blocked, and `status`
// named the holder meanwhile. Pids that cannot hold a wait are refused as
// mistakes (exit 2), and the pane stays as it was.
func TestAWaitEndsWhenItsHolderIsKilled(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "exit 0")
	r.waitScreen("ready")
	pane := h.PaneID()
	h.WaitFor(t, 30*time.Second, "idle", func() bool { return h.Pane(pane).Status == "idle" })

	hook := exec.Command("sleep", "1000")
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hook.Process.Kill(); _ = hook.Wait() })
	pid := strconv.Itoa(hook.Process.Pid)

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ pid, want string }{
		{"1", "herdr-pi waiting start: --pid 1 cannot hold a wait: give a script's pid, e.g. --pid $$\n"},
		{"0", "herdr-pi waiting start: --pid 0 cannot hold a wait: give a script's pid, e.g. --pid $$\n"},
		{strconv.Itoa(gone.Process.Pid), "herdr-pi waiting start: --pid " + strconv.Itoa(gone.Process.Pid) + ": no such process (give a script's pid, e.g. --pid $$)\n"},
		{"$$", "herdr-pi waiting start: --pid needs a number, not \"$$\"\n"},
	} {
		code, _, stderr := herdrPiIn(t, e.env, "waiting", "start", "--source", "deploy-hook", "--id", "42", "--pid", bad.pid)
		if code != 2 || !strings.HasPrefix(stderr, bad.want) {
			t.Errorf("--pid %s: exit %d, stderr %q; want 2 and %q", bad.pid, code, stderr, bad.want)
		}
	}

	if code, _, stderr := herdrPiIn(t, e.env, "waiting", "start", "--source", "deploy-hook", "--id", "42", "--label", "approve deploy", "--pid", pid); code != 0 {
		t.Fatalf("waiting start --pid %s: exit %d: %s", pid, code, stderr)
	}
	h.WaitFor(t, 30*time.Second, "blocked", func() bool { return h.Pane(pane).Status == "blocked" })
	st, err := askStatusJSON(e.env)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Reasons) != 1 || st.Reasons[0].Key != "hook:deploy-hook:42" || st.Reasons[0].HolderPID != hook.Process.Pid {
		t.Fatalf("status reasons %+v, want hook:deploy-hook:42 held by pid %s", st.Reasons, pid)
	}
	if _, out, _ := herdrPiIn(t, e.env, "status"); !strings.Contains(out, "held by pid "+pid+"\n") {
		t.Errorf("status does not name the holder:\n%s", out)
	}

	if err := hook.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = hook.Wait()
	h.WaitFor(t, 30*time.Second, "the pane leaving blocked", func() bool { return h.Pane(pane).Status == "idle" })
	if st, err := askStatusJSON(e.env); err != nil || st.State != "idle" || len(st.Reasons) != 0 {
		t.Errorf("status after the holder died: %+v, %v", st, err)
	}
	r.send("\r")
	r.finish(0, true)
}

// A wait started again with a new --label takes it, as the latest start
// already decides its holder: `status` shows it, and Herdr's pane, which
// the wait made blocked, says it too — without a second toast, since the
// pane was blocked all along.
func TestAWaitStartedAgainTakesTheLatestLabel(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "exit 0")
	r.waitScreen("ready")
	pane := h.PaneID()
	h.WaitFor(t, 30*time.Second, "idle", func() bool { return h.Pane(pane).Status == "idle" })
	lastMessage := func() string {
		reports := h.Reports(pane)
		if len(reports) == 0 {
			return ""
		}
		return reports[len(reports)-1].State + ": " + reports[len(reports)-1].Message
	}
	start := func(label string) {
		t.Helper()
		if code, _, stderr := herdrPiIn(t, e.env, "waiting", "start", "--source", "deploy-hook", "--id", "42", "--label", label); code != 0 {
			t.Fatalf("waiting start --label %q: exit %d: %s", label, code, stderr)
		}
	}
	start("approve build 1")
	h.WaitFor(t, 30*time.Second, "blocked with the first label", func() bool { return lastMessage() == "blocked: approve build 1" })
	h.WaitFor(t, 30*time.Second, "the toast", func() bool { return len(h.Notifications()) == 1 })

	start("approve build 2")
	h.WaitFor(t, 30*time.Second, "the new label reported", func() bool { return lastMessage() == "blocked: approve build 2" })
	st, err := askStatusJSON(e.env)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Reasons) != 1 || st.Reasons[0].Label != "approve build 2" {
		t.Errorf("status reasons %+v, want one with the latest label", st.Reasons)
	}
	if n := h.Notifications(); len(n) != 1 {
		t.Errorf("toasts %+v, want the first one only", n)
	}
	if code, _, stderr := herdrPiIn(t, e.env, "waiting", "stop", "--source", "deploy-hook", "--id", "42"); code != 0 {
		t.Fatalf("waiting stop: exit %d: %s", code, stderr)
	}
	h.WaitFor(t, 30*time.Second, "idle again", func() bool { return h.Pane(pane).Status == "idle" })
	r.send("\r")
	r.finish(0, true)
}

// `herdr-pi notify` in a wrapped pane says which pane its toast is about
// the way the wrapper's own notifications do (label · project · session
// after the hook's body), leaving out what the hook's text says already.
func TestNotifyFromAWrappedPaneSaysWhichPane(t *testing.T) {
	h := herdrtest.Start(t)
	h.SetDelivery("herdr")
	e := newFaultEnv(t, h)
	r := e.start(outerOptions{Argv: []string{"herdr-pi", "wrap", "--label", "backend", "--", "fakeagent", agentScript(t, "print ready\\r\\n", "readline", "exit 0")}, Keep: true})
	r.waitScreen("ready")
	pane := h.PaneID()
	h.WaitFor(t, 30*time.Second, "idle", func() bool { return h.Pane(pane).Status == "idle" })
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Base(cwd)
	for _, tc := range []struct{ title, body, want string }{
		{"Tests passed", "all 312", "all 312 · backend · " + project},
		{"Tests failed", "backend: 2 of 312 in " + project, "backend: 2 of 312 in " + project},
	} {
		if code, _, stderr := herdrPiIn(t, e.env, "notify", "--title", tc.title, "--body", tc.body); code != 0 {
			t.Fatalf("notify --title %q: exit %d: %s", tc.title, code, stderr)
		}
		var got herdrtest.NotificationCall
		h.WaitFor(t, 30*time.Second, "the toast "+tc.title, func() bool {
			for _, n := range h.Notifications() {
				if n.Title == tc.title && n.Shown {
					got = n
					return true
				}
			}
			return false
		})
		if got.Body != tc.want {
			t.Errorf("notify --title %q --body %q: toast body %q, want %q", tc.title, tc.body, got.Body, tc.want)
		}
	}
	r.send("\r")
	r.finish(0, true)
}
