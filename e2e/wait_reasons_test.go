package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Two scripts' waits through `herdr-pi wrap` and real `herdr-pi waiting`:
// the second opens while the first keeps the pane blocked, and is told by
// its label (the first's toast names its label too). When the first, which
// turned the pane blocked, stops, Herdr's pane says what it waits for now —
// the second's label — re-reported as blocked, with no working or idle in
// between and no further toast, and `status` names the same reason.
func TestTheReportMovesToTheWaitStillOpen(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "exit 0")
	r.waitScreen("ready")
	pane := h.PaneID()
	h.WaitFor(t, 30*time.Second, "idle", func() bool { return h.Pane(pane).Status == "idle" })
	waiting := func(args ...string) {
		t.Helper()
		if code, _, stderr := herdrPiIn(t, e.env, append([]string{"waiting"}, args...)...); code != 0 {
			t.Fatalf("waiting %v: exit %d: %s", args, code, stderr)
		}
	}
	reports := func() string {
		var out []string
		for _, c := range h.Reports(pane) {
			if c.Accepted {
				out = append(out, c.State+"("+c.Message+")")
			}
		}
		return strings.Join(out, " ")
	}
	toasts := func() []string {
		var out []string
		for _, n := range h.Notifications() {
			out = append(out, n.Title+" | "+n.Body)
		}
		return out
	}

	waiting("start", "--source", "deploy", "--id", "42", "--label", "approve the deploy")
	h.WaitFor(t, 30*time.Second, "the first toast", func() bool { return len(h.Notifications()) == 1 })
	waiting("start", "--source", "lint", "--id", "1", "--label", "fix the lint")
	h.WaitFor(t, 30*time.Second, "the second toast", func() bool { return len(h.Notifications()) == 2 })
	waiting("stop", "--source", "deploy", "--id", "42")
	h.WaitFor(t, 30*time.Second, "the report naming the wait still open", func() bool {
		return strings.HasSuffix(reports(), "blocked(fix the lint)")
	})
	got := reports()
	if _, after, _ := strings.Cut(got, "blocked(approve the deploy)"); after != " blocked(fix the lint)" {
		t.Errorf("reports %q: want blocked(approve the deploy), then blocked(fix the lint) and nothing between", got)
	}
	st, err := askStatusJSON(e.env)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "blocked" || st.Message != "fix the lint" || len(st.Reasons) != 1 || !st.Reasons[0].Reported || st.Reasons[0].Key != "hook:lint:1" {
		t.Errorf("status: state %s, message %q, reasons %+v; want blocked on hook:lint:1, %q", st.State, st.Message, st.Reasons, "fix the lint")
	}
	waiting("stop", "--source", "lint", "--id", "1")
	h.WaitFor(t, 30*time.Second, "idle again", func() bool { return h.Pane(pane).Status == "idle" })
	r.send("\r")
	r.finish(0, true) // wrap drains its queued toasts before it exits
	n := toasts()
	if len(n) != 2 || !strings.Contains(n[0], "needs your input | approve the deploy · ") || !strings.Contains(n[1], "needs your input | fix the lint · ") {
		t.Errorf("toasts %q: want one per wait, each named by its label", n)
	}
}
