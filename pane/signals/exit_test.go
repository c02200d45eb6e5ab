package signals

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// Pi killed mid-run, with a dialog open: its probe's socket closes a moment
// before the pty sees its exit, and the wrapper takes its time before the
// release (live handoffs ending with a slow Herdr). However long that is,
// the run is not told finished — no idle to Herdr, no "Pi finished" — and
// the dialog is not told closed: that nothing came back is the agent's
// absence, not its word.
func TestAKilledPiIsNotToldFinishedWhileTheWrapperEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1, Conn: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
		r.feed(control.AgentStart{}, control.UIPromptStart{Kind: "select", Title: "Pick one"})
		r.feed(control.AgentEnd{StopReason: "stop"}) // its settle never comes
		r.feed(control.ProbeDisconnected{PID: 1, Conn: 1})
		r.s.AgentExited()
		time.Sleep(10 * ProbeReturnGrace)
		r.expect(t, "idle working blocked(waiting for your answer)", "input-needed(Pick one)")

		// Its socket may also close only after the exit is seen.
		late := newRig()
		defer late.m.Stop()
		late.feed(control.ProbeConnected{PID: 1, Conn: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
		late.feed(control.AgentStart{})
		late.s.AgentExited()
		late.feed(control.ProbeDisconnected{PID: 1, Conn: 1})
		time.Sleep(10 * ProbeReturnGrace)
		late.expect(t, "idle working", "")
	})
}
