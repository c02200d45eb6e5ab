package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
)

// These tests run fully inspectable mode whole (see inspectable_test.go)
// while its run is cut short from outside: `herdr-pi close` on the working
// run, the owner Pi killed, Herdr gone.

// `herdr-pi close <run>` while an agent's turn runs in its tab
// (docs/inspectable.md): the tab and the workspace close, the cut turn is
// handed back and carries on in the owner, and the next agent's prompt
// opens a new workspace, which closes when the run completes.
func TestFullyInspectableCloseWhileTheRunWorks(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`const a = await agent(%q, { label: "waiter" }); const b = await agent(%q, { label: "seeker" }); return a + " | " + b;`, fiTaskHang, fiTask2))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	out, code := fi.herdrPi(t, "close", fi.run().ID[:8])
	t.Logf("close: exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	if ex := fi.s.WaitExited(t, panes[0], 30*time.Second); !ex.Closed {
		t.Fatalf("the turn's pane ended %+v", ex)
	}
	if got := fi.result(); got != "owner: noted | "+fiReply2 {
		t.Fatalf("the run's result is %q (Herdr saw %q)", got, fi.sequence(t))
	}
	lvWait(t, "the second workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) >= 2 })
	got := fi.sequence(t)
	t.Logf("Herdr saw %q", got)
	if n := len(lvCalls(fi.s, "workspace.create")); n != 2 {
		t.Fatalf("workspaces created %d, want 2: %q", n, got)
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}

// The owner Pi crashes (SIGKILL) while an agent's turn runs in its tab: its
// wrapper closes the tab and the workspace, and leaves nothing behind.
func TestFullyInspectableOwnerPiKilled(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "waiter" });`, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	if err := syscall.Kill(fi.ownerPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, err := fi.owner.ExitCode(lvLong)
	t.Logf("the owner's wrapper exited %d (%v)", code, err)
	fi.wantEverythingClosed(t, panes[0])
}

// Herdr goes away, the tab's Pi with it, while an agent's turn runs there
// (docs/inspectable.md, One prompt, one tab, 7): the turn is handed back
// and carries on in the owner; the next agent's prompt finds no Herdr and
// fails, and so does the run. The workspace Herdr could not close stays in
// herdr-pi's ledger, the one thing left behind, for `herdr-pi close`; so
// does the turn's tab Herdr did not close (a Herdr that comes back brings
// both back), unless Herdr said the tab's pane closed before it went.
func TestFullyInspectableHerdrGoesAway(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`const a = await agent(%q, { label: "waiter" }); const b = await agent(%q, { label: "seeker" }); return a + " | " + b;`, fiTaskHang, fiTask2))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	fi.s.Close()
	lvWait(t, "the run to end", func() bool { st := fi.run().State; return st != "running" && st != "pending" })
	st := fi.run()
	if st.State != "failed" {
		t.Fatalf("the run ended %s", st.State)
	}
	if ts := lvTranscript(t, st.sessionFile(t, "waiter")); len(ts) == 0 || ts[len(ts)-1].Text != "owner: noted" {
		t.Fatalf("the waiter's turn did not carry on in the owner: %+v", ts)
	}
	fi.quitOwner()
	out, code := fi.herdrPi(t, "close", st.ID[:8], "--json")
	if code != 1 || !strings.Contains(out, `"kind": "workspace"`) {
		t.Fatalf("close with Herdr gone: exit %d\n%s", code, out)
	}
	fi.wantLeft("the workspace's ledger record, and the turn's tab's at most", func(left []string) bool {
		kinds := map[string]int{}
		for _, f := range left {
			var r handoff.Record
			b, err := os.ReadFile(f)
			if !strings.Contains(f, "/opened/") || err != nil || json.Unmarshal(b, &r) != nil {
				return false
			}
			kinds[r.Kind]++
		}
		return kinds["workspace"] == 1 && kinds["tab"] <= 1 && len(left) == 1+kinds["tab"]
	})
}

// The owner's wrapper is killed (SIGKILL) while an agent's turn runs in its
// tab: nothing could close the tab or the workspace then, and `herdr-pi
// close <run>` closes both.
func TestFullyInspectableOwnerWrapperKilled(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "waiter" });`, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	id := fi.run().ID
	wrapper := lvParent(t, lvParent(t, fi.ownerPID()))
	if err := syscall.Kill(wrapper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = fi.owner.ExitCode(lvLong)
	out, code := fi.herdrPi(t, "close", id[:8])
	t.Logf("close: exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	if ex := fi.s.WaitExited(t, panes[0], 30*time.Second); !ex.Closed {
		t.Fatalf("the turn's pane ended %+v", ex)
	}
	if c := lvCalls(fi.s, "workspace.close"); len(c) != 1 {
		t.Fatalf("workspace.close calls %d (Herdr saw %q)", len(c), fi.sequence(t))
	}
}

// Escape in the tab aborts the agent's turn (docs/inspectable.md, One
// prompt, one tab, 4): the tab closes and the owner carries the turn on
// locally, where the run completes; the workspace closes.
func TestFullyInspectableAbortInTheTabCarriesOnLocally(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "waiter" });`, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	fi.s.WaitForText(t, panes[0], "Working", lvLong)
	if err := herdr.NewClient(fi.s.SocketPath()).PaneSendInput(t.Context(), panes[0], "", "Escape"); err != nil {
		t.Fatal(err)
	}
	if got := fi.result(); got != "owner: noted" {
		t.Fatalf("the run's result is %q (Herdr saw %q)", got, fi.sequence(t))
	}
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	t.Logf("Herdr saw %q", fi.sequence(t))
	fi.quitOwner()
	fi.wantNothingLeft()
}
