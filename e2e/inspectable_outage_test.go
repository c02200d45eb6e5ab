package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Herdr crashes while an agent's turn runs in its tab and comes back a
// few seconds later, its panes kept: the wrapper follows the tab again, so
// closing it after the outage hands the turn back (it carries on in the
// owner), the next agent's turn opens its tab, and the run completes and
// closes its workspace, leaving nothing behind.
func TestFullyInspectableHerdrOutageThenTabClosed(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`const a = await agent(%q, { label: "waiter" }); const b = await agent(%q, { label: "seeker" }); return a + " | " + b;`, fiTaskHang, fiTask2))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	fi.s.Crash()
	time.Sleep(3 * time.Second)
	if err := fi.s.Restart(); err != nil {
		t.Fatal(err)
	}
	fi.s.WaitFor(t, lvLong, "the wrapper's subscriptions again", func() bool { return fi.s.Streams() >= 1 })
	time.Sleep(2 * time.Second)
	if err := herdr.NewClient(fi.s.SocketPath()).PaneClose(t.Context(), panes[0]); err != nil {
		t.Fatal(err)
	}
	if got := fi.result(); got != "owner: noted | "+fiReply2 {
		t.Fatalf("the run's result is %q (Herdr saw %q)", got, fi.sequence(t))
	}
	lvWait(t, "the workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) >= 1 })
	fi.quitOwner()
	fi.wantNothingLeft()
}
