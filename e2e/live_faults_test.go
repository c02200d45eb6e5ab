package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// These tests run the live handoff whole (see live_test.go) while
// something fails: Herdr refuses to close the pane, Herdr goes away, the
// owner's wrapper is killed.

// pinPID holds a pidfd on pid for the test's life, so that whether the
// process still runs is never asked of a pid another process reused.
func pinPID(t *testing.T, pid int) (running func() bool) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func() bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return err == nil && n == 0
	}
}

// Herdr fails pane.close at the idle handback: the pane's Pi must not go
// on beside the owner, which now writes the same session file. The wrapper
// stops it before the owner has the attempt back; the pane stays in
// herdr-pi's ledger, and `herdr-pi close` closes it.
func TestLiveHandoffPaneCloseFailsStillStopsThePanesPi(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneTool = false })
	lr.startOwner()
	lr.s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.close"}, Count: 1,
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom"}}})
	ro, launched := lr.handOff(lvLabel)
	panePi := pinPID(t, launched.AgentPID)
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "idle" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if panePi() {
		t.Fatalf("the pane's Pi (pid %d) still runs after the handback: it and the owner share the session file", launched.AgentPID)
	}
	// The person is told, by open and in the owner, without the log:
	// the handback succeeded, and the pane stays for herdr-pi close.
	if !strings.Contains(hb.LeftOpen, "pane "+launched.PaneID) || !strings.Contains(hb.LeftOpen, "herdr-pi close ") || hb.Error != "" {
		t.Fatalf("handback %+v: want left_open naming pane %s and herdr-pi close, and no error", hb, launched.PaneID)
	}
	lr.owner.WaitText(t, "stays open in Herdr", lvLong)
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q", got)
	}
	// The pane's command ended with its Pi (the pane goes with it, here),
	// but the wrapper could not know: the ledger keeps the pane for close.
	if ex, ok := lr.s.Exited(launched.PaneID); ok && ex.Closed {
		t.Fatalf("pane %s closed although Herdr refused to close it", launched.PaneID)
	}
	out, code := lr.herdrPi(t, "close", lr.run().ID, "--json")
	if code != 0 || !strings.Contains(out, `"id": "`+launched.PaneID+`"`) {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
}

// Herdr goes away, its panes with it, while the pane's Pi works: no event
// will say so, but the pane's Pi is gone, and the wrapper hands back
// (exited) at once. open ends, and the owner takes its session back and
// finishes the run locally.
func TestLiveHandoffHerdrGoesAway(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, _ := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.Close()
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "exited" || !hb.Transferred || !hb.Continued {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvLocalReply {
		t.Fatalf("the workflow's result is %q", got)
	}
}

// The owner's wrapper is killed while its attempt works in a pane: open
// says so — the wrapper's pid, the pane that still runs, and the command
// that closes it. `herdr-pi close` then closes the pane. (The owner Pi
// loses its terminal with its wrapper and is gone too.)
func TestLiveHandoffOwnerWrapperKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	st := lr.run()
	wrapper := lvParent(t, lvParent(t, lr.ownerPID()))
	if err := syscall.Kill(wrapper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	for _, want := range []string{
		"the owner's herdr-pi wrap (pid " + strconv.Itoa(wrapper) + ") died during the handoff",
		"pane " + launched.PaneID + " still runs",
		"herdr-pi close " + st.ID[:8],
	} {
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Fatalf("exit %d, stderr does not say %q:\n%s", res.code, want, res.stderr)
		}
	}
	out, code := lr.herdrPi(t, "close", st.ID, "--json")
	if code != 0 || !strings.Contains(out, `"id": "`+launched.PaneID+`"`) {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	if ex := lr.s.WaitExited(t, launched.PaneID, lvLong); !ex.Closed {
		t.Fatalf("pane %s ended %+v after close", launched.PaneID, ex)
	}
}

// open's stdout is a full disk: nobody can follow the handoff, so open
// gives it up at its first line, while the order is still held — no pane
// ever opens — and exits 1 with the write error. The owner keeps the
// attempt, whose turn goes on locally, and the workflow completes there.
func TestLiveHandoffOpenCannotWriteItsLines(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	ro := lr.startTo(t, lr.s, full, nil, lr.run().ID, lvLabel, "--json")
	res := ro.wait(t)
	if res.code != 1 || !strings.Contains(res.stderr, "no space left on device") || !strings.Contains(res.stderr, "gave the attempt back") {
		t.Fatalf("open > /dev/full: exit %d\n%s", res.code, res.stderr)
	}
	lr.openGate()
	if got := lr.result(); got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q, want the owner's own reply", got)
	}
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") || slices.Contains(m, "tab.create") {
		t.Fatalf("a pane opened for a handoff open gave up: %q", m)
	}
	lr.quitOwner()
	lr.wantNothingLeft()
}

