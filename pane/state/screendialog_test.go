package state

import (
	"testing"
	"testing/synctest"
	"time"
)

// Pi's dialogs are told by the probe (ui_prompt_start) or Pi's status
// channel; the screen's dialog rule is for when neither can tell (a dialog
// opened before the session starts, before the probe connects). While one
// of them speaks, the dialog on screen opens no second reason: once the
// probe says it was answered the pane is idle at once, not blocked on
// screen until the screen's idle has held, nor relabelled in between.
func TestScreenDialogDefersToTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		time.Sleep(time.Second)
		m.Open(Reason{Key: "ui_prompt#1", Kind: KindUIPrompt, Label: "waiting for your answer", Question: "Deploy?"})
		m.Screen(Verdict{State: Blocked, Rule: "dialog"})
		time.Sleep(time.Second)
		m.Close("ui_prompt#1")
		time.Sleep(100 * time.Millisecond)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		expect(t, r, "idle@0 blocked@1000(waiting for your answer) idle@2000")
		if got := r.reasons(); got != "+ui_prompt#1 -ui_prompt#1" {
			t.Fatalf("reasons %q, want the probe's dialog alone", got)
		}
	})
}

// Without the probe and the channel the screen's dialog is the pane's
// blocked state, until it is answered: the session that starts then (the
// probe connects) closes it, as the screen would.
func TestScreenDialogBeforeTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Blocked, Rule: "dialog"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle})
		m.ProbeConnected(true)
		m.SessionStart()
		time.Sleep(time.Second)
		expect(t, r, "idle@300 blocked@1300(blocked on screen (dialog)) idle@2000")
	})
}

// A probe in a Pi that tells its extensions nothing of its dialogs (Pi
// before 0.84.4) cannot report them, and such a Pi has no status channel
// either: the screen alone shows the question (an extension's select, the
// workflow engine's "interrupted workflow found"). The pane is blocked
// while it waits, though the probe speaks, and idle once it is answered.
func TestScreenDialogWhenTheProbeCannotTellIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeTellsDialogs(false)
		m.ProbeConnected(true)
		m.SessionStart()
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Blocked, Rule: "dialog"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		expect(t, r, "idle@0 blocked@1300(blocked on screen (dialog)) idle@2300")
		if got := r.reasons(); got != "+screen -screen" {
			t.Fatalf("reasons %q, want the screen's dialog alone", got)
		}
	})
}
