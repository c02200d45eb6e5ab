package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// silentWrapper answers status with nothing filled in: a wrapper in its
// first moments, before any state or reason was reported.
type silentWrapper struct{ fakeWrapper }

func (*silentWrapper) Status() control.Status { return control.Status{} }

// A wrapper that knows nothing yet is "unknown" with no reasons: `status
// --json` says so in the documented shape (state is one of four words,
// reasons is [] and never null, docs/status.md), and the text says the
// same word.
func TestStatusOfAWrapperThatKnowsNothingYet(t *testing.T) {
	e := newCmdEnv(t, pane...)
	w := &silentWrapper{}
	run1, err := control.Start(control.RunConfig{RuntimeBase: e.runtime, PaneID: "w1:p1", HerdrSocket: "/tmp/herdr-test.sock", Events: w, Requests: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run1.Close() })

	code, out, errOut := run(t, e.env, "status", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("status --json: exit %d, stderr %q", code, errOut)
	}
	validate(t, compileSchema(t, "status"), out)
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got["state"] != "unknown" {
		t.Errorf("state = %#v, want \"unknown\":\n%s", got["state"], out)
	}
	if r, ok := got["reasons"].([]any); !ok || len(r) != 0 {
		t.Errorf("reasons = %#v, want []:\n%s", got["reasons"], out)
	}

	code, out, _ = run(t, e.env, "status")
	if code != 0 || !strings.Contains(out, "state    unknown\n") || !strings.Contains(out, "reasons  none open\n") {
		t.Errorf("status: exit %d:\n%s", code, out)
	}
}

// A named pipe where the pane's registry entry should be (planted by
// mistake: mkfifo with a wrong path) must not hang a pane hook's status:
// it is refused at once, named, with the way out. The test takes the
// pipe's other end only when status opened it and waits there, so a
// status that waits still ends (reading nothing) and fails here.
func TestStatusDoesNotWaitOnAPipeInTheRegistry(t *testing.T) {
	e := newCmdEnv(t, pane...)
	reg := control.PaneRegistry(e.runtime)
	// The registry directory, private, as a wrapper makes it.
	unregister, err := reg.Register("placeholder", control.Endpoint{Socket: "/tmp/hp-none.sock", Token: "t", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	unregister()
	fifo := filepath.Join(reg.Dir, control.PaneKey("/tmp/herdr-test.sock", "w1:p1"))
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var code int
	var out string
	if testenv.WaitsOnPipe(fifo, func() { code, out, _ = run(t, e.env, "status", "--json") }) {
		t.Errorf("status opened the pipe and waited for a writer")
	}
	var got struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if code != 1 || got.Error.Code != unreachable || !strings.Contains(got.Error.Message, fifo+": it is a named pipe (FIFO), not a regular file; remove it") {
		t.Errorf("exit %d, %+v; want 1, unreachable and the pipe named", code, got.Error)
	}
}
