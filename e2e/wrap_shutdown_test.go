package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// The pane is released first at exit, before the control socket closes: a
// probe connection still open when the agent ends (here a background
// process outlives it) closes after the release, so the reason it held
// never reads as idle in Herdr just before the pane is given back.
func TestReleaseComesBeforeTheControlSocketCloses(t *testing.T) {
	dir := t.TempDir()
	fake := herdrtest.Start(t)
	env := linkCommands(t, dir, fake.Env()...)
	goOn := filepath.Join(dir, "go-on")
	script := `fakeagent -e "trap HUP;probe;event herdr:blocked {\"active\":true,\"label\":\"held\"};sleep 5s" & ` +
		`while [ ! -e '` + goOn + `' ]; do sleep 0.05; done`
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "sh", "-c", script}, Env: env, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	// The agent ends only once Herdr shows it blocked.
	fake.WaitFor(t, 2*time.Minute, "the blocked report", func() bool {
		for _, c := range fake.Reports(fake.PaneID()) {
			if c.State == "blocked" {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("wrap: status %d, %v", status, err)
	}
	var calls []string
	for _, c := range fake.AgentCalls(fake.PaneID()) {
		calls = append(calls, strings.TrimSuffix(strings.TrimPrefix(c.Method, "pane."), "_agent")+" "+c.State)
	}
	// Whatever the screen said before the probe spoke, the last word before
	// the release is the blocked state.
	if got := strings.Join(calls, ", "); !strings.HasSuffix(got, "report blocked, release ") {
		t.Fatalf("Herdr heard %q, want the blocked state kept until the release", got)
	}
}
