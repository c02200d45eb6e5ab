package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The owner Pi is SIGKILLed while its agent works in a handed-off pane,
// and the person starts it again on its session (--continue, under
// herdr-pi wrap). The attempt's session file is whole (every line JSON);
// close with the owner dead finds nothing open; and what open says of
// the attempt is the truth: while the restarted owner asks whether to
// resume the interrupted run, the attempt is not live although a live Pi
// holds the lease, and open opens what the killed owner left; once the
// run is resumed and completes, the owner's menu offers inspection only.
func TestLiveHandoffOwnerKilledThenRestartedOnItsSession(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	st := lr.run()
	if err := syscall.Kill(lr.ownerPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if res := ro.wait(t); res.code != 1 {
		t.Fatalf("open: exit %d\n%s", res.code, res.stderr)
	}
	lr.s.WaitExited(t, launched.PaneID, 30*time.Second)
	if _, err := lr.owner.ExitCode(lvLong); err != nil {
		t.Fatalf("the owner's wrapper: %v", err)
	}
	// The wrapper closed the pane as its owner went: close with the owner
	// dead finds nothing open.
	lr.wantClosedAll(t, st.ID)
	session := st.sessionFile(t, lvLabel)
	b, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("%s line %d is not whole: %q", session, i+1, l)
		}
	}
	lr.ownerArgs = []string{"--continue"}
	lr.ownerAsks = "interrupted workflow found"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the restarted owner's screen:\n%s", lr.owner.Screen())
		}
	})
	lr.launchOwner()
	// The question waits for the person before the owner's session starts,
	// so before its probe connects: the screen shows it, and the owner's
	// pane reads blocked until it is answered.
	lr.wantOwnerLast(t, "blocked")
	// While the restarted owner asks whether to resume the run, the
	// attempt is nobody's: open opens what the killed owner left.
	out, code := lr.herdrPi(t, "open", "--list", st.ID, "--json")
	if code != 0 || !strings.Contains(out, `"state": "interrupted"`) || !strings.Contains(out, `"action": "gone"`) || strings.Contains(out, `"action": "live"`) {
		t.Fatalf("open --list while the restarted owner asks: exit %d\n%s", code, out)
	}
	again := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json").wait(t)
	if again.code != 0 || !strings.Contains(again.stdout, `"fork"`) || !strings.Contains(again.stdout, `"owner_gone": true`) {
		t.Fatalf("open while the restarted owner asks: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	// Resume: the engine runs the run on.
	lvSend(t, lr.owner, lvEnter)
	lr.wantResult(t, "agent: finished locally")
	lr.wantOwnerLast(t, "idle")
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open live session in Herdr pane") != 0 || lvCount(list, "Open session in Herdr pane") != 1 {
		t.Fatalf("the restarted owner offers a live handoff of a settled attempt: %q", list)
	}
}

// wantOwnerLast waits until the owner's pane (w1:p1) last reported state.
func (lr *liveRig) wantOwnerLast(t *testing.T, state string) {
	t.Helper()
	var got []string
	if !lr.s.Await(lvLong, func() bool {
		got = got[:0]
		for _, c := range lr.s.Reports("w1:p1") {
			if c.Accepted {
				got = append(got, c.State)
			}
		}
		return len(got) > 0 && got[len(got)-1] == state
	}) {
		t.Fatalf("the owner's pane reported %q, want the last %q", got, state)
	}
}
