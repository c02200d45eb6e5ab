package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Report first, then toast: a "needs your input" toast reaches Herdr only
// once Herdr has the blocked report, so the pane never shows idle while
// the toast says otherwise. A Herdr that takes 300 ms over each report
// makes the order plain: without the wait the toast comes first.
func TestWrapToastsOnlyAfterTheBlockedReport(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 300 * time.Millisecond, Methods: []string{"pane.report_agent"}})
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = append(env, h.Env()...)
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t,
		"print ready\\r\\n", "sleep 1s", "run herdr-pi waiting start --source hook --id q", "sleep 3s")}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
	var blockedAt time.Time
	for _, c := range h.Reports(h.PaneID()) {
		if c.State == "blocked" && c.Applied {
			blockedAt = c.At
			break
		}
	}
	notes := h.Notifications()
	if blockedAt.IsZero() || len(notes) != 1 {
		t.Fatalf("blocked report at %v, notifications %+v: want both", blockedAt, notes)
	}
	if !notes[0].At.After(blockedAt) {
		t.Errorf("the toast reached Herdr %v before the blocked report was applied", blockedAt.Sub(notes[0].At))
	}
}
