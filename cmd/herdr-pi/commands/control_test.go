package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/settings"
)

// fakeWrapper answers like the wrapper's state machine would: it keeps the
// open waits and reports them in its status.
type fakeWrapper struct {
	mu    sync.Mutex
	waits []control.WaitRequest
	open  map[string]control.WaitRequest
}

func (f *fakeWrapper) ProbeEvent(control.Event) {}

func (f *fakeWrapper) Wait(w control.WaitRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.Source == "refuse-at-length" {
		return errors.New(longRefusal)
	}
	f.waits = append(f.waits, w)
	if f.open == nil {
		f.open = map[string]control.WaitRequest{}
	}
	if w.Action == control.WaitStart {
		f.open[w.Key()] = w
	} else {
		delete(f.open, w.Key())
	}
	return nil
}

func (f *fakeWrapper) Status() control.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := control.Status{Agent: "pi", State: "idle", ChildPID: 4242, SessionFile: "/s/a.jsonl"}
	for k, w := range f.open {
		st.State = "blocked"
		st.Reasons = append(st.Reasons, control.Reason{Kind: "wait", Key: k, Label: w.Label})
	}
	st.Reasons = append(st.Reasons, control.Reason{Kind: "herdr-blocked", Key: "herdr:blocked#1", Label: "evil\x1b]0;title\x07label"})
	return st
}

type cmdEnv struct {
	runtime string
	env     []string
}

// newCmdEnv is a pane environment with a short private runtime directory.
func newCmdEnv(t *testing.T, extra ...string) *cmdEnv {
	t.Helper()
	rt, err := os.MkdirTemp("/tmp", "hpcmd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	e := &cmdEnv{env: append([]string{"HOME=" + rt, "XDG_RUNTIME_DIR=" + rt, "XDG_STATE_HOME=" + rt + "/state", "XDG_CONFIG_HOME=" + rt + "/config"}, extra...)}
	e.runtime = settings.Resolve(settings.EnvFrom(e.env)).RuntimeBase
	return e
}

func run(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"herdr-pi"}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: env})
	return code, out.String(), errb.String()
}

var pane = []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=/tmp/herdr-test.sock", "HERDR_PANE_ID=w1:p1"}

