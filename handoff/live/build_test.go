package live

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// herdr-pi was upgraded under a running owner: the handoff's pane starts
// the binary now at the path the wrapper found itself at, another build
// than the wrapper's own. The handoff goes on (the two speak the control
// socket's versioned protocol, whose skew each side names), but the log
// says which build runs in the pane, so a difference in behaviour can be
// traced to it. The same build says nothing.
func TestAPaneRunningAnotherBuildIsLogged(t *testing.T) {
	for _, other := range []bool{true, false} {
		t.Run(fmt.Sprintf("other %v", other), func(t *testing.T) {
			var mu sync.Mutex
			var logged []string
			r := newRig(t, func(c *Config) {
				c.Logf = func(f string, a ...any) {
					mu.Lock()
					logged = append(logged, fmt.Sprintf(f, a...))
					mu.Unlock()
				}
			})
			build := control.Build()
			if other {
				build = "v9.9.9 (0123456789ab)"
			}
			agent := startAgent(t, "")
			x := r.ask(control.HandoffAsk{})
			r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
			pane := r.s.Inputs()[0].PaneID
			startPaneWrapperOf(t, r, pane, agent.pid, build)
			if p := x.next(t, control.ProgressLaunched); p.PaneID != pane {
				t.Fatalf("launched %+v", p)
			}
			mu.Lock()
			said := strings.Join(logged, "\n")
			mu.Unlock()
			told := strings.Contains(said, "pane "+pane+" runs herdr-pi v9.9.9 (0123456789ab)") && strings.Contains(said, control.Build())
			if other && !told {
				t.Fatalf("the log does not say pane %s runs another build (v9.9.9) than the wrapper (%s):\n%s", pane, control.Build(), said)
			}
			if !other && strings.Contains(said, " runs herdr-pi ") {
				t.Fatalf("the log names a build for a pane that runs the wrapper's own:\n%s", said)
			}
		})
	}
}

// startPaneWrapperOf plays the pane's wrapper as startPaneWrapper does,
// but one of build (its hello and status name it): a control server of
// its own, registered for the pane. It stays until the test ends.
func startPaneWrapperOf(t *testing.T, r *rig, pane string, childPID int, build string) {
	t.Helper()
	w := &paneWrapper{st: control.Status{State: "idle", SessionFile: sessionFile, ChildPID: childPID}}
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "hpb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := control.Listen(control.Config{Path: filepath.Join(dir, "c.sock"), Token: token, Events: w, Requests: w, Build: build, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	un, err := control.PaneRegistry(r.runtime).Register(control.PaneKey(r.s.SocketPath(), pane),
		control.Endpoint{Socket: srv.Path(), Token: token, PID: os.Getpid(), PaneID: pane, HerdrSocket: r.s.SocketPath()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(un)
}
