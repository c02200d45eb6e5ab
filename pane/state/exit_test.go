package state

import (
	"testing"
	"testing/synctest"
	"time"
)

// After the agent's exit (AgentExited) the wrapper still runs for a while
// before the pane's release: live handoffs end first (seconds with a slow
// Herdr), the output drains, the session watcher and the control socket
// still hear things. Nothing the machine would make of the agent's
// absence meanwhile may reach Herdr or the notifier as a new state: a hold
// that runs out because no probe can come back, a screen that only went
// still. What the agent said or drew before it went still counts.
func TestAfterTheAgentsExitItsAbsenceSaysNothing(t *testing.T) {
	const debounce = 300 * time.Millisecond
	long := 3 * ProbeGoneGrace // a slow way out: handoffs ending, say

	t.Run("a killed Pi's run is not told idle when the probe-gone hold runs out", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.AgentStart()
			m.ProbeConnected(false) // killed: its socket closes first
			m.AgentExited()
			time.Sleep(long)
			expect(t, r, "idle@0 working@0")
			if s := m.Snapshot(); s.State != Working {
				t.Fatalf("after the exit: %+v", s)
			}
		})
	})

	t.Run("the probe's socket closing after the exit holds the run too", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.AgentStart()
			m.AgentExited()
			m.ProbeConnected(false)
			time.Sleep(long)
			expect(t, r, "idle@0 working@0")
		})
	})

	t.Run("a dialog only the probe could close stays open past its hold", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.Open(Reason{Key: "ui:1", Kind: KindUIPrompt, Label: "pick one"})
			m.ProbeConnected(false)
			m.HoldOpen([]string{"ui:1"}, ProbeGoneGrace)
			m.AgentExited()
			time.Sleep(long)
			expect(t, r, "idle@0 blocked@0(pick one)")
			if got := r.reasons(); got != "+ui:1" {
				t.Fatalf("reason events %q", got)
			}
		})
	})

	t.Run("a session being replaced keeps its reasons", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.Open(Reason{Key: "w", Kind: KindWait, Label: "approve"})
			m.SessionReplaced() // /reload, and Pi dies before the next session
			m.AgentExited()
			time.Sleep(long)
			expect(t, r, "idle@0 blocked@0(approve)")
		})
	})

	t.Run("what a probe that came back late had open does not open after the exit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.OpenLater([]Reason{{Key: "ui:1", Kind: KindUIPrompt, Label: "pick one"}}, time.Second)
			m.AgentExited()
			time.Sleep(long)
			expect(t, r, "idle@0")
		})
	})

	t.Run("the screen, still after the exit, is not confirmed idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.Screen(Verdict{State: Working, Rule: "busy_row"})
			time.Sleep(time.Second)
			m.AgentExited()
			m.Screen(Verdict{State: Idle}) // the drain: its last frame
			time.Sleep(long)
			expect(t, r, "working@300")
		})
	})

	// A run Pi said ended before it went really finished: its debounced
	// idle, and the run's end ("Pi finished"), are still told, though they
	// come due after the exit — also when its report is read in the drain.
	t.Run("a run that ended before the exit is still told finished", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProgramStatus(ProgramStatus{State: "working"})
			time.Sleep(time.Second)
			m.AgentExited()
			m.ProgramStatus(ProgramStatus{State: "done"})
			time.Sleep(long)
			expect(t, r, "working@0 idle@1300 run:completed@1300")
		})
	})

	t.Run("the probe's last words read after the exit count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, r := newMachine(debounce, 0)
			defer m.Stop()
			m.ProbeConnected(true)
			m.SessionStart()
			m.AgentStart()
			m.AgentExited()
			m.AgentSettled()
			m.SessionShutdown()
			m.ProbeConnected(false)
			time.Sleep(long)
			expect(t, r, "idle@0 working@0 idle@0 run:completed@0")
		})
	})
}

// A screen verdict that held for its debounce while the agent lived is
// what the agent drew, not its absence: when the screen reads it late (on
// a loaded machine its look lags behind the output, and the verdict waits
// for it, see Config.Output) and the exit is seen meanwhile, it is still
// confirmed at that look. Only a verdict that would come due after the
// exit stays unconfirmed.
func TestAScreenVerdictDueBeforeTheExitCountsWhenReadLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r, out := newLaggingMachine()
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		m.ScreenSeen(0)
		time.Sleep(time.Second)
		out.add(10)
		m.Screen(Verdict{State: Idle}) // the run is over: the editor, idle
		m.ScreenSeen(10)
		out.add(10) // a cursor move the screen has not taken yet
		time.Sleep(400 * time.Millisecond)
		expect(t, r, "working@300") // due at 1300, waiting for the screen
		m.AgentExited()
		m.ScreenSeen(20) // the late look: nothing changed
		synctest.Wait()
		expect(t, r, "working@300 idle@1400")

		// Drawn after the exit was seen, the drain's frames come due after
		// it: no new state, also once wrap tells the exit again when
		// pty.Run has returned (the exit was seen at the first telling).
		out.add(10)
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		m.ScreenSeen(30)
		time.Sleep(time.Second)
		m.AgentExited()
		m.Screen(Verdict{State: Unknown}) // a look with no opinion
		time.Sleep(3 * time.Second)
		expect(t, r, "working@300 idle@1400")
	})
}

// The same holds for a run's start the screen alone sees (no probe, no
// status channel) while the question is open: its busy indicator held the
// debounce before the exit was seen, so the run began while the agent
// lived — an extension's follow-up — and the pane shows it, however late
// the screen confirms it.
func TestAScreenRunStartDueBeforeTheExitCountsWhenReadLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r, out := newLaggingMachine()
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		m.ScreenSeen(0)
		time.Sleep(time.Second)
		m.Open(fileSentinel("a1"))
		m.Screen(Verdict{State: Idle})
		time.Sleep(500 * time.Millisecond)
		out.add(10)
		m.Screen(Verdict{State: Working, Rule: "busy_border"}) // the follow-up
		m.ScreenSeen(10)
		out.add(10) // not taken yet
		time.Sleep(400 * time.Millisecond)
		expect(t, r, "working@300 blocked@1000(input needed)") // due at 1800, waiting
		m.AgentExited()
		m.ScreenSeen(20)
		synctest.Wait()
		expect(t, r, "working@300 blocked@1000(input needed) working@1900")
	})
}
