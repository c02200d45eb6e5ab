package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// A script that took HERDR_PI_CONTROL from the agent's environment but its
// token from elsewhere (an older run, a saved file) is refused by a wrapper
// that runs. The error must say to take both from the same agent, not to
// start the agent under herdr-pi: that would put a second wrapper in the
// pane. status --json says it on stdout, code "refused", exit 1.
func TestAStaleTokenSaysWhereToTakeTheTokenFrom(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "exit 0")
	r.waitScreen("ready")
	reg := control.PaneRegistry(e.runtimeBase())
	var ep control.Endpoint
	h.WaitFor(t, 30*time.Second, "registered", func() bool {
		var err error
		ep, err = reg.Lookup(control.PaneKey(h.SocketPath(), h.PaneID()))
		return err == nil
	})

	// The script runs outside the pane (no Herdr variables), as a job
	// the agent started would after a cd into another environment.
	var env []string
	for _, kv := range e.env {
		if !strings.HasPrefix(kv, "HERDR_") || strings.HasPrefix(kv, "HERDR_PI_") {
			env = append(env, kv)
		}
	}
	env = append(env, control.EnvSocket+"="+ep.Socket, control.EnvToken+"=stale")

	for _, args := range [][]string{{"status"}, {"waiting", "start", "--source", "deploy-hook", "--id", "42"}} {
		code, stdout, stderr := herdrPiIn(t, env, args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "refused") ||
			strings.Contains(stderr, "start the agent under herdr-pi") || !strings.Contains(stderr, "from the same agent's environment") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, and the way out: both variables from the same agent's environment", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	code, stdout, stderr := herdrPiIn(t, env, "status", "--json")
	var got struct {
		Format string `json:"format"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 1 || stderr != "" ||
		got.Error.Code != "refused" || strings.Contains(got.Error.Message, "start the agent under herdr-pi") {
		t.Errorf("status --json: exit %d (%v), stdout %q, stderr %q; want 1, code refused without 'start the agent'", code, err, stdout, stderr)
	}

	// A pane registry entry that holds another token than its wrapper's
	// (no wrapper writes one; a copied or edited file does): a pane hook
	// is told to start the agent again, which registers it anew.
	key := control.PaneKey(h.SocketPath(), h.PaneID())
	if _, err := reg.Register(key, control.Endpoint{Socket: ep.Socket, Token: "stale", PID: ep.PID}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = herdrPiIn(t, e.env, "waiting", "stop", "--source", "deploy-hook", "--id", "42")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "the wrapper of Herdr pane w1:p1 (pid ") ||
		!strings.Contains(stderr, "its pane registry entry") || strings.Contains(stderr, "in this pane, e.g.") {
		t.Errorf("registry entry with another token: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Put the wrapper's own entry back, alone: it removes only its own at
	// exit.
	if err := os.Remove(filepath.Join(reg.Dir, key)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(key, ep); err != nil {
		t.Fatal(err)
	}
	r.send("\r")
	r.finish(0, true)
}

// A job the agent of an earlier run left behind keeps that wrapper's
// HERDR_PI_CONTROL; in its Herdr pane a new wrapper runs now. "Start the
// agent under herdr-pi in this pane" would put a second one there: the
// error names the pane's running wrapper and how to reach it.
func TestAJobOfAnEarlierRunIsShownThePanesWrapper(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	reg := control.PaneRegistry(e.runtimeBase())
	key := control.PaneKey(h.SocketPath(), h.PaneID())
	lookup := func() control.Endpoint {
		var ep control.Endpoint
		h.WaitFor(t, 30*time.Second, "registered", func() bool {
			var err error
			ep, err = reg.Lookup(key)
			return err == nil
		})
		return ep
	}
	r1 := e.wrap("print one\\r\\n", "readline", "exit 0")
	r1.waitScreen("one")
	old := lookup()
	r1.send("\r")
	r1.finish(0, true)
	r2 := e.wrap("print two\\r\\n", "readline", "exit 0")
	r2.waitScreen("two")
	now := lookup()

	env := append(append([]string{}, e.env...), control.EnvSocket+"="+old.Socket, control.EnvToken+"="+old.Token)
	want := fmt.Sprintf("the wrapper of Herdr pane w1:p1 now is pid %d", now.PID)
	for _, args := range [][]string{{"status"}, {"waiting", "start", "--source", "deploy-hook", "--id", "42"}} {
		code, stdout, stderr := herdrPiIn(t, env, args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "has exited") || !strings.Contains(stderr, want) ||
			strings.Contains(stderr, "start the agent under herdr-pi") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and %q, not 'start the agent'", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
	// The way out works: without the two variables the pane's wrapper answers.
	if code, _, stderr := herdrPiIn(t, e.env, "status"); code != 0 {
		t.Errorf("status without the old variables: exit %d: %s", code, stderr)
	}
	r2.send("\r")
	r2.finish(0, true)
}