func startFake(t *testing.T, e *cmdEnv, paneID string) (*control.Run, *fakeWrapper) {
	t.Helper()
	f := &fakeWrapper{}
	run, err := control.Start(control.RunConfig{RuntimeBase: e.runtime, PaneID: paneID, HerdrSocket: "/tmp/herdr-test.sock", Events: f, Requests: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	return run, f
}

func TestWaitingAndStatusFindTheWrapperOfThePane(t *testing.T) {
	e := newCmdEnv(t, pane...)
	_, f := startFake(t, e, "w1:p1")

	for _, args := range [][]string{
		{"waiting", "start", "--source", "deploy-hook", "--id", "42", "--label", "approve deploy"},
		{"waiting", "start", "--source", "lint", "--id", "1"},
		{"waiting", "stop", "--source", "lint", "--id", "1"},
	} {
		if code, out, errOut := run(t, e.env, args...); code != 0 || out != "" || errOut != "" {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	f.mu.Lock()
	if len(f.waits) != 3 || f.waits[0] != (control.WaitRequest{Action: "start", Source: "deploy-hook", ID: "42", Label: "approve deploy"}) {
		t.Fatalf("waits %+v", f.waits)
	}
	f.mu.Unlock()

	code, out, errOut := run(t, e.env, "status", "--json")
	if code != 0 {
		t.Fatalf("status --json: %d %s", code, errOut)
	}
	validate(t, compileSchema(t, "status"), out)
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json output %q: %v", out, err)
	}
	if st.State != "blocked" || st.WrapperPID != os.Getpid() || st.ChildPID != 4242 || len(st.Reasons) != 2 || st.Reasons[0].Key != "deploy-hook:42" {
		t.Fatalf("status %+v", st)
	}

	code, out, _ = run(t, e.env, "status")
	if code != 0 || !strings.Contains(out, "state    blocked\n") || !strings.Contains(out, "  wait           approve deploy       deploy-hook:42\n") ||
		!strings.Contains(out, "agent    pi (pid 4242)\nprobe    not connected") {
		t.Fatalf("status:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("status printed control characters: %q", out)
	}
}

// Inside the wrapped agent (Pi's bash tool, say) the environment leads to
// the wrapper, Herdr or not.
// longRefusal is a refusal longer than a log line, with a control sequence
// in it and the way out at its end.
var longRefusal = "this wrapper cannot open the wait: " + strings.Repeat("é", 40) + " \x1b]0;title\x07 and the way out comes last: run `herdr-pi doctor`"

// What the wrapper answers a refused request reaches the person whole (a
// log line's clip cut the way out off), printable.
func TestAWrapperRefusalIsShownWhole(t *testing.T) {
	e := newCmdEnv(t, pane...)
	startFake(t, e, "w1:p1")
	code, out, errOut := run(t, e.env, "waiting", "start", "--source", "refuse-at-length", "--id", "1")
	want := "herdr-pi waiting start: the wrapper refused refuse-at-length:1: " + strings.NewReplacer("\x1b", "?", "\x07", "?").Replace(strings.TrimPrefix(longRefusal, "waiting: ")) + "\n"
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr\n%q\nwant 1 and\n%q", code, out, errOut, want)
	}
}

func TestWaitingFromInsideTheChild(t *testing.T) {
	e := newCmdEnv(t)
	run1, f := startFake(t, e, "")
	env := append(append([]string{}, e.env...), run1.Env()...)
	if code, _, errOut := run(t, env, "waiting", "start", "--source", "s", "--id", "i"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(f.waits) != 1 {
		t.Fatalf("waits %+v", f.waits)
	}
	bad := append(append([]string{}, e.env...), control.EnvSocket+"="+run1.Endpoint.Socket, control.EnvToken+"=stale")
	code, _, errOut := run(t, bad, "status")
	if code != 1 || !strings.Contains(errOut, "refused our token") {
		t.Fatalf("wrong token: exit %d, %q", code, errOut)
	}
}

func TestNoWrapperErrorsSayWhatToDo(t *testing.T) {
	e := newCmdEnv(t)
	code, _, errOut := run(t, e.env, "waiting", "start", "--source", "s", "--id", "i")
	if code != 1 || !strings.Contains(errOut, "not inside a wrapped agent") || !strings.Contains(errOut, "herdr-pi wrap pi") {
		t.Fatalf("outside everything: exit %d, %q", code, errOut)
	}
	e = newCmdEnv(t, pane...)
	code, _, errOut = run(t, e.env, "status")
	if code != 1 || !strings.Contains(errOut, "no herdr-pi wrapper is registered for Herdr pane w1:p1") || !strings.Contains(errOut, "herdr-pi wrap pi") {
		t.Fatalf("empty pane: exit %d, %q", code, errOut)
	}
	// A wrapper that was killed left its registry entry: it is detected,
	// said, and removed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	reg := control.PaneRegistry(e.runtime)
	key := control.PaneKey("/tmp/herdr-test.sock", "w1:p1")
	if _, err := reg.Register(key, control.Endpoint{Socket: "/tmp/gone.sock", Token: "t", PID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, e.env, "status")
	if code != 1 || !strings.Contains(errOut, "has exited") {
		t.Fatalf("stale entry: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir, key)); !os.IsNotExist(err) {
		t.Fatalf("stale entry not removed: %v", err)
	}
	// Another pane's wrapper is not ours.
	startFake(t, e, "w1:p2")
	if code, _, _ := run(t, e.env, "status"); code != 1 {
		t.Fatal("status reached the wrapper of another pane")
	}
}

// A pane hook whose XDG_RUNTIME_DIR is not the wrapper's reads another
// pane registry: the message says where it looked and how to reach the
// wrapper anyway, not only that none runs.
func TestNoWrapperSaysWhereItLooked(t *testing.T) {
	e := newCmdEnv(t, pane...)
	startFake(t, e, "w1:p1")
	hook := newCmdEnv(t, pane...)
	reg := control.PaneRegistry(hook.runtime).Dir
	for _, args := range [][]string{{"status"}, {"waiting", "start", "--source", "s", "--id", "i"}} {
		code, _, errOut := run(t, hook.env, args...)
		for _, says := range []string{"no herdr-pi wrapper is registered for Herdr pane w1:p1 in " + reg,
			"XDG_RUNTIME_DIR=" + filepath.Dir(hook.runtime), "another XDG_RUNTIME_DIR",
			control.EnvSocket + " and " + control.EnvToken, "herdr-pi wrap pi"} {
			if code != 1 || !strings.Contains(errOut, says) {
				t.Errorf("%q: exit %d, %q; want 1 and %q", args, code, errOut, says)
			}
		}
	}
}

// Without XDG_RUNTIME_DIR the registry is under TMPDIR (settings.Resolve):
// a hook with another TMPDIR than the wrapper's reads another registry,
// and the message names TMPDIR, not only a variable that is unset.
func TestNoWrapperNamesTMPDIRWhenItChoseTheRegistry(t *testing.T) {
	tmp, err := os.MkdirTemp("/tmp", "hptmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	hook := newCmdEnv(t, append(slices.Clone(pane), "XDG_RUNTIME_DIR=", "TMPDIR="+tmp)...)
	reg := control.PaneRegistry(hook.runtime).Dir
	if !strings.HasPrefix(reg, tmp+"/") {
		t.Fatalf("registry %s is not under TMPDIR %s", reg, tmp)
	}
	code, _, errOut := run(t, hook.env, "status")
	for _, says := range []string{"in " + reg + " (XDG_RUNTIME_DIR is unset, so from TMPDIR=" + tmp + ")",
		"another XDG_RUNTIME_DIR (or, without one, another TMPDIR)"} {
		if code != 1 || !strings.Contains(errOut, says) {
			t.Errorf("exit %d, %q; want 1 and %q", code, errOut, says)
		}
	}
}

func TestWaitingUsage(t *testing.T) {
	e := newCmdEnv(t, pane...)
	_, f := startFake(t, e, "w1:p1")
	for _, tc := range []struct {
		args []string
		says string // stderr's first line
	}{
		{[]string{"waiting", "start", "--source", " ", "--id", "i"}, "herdr-pi waiting start: --source is empty: give a short name for what waits (example: --source deploy-hook --id 42)"},
		{[]string{"waiting", "stop", "--source", "s", "--id", ""}, "herdr-pi waiting stop: --id is empty: give"},
		{[]string{"waiting", "stop", "--source", "s", "--id", strings.Repeat("i", 300)}, "herdr-pi waiting stop: --id is longer than 128 bytes: give a shorter one"},
		{[]string{"waiting", "stop", "--source", "s", "--id", "a\x07b"}, "herdr-pi waiting stop: --id contains control characters or bidi controls: use printable text"},
		{[]string{"waiting", "start", "--source", "\x1b", "--id", "i"}, "herdr-pi waiting start: --source contains control characters"},
		{[]string{"waiting", "start", "--source", "s", "--id", "a\u202eb"}, "herdr-pi waiting start: --id contains control characters or bidi controls"},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "extra"}, `herdr-pi waiting start: unexpected argument "extra"`},
		{[]string{"waiting"}, "herdr-pi waiting: say start or stop"},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", "1"}, "herdr-pi waiting start: --pid 1 cannot hold a wait: give a script's pid, e.g. --pid $$"},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", "0"}, "herdr-pi waiting start: --pid 0 cannot hold a wait"},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", "-3"}, "herdr-pi waiting start: --pid -3 cannot hold a wait"},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", "me"}, `herdr-pi waiting start: --pid needs a number, not "me"`},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", strconv.Itoa(goneProcess(t))}, "herdr-pi waiting start: --pid "},
		{[]string{"waiting", "stop", "--source", "s", "--id", "i", "--pid", "7"}, "herdr-pi waiting stop: unknown flag --pid"},
	} {
		code, _, errOut := run(t, e.env, tc.args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != 2 || !strings.HasPrefix(first, tc.says) {
			t.Errorf("%q: exit %d, %q; want 2, %q", tc.args, code, errOut, tc.says)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waits != nil {
		t.Errorf("a refused request reached the wrapper: %+v", f.waits)
	}
}

// goneProcess is the pid of a process that ran and was reaped.
func goneProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// `waiting start --pid` hands the wrapper the holder, which `status` then
// names (the wrapper's own following of the process: bridge/control and
// e2e TestAWaitEndsWhenItsHolderIsKilled).
func TestWaitingStartNamesItsHolder(t *testing.T) {
	e := newCmdEnv(t, pane...)
	_, f := startFake(t, e, "w1:p1")
	hook := exec.Command("sleep", "1000")
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hook.Process.Kill(); _ = hook.Wait() })
	pid := hook.Process.Pid
	if code, _, errOut := run(t, e.env, "waiting", "start", "--source", "deploy-hook", "--id", "42", "--pid", strconv.Itoa(pid)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// CallerPID lets the wrapper see whether it shares the caller's pids.
	if want := (control.WaitRequest{Action: "start", Source: "deploy-hook", ID: "42", PID: pid, CallerPID: os.Getpid()}); len(f.waits) != 1 || f.waits[0] != want {
		t.Fatalf("waits %+v, want %+v", f.waits, want)
	}
}

// drawStatus --json answers in JSON even when no wrapper does: an error object
// in the documented schema, with a code per cause, and exit 1.
func TestStatusJSONWithoutAWrapper(t *testing.T) {
	schema := compileSchema(t, "status")
	e := newCmdEnv(t, pane...)
	check := func(name, code string) {
		t.Helper()
		// Each way out: start a wrapper, but for one that runs and
		// refused the token, which a second wrapper would not help.
		way := "herdr-pi wrap pi"
		if code == refused {
			way = "from the same agent's environment"
		}
		exit, out, errOut := run(t, e.env, "status", "--json")
		if exit != 1 || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q", name, exit, errOut)
		}
		validate(t, schema, out)
		var got struct {
			Format string
			Error  struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Format != statusFormat || got.Error.Code != code || !strings.Contains(got.Error.Message, way) {
			t.Errorf("%s: %v %+v", name, err, got)
		}
	}
	check("empty pane", noWrapper)
	reg := control.PaneRegistry(e.runtime)
	unregister, err := reg.Register(control.PaneKey("/tmp/herdr-test.sock", "w1:p1"), control.Endpoint{Socket: "/tmp/hp-nothing-listens.sock", Token: "t", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	check("socket that does not answer", unreachable)
	// A wrapper that was killed is gone, not out of reach: a script
	// retrying on unreachable would wait for it forever. (Alone in the
	// pane: over a running one, the lookup finds that one.)
	unregister()
	if _, err := reg.Register(control.PaneKey("/tmp/herdr-test.sock", "w1:p1"), control.Endpoint{Socket: "/tmp/hp-nothing-listens.sock", Token: "t", PID: deadPIDForStatus(t)}); err != nil {
		t.Fatal(err)
	}
	check("killed wrapper", noWrapper)
	// A running wrapper that refuses our token: refused, with the way out.
	run1, _ := startFake(t, e, "")
	e.env = append(e.env, control.EnvSocket+"="+run1.Endpoint.Socket, control.EnvToken+"=stale")
	check("stale token", refused)
}

// A wrapper stopped with Ctrl-Z (job control works under herdr-pi) holds
// its socket and answers nothing: a pane hook's status or waiting says
// so at once and how to resume it, not after its 5 s "start the agent
// under herdr-pi", which would start a second wrapper in the pane.
func TestStoppedWrapperIsNamedAsStopped(t *testing.T) {
	schema := compileSchema(t, "status")
	e := newCmdEnv(t, pane...)
	stopped := exec.Command("sleep", "60")
	if err := stopped.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopped.Process.Kill(); stopped.Wait() })
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(stopped.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the child did not stop: %v %v", err, ws)
	}
	pid := stopped.Process.Pid
	if _, err := control.PaneRegistry(e.runtime).Register(control.PaneKey("/tmp/herdr-test.sock", "w1:p1"), control.Endpoint{Socket: "/tmp/hp-nothing-listens.sock", Token: "t", PID: pid}); err != nil {
		t.Fatal(err)
	}
	says := fmt.Sprintf("the herdr-pi wrapper of Herdr pane w1:p1 (pid %d) is stopped", pid)
	resume := fmt.Sprintf("kill -CONT %d", pid)
	for _, args := range [][]string{{"status"}, {"waiting", "start", "--source", "s", "--id", "i"}} {
		code, _, errOut := run(t, e.env, args...)
		if code != 1 || !strings.Contains(errOut, says) || !strings.Contains(errOut, resume) || strings.Contains(errOut, "herdr-pi wrap pi") {
			t.Errorf("%q: exit %d, %q; want 1, %q and %q, no new wrapper", args, code, errOut, says, resume)
		}
	}
	code, out, _ := run(t, e.env, "status", "--json")
	validate(t, schema, out)
	if code != 1 || !strings.Contains(out, `"code": "unreachable"`) || !strings.Contains(out, says) {
		t.Errorf("--json: exit %d\n%s", code, out)
	}
}

// deadPIDForStatus is the pid of a child that ran and was reaped.
func deadPIDForStatus(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// Half a wrapper's environment (the token without the socket: a hook that
// copied one variable) is named as such, not reported as "HERDR_PI_CONTROL
// is unset".
func TestNoWrapperNamesTheMissingHalfOfTheControlVariables(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		says string
	}{
		{nil, "HERDR_PI_CONTROL is unset"},
		{[]string{"HERDR_PI_CONTROL_TOKEN=t"}, "HERDR_PI_CONTROL is unset"},
	} {
		e := newCmdEnv(t, tc.env...)
		code, _, errOut := run(t, e.env, "status")
		if code != 1 || !strings.Contains(errOut, "not inside a wrapped agent ("+tc.says+")") {
			t.Errorf("%q: exit %d, %q; want 1 and %q", tc.env, code, errOut, tc.says)
		}
	}
}

// A process a wrapper started whose token was dropped (sudo, env -i) is
// told that: a wrapper runs, only the token is missing. "No herdr-pi
// wrapper is running in this pane" sent people to start a second one.
// status --json names it no_token, in the documented schema.
func TestStatusSaysTheTokenIsMissingNotTheWrapper(t *testing.T) {
	schema := compileSchema(t, "status")
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"outside Herdr", nil},
		// In a Herdr pane the registry is asked first: no entry there
		// does not make the wrapper that started us go away.
		{"in a Herdr pane with no registered wrapper", pane},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCmdEnv(t, tc.env...)
			run1, _ := startFake(t, e, "")
			e.env = append(e.env, control.EnvSocket+"="+run1.Endpoint.Socket)
			want := "HERDR_PI_CONTROL names the socket of a herdr-pi wrapper (" + run1.Endpoint.Socket + "), but HERDR_PI_CONTROL_TOKEN is unset, and the wrapper answers only to its token"
			code, _, errOut := run(t, e.env, "status")
			if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "no herdr-pi wrapper") {
				t.Errorf("status: exit %d, %q; want 1 and %q", code, errOut, want)
			}
			code, _, errOut = run(t, e.env, "waiting", "start", "--source", "s", "--id", "i")
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("waiting: exit %d, %q; want 1 and %q", code, errOut, want)
			}
			code, out, errOut := run(t, e.env, "status", "--json")
			validate(t, schema, out)
			var got struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || errOut != "" || got.Error.Code != noToken || !strings.Contains(got.Error.Message, want) {
				t.Errorf("status --json: exit %d, %v, %+v, stderr %q", code, err, got, errOut)
			}
		})
	}
}

// A process the wrapper started keeps HERDR_PI_CONTROL after the wrapper
// exited (a job the agent left running in the background, say). The
// wrapper is gone, not out of reach: no_wrapper, saying it exited, with
// or without the pane's Herdr environment, so a script does not retry.
func TestAWrapperThatExitedIsNotUnreachable(t *testing.T) {
	schema := compileSchema(t, "status")
	for _, tc := range []struct {
		name  string
		extra []string
	}{{"in the pane", pane}, {"outside Herdr", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCmdEnv(t, tc.extra...)
			r, _ := startFake(t, e, "w1:p1")
			env := append(e.env, r.Env()...)
			if code, _, errOut := run(t, env, "status"); code != 0 {
				t.Fatalf("status while the wrapper runs: exit %d, %s", code, errOut)
			}
			r.Close()

			exit, out, _ := run(t, env, "status", "--json")
			validate(t, schema, out)
			var got struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || exit != 1 || got.Error.Code != noWrapper || !strings.Contains(got.Error.Message, "has exited") {
				t.Errorf("status --json: exit %d, %v, %+v; want 1, code %s, a message saying the wrapper exited", exit, err, got.Error, noWrapper)
			}
			exit, _, errOut := run(t, env, "waiting", "stop", "--source", "deploy-hook", "--id", "42")
			want := "herdr-pi waiting stop: the herdr-pi wrapper named by HERDR_PI_CONTROL (" + r.Endpoint.Socket + ") has exited; start the agent under herdr-pi in this pane, e.g. 'herdr-pi wrap pi'\n"
			if exit != 1 || errOut != want {
				t.Errorf("waiting stop: exit %d, stderr %q; want 1, %q", exit, errOut, want)
			}

			// Its token dropped on the way as well (sudo, env -i): "a
			// wrapper runs, and answers only to its token" would send the
			// person looking for a token no wrapper wants.
			var tokenless []string
			for _, kv := range env {
				if !strings.HasPrefix(kv, control.EnvToken+"=") {
					tokenless = append(tokenless, kv)
				}
			}
			exit, out, _ = run(t, tokenless, "status", "--json")
			validate(t, schema, out)
			if err := json.Unmarshal([]byte(out), &got); err != nil || exit != 1 || got.Error.Code != noWrapper || !strings.Contains(got.Error.Message, "has exited") {
				t.Errorf("status --json without the token: exit %d, %v, %+v; want 1, code %s, a message saying the wrapper exited", exit, err, got.Error, noWrapper)
			}
			exit, _, errOut = run(t, tokenless, "waiting", "stop", "--source", "deploy-hook", "--id", "42")
			if exit != 1 || errOut != want {
				t.Errorf("waiting stop without the token: exit %d, stderr %q; want 1, %q", exit, errOut, want)
			}
		})
	}
}

