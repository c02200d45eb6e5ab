package state

import (
	"testing"
	"testing/synctest"
	"time"
)

// A prompt on the screen that the person answers while the agent goes on
// working: the screen goes working → blocked → working, and the pane must
// follow it back to working. The activity underneath never changed, so
// only the screen's own reason can tell the prompt is gone.
func TestScreenPromptGoneBackToTheSameActivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Blocked, Rule: "permission_prompt"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Working, Rule: "busy"})
		time.Sleep(time.Second)
		expect(t, r, "working@300 blocked@1300(blocked on screen (permission_prompt)) working@2300")
		// The screen opened the reason by itself, on a timer: the cause
		// names the reason, as for any other opener.
		if e := r.states()[1]; e.Cause != "open:screen" {
			t.Fatalf("blocked cause %q, want open:screen", e.Cause)
		}
	})
}

// Two reasons that open in the same step (a session start restoring two):
// the first is the one the blocked message names.
func TestFirstOfReasonsOpenedTogetherNamesTheState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart(
			Reason{Key: "wait:a", Kind: KindWait, Label: "first"},
			Reason{Key: "wait:b", Kind: KindWait, Label: "second"})
		expect(t, r, "idle@0 blocked@0(first)")
		if e := r.states()[1]; e.Reason == nil || e.Reason.Key != "wait:a" {
			t.Fatalf("opening reason %+v", e.Reason)
		}
	})
}

// A probe that went away mid-run (the agent crashed) and a new one that
// connects: the new probe's session_start, which follows its connection
// at once, says it runs nothing, so what the old one said last does not
// stay with it. (Until then the old one's working holds, see
// TestAProbeGoneMidRunHoldsItsWorking: the same Pi's probe back mid-run
// repeats the run.)
func TestReconnectedProbeStartsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		time.Sleep(time.Second)
		m.ProbeConnected(true)
		m.AgentStart()
		m.ProbeConnected(false) // the screen (idle) decides after the hold
		m.ProbeConnected(true)
		m.SessionStart()
		time.Sleep(time.Second)
		expect(t, r, "idle@300 working@1000 idle@1000")
		if s := m.Snapshot(); s.Activity != Idle || s.ActivitySource != "probe" {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

// An agent that quits is idle until it exits, whatever its screen still
// shows: on a loaded machine the shadow screen lags, and its confirmed
// "working" (or a dialog frame drawn late) took over the moment the
// probe's socket closed, just before the pane was released. A new probe
// is a new agent: the screen counts again.
func TestQuitAgentStaysIdleAsItsProbeLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		time.Sleep(time.Second) // confirmed beneath the probe
		m.AgentSettled()
		// The screen has not drawn the idle frame yet.
		m.SessionShutdown()
		m.ProbeConnected(false)
		m.Screen(Verdict{State: Blocked, Rule: "dialog"}) // a frame from before the quit
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@1000 run:completed@1000")
		s := m.Snapshot()
		if s.State != Idle || s.ActivitySource != "probe:session_shutdown" || len(s.Reasons) != 0 {
			t.Fatalf("after the agent quit: %+v", s)
		}

		m.ProbeConnected(true)
		m.ProbeConnected(false) // crashed before its session started
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@1000 run:completed@1000 blocked@2000(blocked on screen (dialog))")
	})
}

// A new session forgets that the agent worked in the old one: a sentinel
// the watcher finds in the new session before any run there is history
// (Restored), and the person is not told of it again.
func TestSessionStartForgetsTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.AgentSettled()
		m.SessionStart() // /resume of another session
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		if s := m.Snapshot(); len(s.Reasons) != 1 || !s.Reasons[0].Restored {
			t.Fatalf("sentinel before any run in the new session: %+v", s.Reasons)
		}
	})
}

// A run's end on the status channel waits one debounce from the first end
// report; a second end report (done, then idle) does not push it later,
// nor change how the run ended.
func TestProgramStatusRunEndHoldIsNotExtended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		time.Sleep(100 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(200 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "idle"})
		time.Sleep(time.Second)
		expect(t, r, "working@0 idle@400 run:completed@400")
	})
}

// The last reason closing before anything said what the agent does (in
// the startup grace) leaves nothing that says busy: the pane is idle at
// once, not blocked until the grace ends.
func TestLastReasonClosedInTheGraceIsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 5*time.Second)
		defer m.Stop()
		m.Open(Reason{Key: "hook:1", Kind: KindHook, Label: "review"})
		time.Sleep(200 * time.Millisecond)
		m.Close("hook:1")
		time.Sleep(10 * time.Second)
		expect(t, r, "blocked@0(review) idle@200")
	})
}

