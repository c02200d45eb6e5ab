package commands

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/handoff"
)

// controlOffVar is the variable a wrapper whose control socket did not
// start gives its child (written out, so the test does not lean on the
// constant it checks).
const controlOffVar = "HERDR_PI_CONTROL_ERROR"

// A wrapper whose control socket could not start (its runtime directory
// full, read-only, not ours) still runs the agent, and tells it why.
// status and waiting in that agent (and the hooks it runs) name that
// cause, not "no wrapper is registered … another XDG_RUNTIME_DIR", and
// status --json says no_control, which a hook can tell from no_wrapper.
func TestStatusNamesAWrapperThatRunsWithoutItsControlSocket(t *testing.T) {
	schema := compileSchema(t, "status")
	reason := "control: create private directory /run/user/1000/herdr-pi-1000/run-1-2: no space left on device"
	pid := strconv.Itoa(os.Getpid())
	want := "the herdr-pi wrapper of this pane (pid " + pid + ") runs without its control socket: " + reason + "; "
	for _, tc := range []struct {
		name  string
		extra []string
	}{{"in a Herdr pane, none registered", pane}, {"outside Herdr", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCmdEnv(t, append(tc.extra, controlOffVar+"="+pid+": "+reason)...)
			code, _, errOut := run(t, e.env, "status")
			if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "herdr-pi doctor runtime") || strings.Contains(errOut, "no herdr-pi wrapper") {
				t.Errorf("status: exit %d, %q; want 1 and %q, pointing at doctor", code, errOut, want)
			}
			code, _, errOut = run(t, e.env, "waiting", "start", "--source", "s", "--id", "i")
			if code != 1 || !strings.Contains(errOut, "herdr-pi waiting start: "+want) {
				t.Errorf("waiting: exit %d, %q; want 1 and %q", code, errOut, want)
			}
			code, out, errOut := run(t, e.env, "status", "--json")
			validate(t, schema, out)
			var got struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || errOut != "" || got.Error.Code != "no_control" || !strings.Contains(got.Error.Message, want) {
				t.Errorf("status --json: exit %d, %v, %+v, stderr %q; want 1, code no_control", code, err, got.Error, errOut)
			}
		})
	}
}

// The variable comes from the environment, which anything may set: what
// it says reaches the terminal cleaned of control characters, and
// bounded.
func TestAControlErrorIsShownCleanAndBounded(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	reason := "evil\x1b]0;title\x07 \u202e" + strings.Repeat("x", 5000) + "\xff"
	e := newCmdEnv(t, controlOffVar+"="+pid+": "+reason)
	code, _, errOut := run(t, e.env, "status")
	if code != 1 || !strings.Contains(errOut, "runs without its control socket: evil ]0;title") {
		t.Fatalf("status: exit %d, %q", code, errOut)
	}
	if strings.ContainsAny(errOut, "\x1b\x07\u202e") || !utf8.ValidString(errOut) {
		t.Errorf("control characters or invalid UTF-8 reached the terminal: %q", errOut)
	}
	if len(errOut) > 1000 {
		t.Errorf("the message is %d bytes: the reason is not bounded", len(errOut))
	}
}

// A process the wrapper started that outlived it (a background job)
// keeps the variable: that wrapper is gone, so no_wrapper and "has
// exited", as for HERDR_PI_CONTROL. A variable without a pid (set by
// hand, or by another tool) still names the cause.
func TestAControlErrorOfAnExitedWrapper(t *testing.T) {
	dead := strconv.Itoa(deadPIDForStatus(t))
	e := newCmdEnv(t, controlOffVar+"="+dead+": control: read-only file system")
	code, out, _ := run(t, e.env, "status", "--json")
	var got struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got.Error.Code != noWrapper ||
		!strings.Contains(got.Error.Message, "the herdr-pi wrapper (pid "+dead+") that ran without its control socket has exited") {
		t.Errorf("status --json: exit %d, %v, %+v; want 1, no_wrapper, has exited", code, err, got.Error)
	}
	e = newCmdEnv(t, controlOffVar+"=no space left on device")
	code, _, errOut := run(t, e.env, "status")
	if code != 1 || !strings.Contains(errOut, "the herdr-pi wrapper of this pane runs without its control socket: no space left on device; ") {
		t.Errorf("no pid: exit %d, %q", code, errOut)
	}
}

// What wrap gives its child: the reason and its own pid when the socket
// did not start, cleaned and bounded, and never the socket or token of a
// wrapper around it (nested: herdr-pi wrap bash, then herdr-pi wrap pi in
// it), which would send the agent's waits to another agent's wrapper.
// Once the socket runs, an inherited reason is dropped in turn. The file
// the pane's opener named for this wrapper's Pi is not passed on either: a
// wrapper nested in the agent must not say the pane's Pi started.
func TestWrapTellsItsChildWhyItHasNoControlSocket(t *testing.T) {
	outer := []string{"PATH=/bin", controlOffVar + "=1: old", "HERDR_PI_CONTROL=/outer.sock", "HERDR_PI_CONTROL_TOKEN=outer",
		handoff.StartedFileEnv + "=/d/open-1.started"} // its opener's, not the child's

	long := "control: create private directory /x\x1b[2J\n: " + strings.Repeat("é", 400)
	got := childControlEnv(outer, nil, errors.New(long), 4321)
	if len(got) != 2 || got[0] != "PATH=/bin" || !strings.HasPrefix(got[1], controlOffVar+"=4321: control: create private directory /x [2J : éé") {
		t.Fatalf("child env %q", got)
	}
	if v := got[1]; len(v) > len(controlOffVar)+len("=4321: ")+maxControlError || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") || strings.ContainsAny(v, "\x1b\n") {
		t.Errorf("the reason is not cleaned and bounded: %d bytes, %q", len(v), v)
	}

	e := newCmdEnv(t)
	r, _ := startFake(t, e, "")
	got = childControlEnv(outer, r, nil, 4321)
	want := append([]string{"PATH=/bin"}, r.Env()...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("child env %q, want %q", got, want)
	}
}