// A wrapper that runs but does not answer in time (busy, its control
// socket crowded) is named as still running and not answering: "start the
// agent under herdr-pi in this pane" would put a second wrapper there.
// The code stays unreachable (a script may ask again).
func TestAWrapperThatRunsButDoesNotAnswerIsNotToldToStart(t *testing.T) {
	schema := compileSchema(t, "status")
	e := newCmdEnv(t, pane...)
	socket := filepath.Join(e.runtime, "silent.sock")
	if err := os.MkdirAll(e.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 8)
	go func() { // ends when the listener closes; the test waits for it
		for {
			c, err := ln.Accept()
			if err != nil {
				close(held)
				return
			}
			held <- c // taken, never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range held {
			c.Close()
		}
	})
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Process.Kill(); running.Wait() })
	pid := running.Process.Pid
	if _, err := control.PaneRegistry(e.runtime).Register(control.PaneKey("/tmp/herdr-test.sock", "w1:p1"), control.Endpoint{Socket: socket, Token: "t", PID: pid}); err != nil {
		t.Fatal(err)
	}
	says := fmt.Sprintf("the herdr-pi wrapper of Herdr pane w1:p1 (pid %d) runs but did not answer in time", pid)
	code, out, _ := run(t, e.env, "status", "--json")
	validate(t, schema, out)
	if code != 1 || !strings.Contains(out, `"code": "unreachable"`) || !strings.Contains(out, says) || strings.Contains(out, "herdr-pi wrap pi") {
		t.Errorf("status --json: exit %d\n%s\nwant 1, unreachable, %q, and no new wrapper", code, out, says)
	}
	// Named by HERDR_PI_CONTROL, its pid is not known: it is not called
	// pid 0, and what took the connection still runs.
	named := append(slices.Clone(e.env), "HERDR_PI_CONTROL="+socket, "HERDR_PI_CONTROL_TOKEN=t")
	code, _, errOut := run(t, named, "waiting", "stop", "--source", "s", "--id", "i")
	says = "herdr-pi waiting stop: the herdr-pi wrapper named by HERDR_PI_CONTROL did not answer in time at " + socket
	if code != 1 || !strings.HasPrefix(errOut, says) || strings.Contains(errOut, "pid 0") || strings.Contains(errOut, "herdr-pi wrap pi") {
		t.Errorf("waiting stop: exit %d, %q\nwant 1, %q, no pid 0 and no new wrapper", code, errOut, says)
	}
}
