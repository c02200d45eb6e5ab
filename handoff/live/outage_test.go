package live

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"golang.org/x/sys/unix"
)

// Herdr went away while a handoff's Pi worked (it crashed, or was quit),
// and its pane's Pi with it: the attempt comes back, but the pane could
// not be closed, and a Herdr that comes back brings its panes back. The
// pane stays in the ledger, as what any other close Herdr did not do
// leaves there, and the handback says so: once Herdr is back, herdr-pi
// close closes it. One policy with a fully inspectable run's workspace
// (TestARunsWorkspaceHerdrWasGoneToCloseIsClosedOnceHerdrIsBack).
func TestAPaneHerdrWasGoneToCloseIsClosedOnceHerdrIsBack(t *testing.T) {
	r := newRig(t)
	agent := startAgent(t, "")
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane, agent.pid)
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	r.s.Crash()
	if err := unix.PidfdSendSignal(agent.fd, unix.SIGHUP, nil, 0); err != nil {
		t.Fatal(err)
	}
	hb := x.wait(t)
	if hb.Reason != control.HandbackExited || !hb.Transferred || hb.Error != "" {
		t.Fatalf("handback %+v, want the attempt back", hb)
	}
	for who, said := range map[string]string{"the asker": hb.LeftOpen, "the owner": r.o.handbacksSoFar()[0].LeftOpen} {
		if !strings.Contains(said, "pane "+pane) || !strings.Contains(said, "Herdr did not answer") || !strings.Contains(said, "herdr-pi close r1") {
			t.Errorf("%s was told %q of what may stay open, want pane %s, that Herdr did not answer, and herdr-pi close r1", who, said, pane)
		}
	}
	recs, err := handoff.LedgerAt(r.runtime).List()
	if err != nil || len(recs) != 1 || recs[0].Thing() != "pane "+pane {
		t.Fatalf("the ledger after a handback Herdr was gone for: %+v %v, want pane %s kept for herdr-pi close", recs, err, pane)
	}
	if err := r.s.Restart(); err != nil {
		t.Fatal(err)
	}
	closed, failed := handoff.CloseRun(context.Background(), handoff.LedgerAt(r.runtime), func(s string) handoff.Herdr { return herdr.NewClient(s) }, recs, long)
	if len(failed) != 0 || !slices.Equal(closed, []handoff.Closed{{Kind: "pane", ID: pane, How: "closed"}}) {
		t.Fatalf("close once Herdr is back: %+v, failed %+v; want pane %s closed", closed, failed, pane)
	}
	if st := r.s.Pane(pane); st.Exists {
		t.Fatalf("pane %s is still open", pane)
	}
}

// The same for a fully inspectable run: Herdr is gone at the wrapper's
// end, so neither the turn's tab nor the run's workspace can close. Both
// stay in the ledger, and herdr-pi close closes them once Herdr is back.
func TestARunsWorkspaceHerdrWasGoneToCloseIsClosedOnceHerdrIsBack(t *testing.T) {
	r := newRig(t)
	agent := startAgent(t, "")
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "q1", RunID: "r1", SessionID: "s1", Label: "finder", Turn: true})
	r.s.WaitFor(t, long, "the turn's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane, agent.pid)
	r.waitFor("the turn to launch", func() bool {
		r.o.mu.Lock()
		defer r.o.mu.Unlock()
		return slices.Contains(r.o.states, control.PaneLaunched)
	})
	r.s.Crash()
	r.svc.Close()
	recs, err := handoff.LedgerAt(r.runtime).List()
	var kept []string
	for _, rec := range recs {
		kept = append(kept, rec.Thing())
	}
	slices.Sort(kept)
	ws, _, _ := strings.Cut(pane, ":")
	if err != nil || len(kept) != 2 || kept[1] != "workspace "+ws || !strings.HasPrefix(kept[0], "tab "+ws+":") {
		t.Fatalf("the ledger after a run's end Herdr was gone for: %q %v, want its workspace %s and the turn's tab", kept, err, ws)
	}
	if err := r.s.Restart(); err != nil {
		t.Fatal(err)
	}
	closed, failed := handoff.CloseRun(context.Background(), handoff.LedgerAt(r.runtime), func(s string) handoff.Herdr { return herdr.NewClient(s) }, recs, long)
	if len(failed) != 0 || len(closed) < 2 || closed[0] != (handoff.Closed{Kind: "workspace", ID: ws, How: "closed"}) || closed[1].How != "with workspace "+ws {
		t.Fatalf("close once Herdr is back: %+v, failed %+v; want workspace %s closed, its tab with it", closed, failed, ws)
	}
}
