package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// The pane's herdr-pi wrap is stopped (SIGSTOP, as a person's `kill
// -STOP` or a debugger does) while its Pi works: nothing reports the pane
// any more, yet `herdr-pi close` still gives the attempt back, within
// the wrapper's bound for stopping a pane's Pi, and the owner carries on.
func TestLiveHandoffPanesWrapperStoppedThenClosed(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	wrapper := lvParent(t, lvParent(t, launched.AgentPID))
	if err := syscall.Kill(wrapper, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(wrapper, syscall.SIGCONT) })
	start := time.Now()
	out, code := lr.herdrPi(t, "close", lr.run().ID)
	took := time.Since(start)
	t.Logf("close took %v:\n%s", took, out)
	if code != 0 || !strings.Contains(out, "closed pane") {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Event != "handback" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s", res.code, hb, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
	lr.quitOwner()
}
