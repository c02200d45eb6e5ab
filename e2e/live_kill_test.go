package e2e

import (
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests break one party of a live handoff at a time — SIGKILL of
// the open that asked for it, of the pane's Pi or its wrapper, of the
// owner Pi; Herdr down or restarting at the launch, while the pane works,
// at the handback; two opens of one attempt — and look at what is left:
// the attempt comes back to its owner (or open says plainly why not),
// nothing stays in the ledger or, once the next wrapper has started, in
// the private runtime directory, and the next open works.

// open is SIGKILLed while the attempt works in its pane: nothing follows
// the handoff any more, so the owner's wrapper, losing open's connection,
// gives the attempt back (aborted) — its pane closed, the owner carrying
// on locally — and nothing is left for close.
func TestLiveHandoffOpenKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	if err := ro.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ro.done
	if ex := lr.s.WaitExited(t, launched.PaneID, 30*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v, not closed", ex)
	}
	lr.wantResult(t, lvLocalReply)
	lr.wantClosedAll(t, lr.run().ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// open is SIGKILLed while its order waits for the turn boundary: the
// order is withdrawn, no pane opens when the turn ends, and the attempt
// finishes in the owner.
func TestLiveHandoffOpenKilledBeforeTheBoundary(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro := lr.order(t, st.ID)
	if err := ro.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ro.done
	lr.openGate()
	lr.wantResult(t, "agent: finished locally") // the owner's own reply
	if m := lr.s.Methods(); strings.Contains(strings.Join(m, " "), "pane.split") {
		t.Fatalf("a pane opened for a killed open: %q", m)
	}
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// The pane's Pi is SIGKILLed while it works: the wrapper hands back at
// once, the owner continues the cut turn locally, and open exits 0 with
// the handback. Its reason is exited, never idle: a killed Pi's probe
// connection ends with it a moment before the pane's wrapper sees its
// exit, and that end no longer turns a run idle (CI, 05:59 UTC 2026-12-05,
// before: the probe's end 29 ms before the exit, reason idle; see
// TestAKilledAgentIsNotReportedIdleBeforeItsExit).
func TestLiveHandoffPanesPiKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	if err := syscall.Kill(launched.AgentPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "exited" || !hb.Transferred || !hb.Continued {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Herdr crashes while the pane's Pi works and comes back a few seconds
// later, its panes kept: the wrapper follows the pane again, and a close
// of the pane after the outage hands the attempt back (closed).
func TestLiveHandoffHerdrOutageThenPaneClosed(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.Crash()
	time.Sleep(3 * time.Second)
	if err := lr.s.Restart(); err != nil {
		t.Fatal(err)
	}
	lr.s.WaitFor(t, lvLong, "the wrapper's subscription again", func() bool { return lr.s.Streams() >= 1 })
	time.Sleep(2 * time.Second)
	ro.running(t)
	if err := herdr.NewClient(lr.s.SocketPath()).PaneClose(t.Context(), launched.PaneID); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "closed" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Herdr crashes while the pane's Pi works, the turn ends during the
// outage, and Herdr comes back: the pane is idle after working, and the
// attempt comes back (idle) with the pane's reply.
func TestLiveHandoffTurnEndsDuringAHerdrOutage(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	ro, _ := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.Crash()
	time.Sleep(4 * time.Second)
	if err := lr.s.Restart(); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "idle" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvPaneReply)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Herdr is down when the turn boundary comes: the pane cannot be placed,
// open says so and exits 1, the owner keeps the attempt, and nothing is
// left in the ledger or the runtime directory.
func TestLiveHandoffHerdrDownAtTheLaunch(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro := lr.order(t, st.ID)
	lr.s.Crash()
	lr.openGate()
	res, hb := ro.handback(t)
	if res.code != 1 || hb.Reason != "failed" || hb.Transferred || !strings.Contains(hb.Error, "restart Herdr") || hb.ErrorCode != "herdr" {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
	if err := lr.s.Restart(); err != nil {
		t.Fatal(err)
	}
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Herdr is down when open is interrupted: the pane cannot be closed, the
// wrapper stops the pane's Pi itself, the attempt comes back, and the pane
// stays in the ledger for close once Herdr is back.
func TestLiveHandoffHerdrDownAtTheHandback(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	panePi := pinPID(t, launched.AgentPID)
	lr.s.Crash()
	if err := ro.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 130 || hb.Event != "handback" || hb.Reason != "aborted" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if panePi() {
		t.Fatalf("the pane's Pi still runs after the handback")
	}
	lr.wantResult(t, lvLocalReply)
	if err := lr.s.Restart(); err != nil {
		t.Fatal(err)
	}
	out, code := lr.herdrPi(t, "close", lr.run().ID)
	if code != 0 {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Two opens of the same live attempt from two shells share one handoff
// (one pane) while it is ordered; the one that asked is then SIGKILLed:
// the attempt comes back (aborted), and the other open says so and ends.
// The second starts once the first is ordered: started together, either
// may be the one that asked (it failed in CI so: the joiner was killed,
// and the asker waited on until its 2-minute limit).
func TestLiveHandoffTwoOpensAtOnceTheAskerKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	st := lr.run()
	var ros [2]*runningOpen
	for i := range ros {
		ros[i] = lr.start(t, lr.s, nil, st.ID, lvLabel, "--json")
		ros[i].waitEvent(t, "ordered")
	}
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	lr.openGate()
	a, b := ros[0], ros[1]
	la := a.waitEvent(t, "launched")
	lb := b.waitEvent(t, "launched")
	if la.PaneID != lb.PaneID || la.Handoff != lb.Handoff {
		t.Fatalf("two handoffs: %+v and %+v", la, lb)
	}
	a.waitEvent(t, "working")
	if n := len(lvCalls(lr.s, "pane.split")); n != 1 {
		t.Fatalf("%d panes split for one attempt", n)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	res, hb := b.handback(t)
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "aborted" || !hb.Transferred || !strings.Contains(hb.Error, "went away") {
		t.Fatalf("the other open: exit %d, handback %+v\n%s", res.code, hb, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// The owner Pi (the engine's turn with it) is SIGKILLed mid-handoff: the
// handoff ends, and the next open of the same attempt opens what it left
// — a read-only fork — saying the owner is gone.
func TestLiveHandoffOwnerKilledThenOpenAgain(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	st := lr.run()
	if err := syscall.Kill(lr.ownerPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if res := ro.wait(t); res.code != 1 || !strings.Contains(res.stderr, "opens what it left") {
		t.Fatalf("open: exit %d\n%s", res.code, res.stderr)
	}
	lr.s.WaitExited(t, launched.PaneID, 30*time.Second)
	if code, err := lr.owner.ExitCode(lvLong); err != nil {
		t.Fatalf("the owner's wrapper: %d %v", code, err)
	}
	again := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json")
	r2 := again.wait(t)
	if r2.code != 0 || !strings.Contains(r2.stdout, `"owner_gone": true`) || !strings.Contains(r2.stdout, `"fork"`) {
		t.Fatalf("open again: exit %d\n%s%s", r2.code, r2.stdout, r2.stderr)
	}
	if out, code := lr.herdrPi(t, "close", st.ID); code != 0 || !strings.Contains(out, "closed pane") {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
}

// The pane's herdr-pi wrap is SIGKILLed while its Pi works: the Pi goes
// with its terminal, the attempt comes back, and the owner carries on.
func TestLiveHandoffPanesWrapperKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	wrapper := lvParent(t, lvParent(t, launched.AgentPID))
	if err := syscall.Kill(wrapper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Event != "handback" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v", res.code, hb)
	}
	lr.wantResult(t, lvLocalReply)
	lr.quitOwner()
	// The killed wrapper's run directory and registration are reclaimed
	// by the next wrapper's start.
	if _, code := lr.herdrPi(t, "wrap", "--", "true"); code != 0 {
		t.Fatalf("the next wrap: exit %d", code)
	}
	lr.wantNothingLeft()
}

// Herdr drops the connection that types the pane's command (it went away
// mid-launch): the pane is closed again, the handoff fails, the attempt
// goes on in its owner, and nothing is left.
func TestLiveHandoffHerdrDropsTheLaunchsInput(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	lr.s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"pane.send_input"}, Count: 1})
	ro := lr.order(t, st.ID)
	lr.openGate()
	res, hb := ro.handback(t)
	if res.code != 1 || hb.Reason != "failed" || hb.Transferred || !strings.Contains(hb.Error, "pane.send_input") {
		t.Fatalf("exit %d, handback %+v", res.code, hb)
	}
	lr.wantResult(t, lvLocalReply)
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// The owner's wrapper is SIGKILLed while the handoff is ordered (no pane
// yet): open says the wrapper died, close removes what it left, and the
// next open of the attempt opens what it left (the owner Pi went with its
// wrapper).
func TestLiveHandoffOwnerWrapperKilledWhileOrdered(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro := lr.order(t, st.ID)
	wrapper := lvParent(t, lvParent(t, lr.ownerPID()))
	if err := syscall.Kill(wrapper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	if res.code != 1 || !strings.Contains(res.stderr, "died during the handoff") || !strings.Contains(res.stderr, "herdr-pi close "+st.ID[:8]) {
		t.Fatalf("open: exit %d\n%s", res.code, res.stderr)
	}
	_, _ = lr.owner.ExitCode(lvLong)
	if out, code := lr.herdrPi(t, "close", st.ID); code != 0 {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	lr.killOwnerPi()
	again := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json").wait(t)
	if again.code != 0 || !strings.Contains(again.stdout, `"fork"`) {
		t.Fatalf("open again: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	if m := lr.s.Methods(); strings.Count(strings.Join(m, " "), "pane.split") != 1 {
		t.Fatalf("panes split: %q, want the inspection's only", m)
	}
}

// `herdr-pi close` races a live handoff's launch (asked as the turn
// ends): whichever wins, open ends with a handback that says what
// happened (given up; the pane closed; or, closed before its Pi started,
// a launch that failed for that reason), the attempt is back with its
// owner, and nothing stays open or left behind.
func TestCloseRacesALiveHandoffsLaunch(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	st := lr.run()
	ro := lr.order(t, st.ID)
	lr.openGate()
	out, code := lr.herdrPi(t, "close", st.ID)
	res, hb := ro.handback(t)
	launchCut := hb.Reason == "failed" && strings.Contains(hb.Error, "closed before its Pi started")
	if hb.Event != "handback" || (hb.Reason != "aborted" && hb.Reason != "closed" && !launchCut) {
		t.Fatalf("close: exit %d\n%s\nopen: exit %d, handback %+v\n%s", code, out, res.code, hb, res.stderr)
	}
	if code != 0 {
		// A pane placed as close looked may need a second close.
		if out, code = lr.herdrPi(t, "close", st.ID); code != 0 {
			t.Fatalf("close again: exit %d\n%s", code, out)
		}
	}
	if got := lr.result(); got != lvLocalReply && got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q", got)
	}
	for _, p := range []string{"w1:p2", "w1:p3"} {
		if pn := lr.s.Pane(p); pn.Exists {
			t.Fatalf("pane %s stays open: %+v", p, pn)
		}
	}
	lr.quitOwner()
	lr.wantNothingLeft()
}

// order starts `herdr-pi open <run> lvLabel --json` and waits until the
// owner holds its order for the end of the turn (the gate still shut).
func (lr *liveRig) order(t *testing.T, run string) *runningOpen {
	t.Helper()
	ro := lr.start(t, lr.s, nil, run, lvLabel, "--json")
	ro.waitEvent(t, "ordered")
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	return ro
}

// handback waits for open to end and returns how it ended and its last
// line, the handback.
func (ro *runningOpen) handback(t *testing.T) (openResult, lvLine) {
	t.Helper()
	res := ro.wait(t)
	ls := ro.lines(t)
	if len(ls) == 0 {
		t.Fatalf("open printed no line: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	return res, ls[len(ls)-1]
}

// wantResult checks what the workflow's run ended with.
func (lr *liveRig) wantResult(t *testing.T, want string) {
	t.Helper()
	if got := lr.result(); got != want {
		t.Fatalf("the workflow's result is %q, want %q", got, want)
	}
}

// wantClosedAll runs `herdr-pi close <run>` after the handoff ended and
// checks it finds nothing open: the handback closed all it had opened.
func (lr *liveRig) wantClosedAll(t *testing.T, run string) {
	t.Helper()
	if out, code := lr.herdrPi(t, "close", run); code != 0 || !strings.Contains(out, "is open") {
		t.Fatalf("close after the handback: exit %d\n%s", code, out)
	}
}
