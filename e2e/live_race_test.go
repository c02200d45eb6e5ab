package e2e

import (
	"strings"
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

// herdr-pi close started as the pane's turn comes to its end, so the
// handback at rest (idle) and close's closing of the pane race. Whichever
// wins, close exits 0 with nothing failed, open ends with one handback
// (idle or closed) and exit 0, the attempt is back with its owner with
// the pane's reply, and nothing stays open or left behind.
func TestCloseRacesALiveHandoffsHandback(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro, _ := lr.handOff(lvLabel)
	lvWait(t, "the pane's turn at its end", func() bool {
		return strings.Contains(ro.out.String(), `"event":"idle"`)
	})
	out, code := lr.herdrPi(t, "close", st.ID)
	res, hb := ro.handback(t)
	t.Logf("close: exit %d\n%s\nopen: exit %d, %s", code, out, res.code, events(ro.lines(t)))
	if code != 0 || res.code != 0 || hb.Event != "handback" || (hb.Reason != "idle" && hb.Reason != "closed") || !hb.Transferred || hb.LeftOpen != "" {
		t.Fatalf("close: exit %d\n%s\nopen: exit %d, handback %+v\n%s", code, out, res.code, hb, res.stderr)
	}
	if got := lr.result(); got != lvPaneReply && got != lvLocalReply {
		t.Fatalf("the workflow's result is %q", got)
	}
	if pn := lr.s.Pane("w1:p2"); pn.Exists {
		t.Fatalf("pane w1:p2 stays open: %+v", pn)
	}
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}
