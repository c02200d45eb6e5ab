package e2e

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Two `herdr-pi open` of one live attempt started in the same instant,
// from two panes, before either was ordered: one asks, the other joins
// the same handoff. One pane opens, both follow it, and both end with the
// same handback, exit 0.
func TestLiveHandoffTwoOpensStartedTogether(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	other, err := herdr.NewClient(lr.s.SocketPath()).PaneSplit(t.Context(), herdr.Split{TargetPaneID: "w1:p1", Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	splits := len(lvCalls(lr.s, "pane.split"))
	// Started back to back, neither waiting for the other's order.
	ros := [2]*runningOpen{
		lr.start(t, lr.s, nil, st.ID, lvLabel, "--json"),
		lr.start(t, lr.s, []string{"HERDR_PANE_ID=" + other.PaneID}, st.ID, lvLabel, "--json"),
	}
	for _, ro := range ros {
		ro.waitEvent(t, "ordered")
	}
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	lr.openGate()
	var hbs [2]lvLine
	for i, ro := range ros {
		res, hb := ro.handback(t)
		if res.code != 0 || hb.Reason != "idle" || !hb.Transferred {
			t.Fatalf("open %d: exit %d, handback %+v\n%s", i, res.code, hb, res.stderr)
		}
		hbs[i] = hb
	}
	if hbs[0].Handoff != hbs[1].Handoff {
		t.Fatalf("two handoffs for one attempt: %+v and %+v", hbs[0], hbs[1])
	}
	if n := len(lvCalls(lr.s, "pane.split")) - splits; n != 1 {
		t.Fatalf("%d panes split for one attempt", n)
	}
	lr.wantResult(t, lvPaneReply)
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}