// `herdr-pi status` names a screen rule as the source of the activity only
// once that rule's verdict is the confirmed one: a busy row that just
// appeared has not decided anything yet.
func TestActivitySourceNamesOnlyAConfirmedRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		if s := m.Snapshot(); s.Activity != Idle || s.ActivitySource != "screen" {
			t.Fatalf("unconfirmed busy row: activity %s from %q", s.Activity, s.ActivitySource)
		}
		time.Sleep(time.Second)
		if s := m.Snapshot(); s.Activity != Working || s.ActivitySource != "screen:busy_row" {
			t.Fatalf("confirmed busy row: activity %s from %q", s.Activity, s.ActivitySource)
		}
	})
}

// The answer's grace counts from the first time the file says the question
// was answered; the person's next message does not extend it.
func TestAnsweredGraceIsNotExtended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Answered("sentinel")
		time.Sleep(500 * time.Millisecond)
		m.Answered("sentinel")
		time.Sleep(5 * time.Second)
		expect(t, r, "idle@300 blocked@1000(input needed) idle@2000")
	})
}

// A run that settles without an agent_end says how it stopped anyway: the
// log line and the demo show "completed", not an empty stop reason.
func TestRunWithoutAgentEndCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.AgentSettled()
		for _, e := range r.list() {
			if e.Kind == EventRunFinished {
				if e.Outcome != Completed || e.StopReason != "completed" {
					t.Fatalf("run finished %+v", e)
				}
				return
			}
		}
		t.Fatal("no run finished event")
	})
}

// Pi compacting its context outside a run (/compact, or on its own) calls
// the model for seconds while the probe hears no run: the screen ("Compacting
// context...") decides meanwhile, and the compaction's end gives the word
// back to the probe at once. Told no end (Pi before 1.x, a compaction that
// failed), the screen's own idle ends it; a run clears it.
func TestCompactionIsWorkingOutsideARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		m.Compaction(true)
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		time.Sleep(time.Second)
		if s := m.Snapshot(); s.Activity != Working || s.ActivitySource != "screen:busy_row" {
			t.Fatalf("during the compaction: %+v", s)
		}
		m.Compaction(false)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@1300 idle@2000")

		// No end told: the screen going idle ends it by itself.
		m.Compaction(true)
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle}) // failed, and Pi said nothing
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@1300 idle@2000 working@3300 idle@4300")

		// A run takes over, and after it the probe decides again.
		m.Compaction(true)
		m.AgentStart()
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		m.AgentSettled()
		time.Sleep(time.Second)
		if s := m.Snapshot(); s.Activity != Idle || s.ActivitySource != "probe" {
			t.Fatalf("after a run: %+v", s)
		}
	})
}

// The probe's connection ends mid-run while the screen shows nothing busy
// (a run younger than the debounce, or a working indicator an extension
// hid): an agent killed or crashed closes it a moment before its exit is
// seen, and a probe that lost its socket is back within a second. Either
// way its end says nothing of the run, which stays working for the hold —
// no idle after working, which Herdr tells as "finished" — until a probe
// back says what goes on, or the hold runs out and the screen decides. The
// status channel, once it spoke, decides at once.
func TestAProbeGoneMidRunHoldsItsWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.ProbeConnected(false) // killed: its exit is seen next
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0")
		if s := m.Snapshot(); s.State != Working || s.ActivitySource != "probe:gone" || !s.RunActive {
			t.Fatalf("as the probe left mid-run: %+v", s)
		}

		// The same Pi's probe back: the run goes on, no blip.
		m.ProbeConnected(true)
		m.SessionRepeated(true, nil)
		m.AgentStart()
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0")

		// It never comes back: the screen decides once the hold is over.
		m.ProbeConnected(false)
		time.Sleep(ProbeGoneGrace - time.Millisecond)
		expect(t, r, "idle@0 working@0")
		time.Sleep(1001 * time.Millisecond)
		expect(t, r, "idle@0 working@0 idle@7000")

		// Idle when it left: nothing held.
		m.ProbeConnected(true)
		m.SessionStart()
		m.ProbeConnected(false)
		if s := m.Snapshot(); s.ActivitySource != "screen" {
			t.Fatalf("a probe gone while idle: %+v", s)
		}

		// Pi's status channel says the run goes on, or not: it decides.
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProbeConnected(false)
		m.ProgramStatus(ProgramStatus{State: "idle"}) // cancelled as the probe left
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@7000 working@8000 idle@8300 run:aborted@8300")
	})
}