// An open that joins the handoff the owner's menu asked for, and cannot
// write its lines (stdout is /dev/full), has nothing to give up: it exits
// 1 with the write error, says the handoff goes on and that herdr-pi close
// gives the attempt back — not that it gave the handoff up — and the
// handoff does go on: the pane opens when the turn ends, and the workflow
// completes with the pane's reply.
func TestLiveHandoffJoinedOpenCannotWriteItsLines(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open live session in Herdr pane") != 1 || list[0] != "Open live session in Herdr pane" {
		t.Fatalf("the running agent's actions: %q", list)
	}
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	res := lr.startTo(t, lr.s, full, nil, lr.run().ID, lvLabel).wait(t)
	if res.code != 1 || !strings.Contains(res.stderr, "no space left on device") || strings.Contains(res.stderr, "gave the handoff up") ||
		strings.Contains(res.stderr, "gave it up") || !strings.Contains(res.stderr, "goes on") || !strings.Contains(res.stderr, "herdr-pi close") {
		t.Fatalf("a joined open > /dev/full: exit %d\n%s", res.code, res.stderr)
	}
	lr.openGate()
	lr.s.WaitFor(t, lvLong, "the handoff's pane", func() bool { return len(lr.s.Inputs()) > 0 })
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
	lr.quitOwner()
	lr.wantNothingLeft()
}

// `herdr-pi close <run>` while a live handoff is ordered — the owner's
// turn still runs, no pane is open — does not say that nothing is open:
// it has the owner's wrapper give the handoff up, and says so. open hears
// the handback (aborted, by close); the attempt finishes in the owner,
// and no pane opens when its turn ends.
func TestCloseGivesUpAnOrderedHandoff(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json")
	ro.waitEvent(t, "ordered")
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	// The pending handoff is judged alive by the owner's wrapper's own run
	// directory (its control socket's), not one made for it; private.
	pending, err := handoff.LedgerAt(filepath.Join(lr.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()))).Pendings()
	if err != nil || len(pending) != 1 || pending[0].Run != st.ID || pending[0].RunDir == "" {
		t.Fatalf("pending handoffs while ordered: %+v %v", pending, err)
	}
	if _, err := os.Lstat(filepath.Join(pending[0].RunDir, "control.sock")); err != nil {
		t.Fatalf("the pending handoff names run directory %s, not its wrapper's own (%v)", pending[0].RunDir, err)
	}
	lr.wantPrivate()
	out, code := lr.herdrPi(t, "close", st.ID[:8], "--json")
	if code != 0 || !strings.Contains(out, `"kind": "handoff"`) || !strings.Contains(out, `"how": "given back"`) {
		t.Fatalf("close while the handoff is ordered: exit %d\n%s", code, out)
	}
	validateJSON(t, docSchema(t, "open"), []byte(out))
	res := ro.wait(t)
	ls := ro.lines(t)
	if hb := ls[len(ls)-1]; res.code != 0 || hb.Event != "handback" || hb.Reason != "aborted" || hb.Transferred || !strings.Contains(hb.Error, "herdr-pi close") {
		t.Fatalf("open: exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.openGate()
	if got := lr.result(); got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q, want the owner's own reply", got)
	}
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") || slices.Contains(m, "tab.create") {
		t.Fatalf("a pane opened for a handoff close gave up: %q", m)
	}
	lr.quitOwner()
	lr.wantNothingLeft()
}
