package state

import (
	"testing"
	"testing/synctest"
	"time"
)

// fileSentinel is the sentinel as the session file opens it: the reply
// that asks, by its entry.
func fileSentinel(entry string) Reason {
	return Reason{Key: "sentinel", Kind: KindSentinel, Entry: entry}
}

// restoredOpens lists, for each transition to blocked, whether its reason
// was Restored ("r") or news ("n").
func (r *recorder) restoredOpens() string {
	s := ""
	for _, e := range r.states() {
		if e.Kind == EventTransition && e.To == Blocked {
			if e.Reason.Restored {
				s += "r"
			} else {
				s += "n"
			}
		}
	}
	return s
}

// expectSpells checks, for each transition to blocked in order, whether
// it was restored ("r") or news ("n").
func expectSpells(t *testing.T, r *recorder, want string) {
	t.Helper()
	if got := r.restoredOpens(); got != want {
		t.Fatalf("blocked spells restored/news %q, want %q", got, want)
	}
}

// Without the probe, Pi's status channel says a run begins while the pane
// waits on a question: the sentinel closes as the probe's agent start
// closes it, and the pane works. The run was an extension's (the file
// still ends with the question, nothing answered it); when it ends with
// nothing new in the file, the question stands again, told already. When
// its reply asks again, that is a new question. A compaction is no run.
func TestNoProbeRunStartClosesTheSentinel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(100 * time.Millisecond)
		m.Open(fileSentinel("a1"))
		time.Sleep(time.Second)
		// A compaction after the run: still blocked.
		m.ProgramStatus(ProgramStatus{State: "working", Message: "Compacting context"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		// An extension's run that writes no reply (cancelled at once).
		m.ProgramStatus(ProgramStatus{State: "working"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "idle"})
		time.Sleep(time.Second)
		// An extension's run whose reply asks again.
		m.ProgramStatus(ProgramStatus{State: "working"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(100 * time.Millisecond)
		m.Open(fileSentinel("a2"))
		time.Sleep(time.Second)
		expect(t, r, "working@0 blocked@100(input needed) run:completed@300 "+
			"working@2100 blocked@3400(input needed) run:aborted@3400 "+
			"working@4100 blocked@5200(input needed) run:completed@5400")
		expectSpells(t, r, "nrn")
	})
}

// The race the run's end guards against: the file's new question is read
// before Pi's report that the run writing it began (they travel apart, the
// report through the pty). The reason asks the new question at once; the
// late report closes it for the run, and the run's end opens it again,
// told already. Nothing of it is lost, and nothing is told twice.
func TestNoProbeNewQuestionReadBeforeItsRunBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		m.Open(fileSentinel("a1"))
		time.Sleep(time.Second)
		m.Open(fileSentinel("a2"))
		m.ProgramStatus(ProgramStatus{State: "working"})
		time.Sleep(50 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		expect(t, r, "working@0 blocked@0(input needed) run:completed@300 working@1000 blocked@1350(input needed) run:completed@1350")
		if got, want := r.reasons(), "+sentinel ?sentinel -sentinel +sentinel"; got != want {
			t.Fatalf("reasons %q, want %q", got, want)
		}
		expectSpells(t, r, "nr")
		for _, e := range r.list() {
			if e.Kind == EventAsked && (e.Reason.Entry != "a2" || e.Reason.Restored) {
				t.Fatalf("the new question's event %+v", e.Reason)
			}
		}
	})
}

// The person's answer starts the run: the file said answered first, or
// the run's start came first. Either way the question is over; the run's
// end opens nothing.
func TestNoProbeAnsweredQuestionStaysClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		m.Open(fileSentinel("a1"))
		time.Sleep(time.Second)
		m.Answered("sentinel")
		m.ProgramStatus(ProgramStatus{State: "working"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		m.Open(fileSentinel("a2"))
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.Answered("sentinel")
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		expect(t, r, "working@0 blocked@0(input needed) run:completed@300 working@1000 idle@2300 run:completed@2300 "+
			"blocked@3000(input needed) working@4000 idle@5300 run:completed@5300")
	})
}

// With the screen alone (no probe, no status channel), a run the screen
// confirms as it begins after the question closes the sentinel too, and
// its end opens it again when the file said nothing new. The run that
// wrote the question does not: its working frames, confirmed late (a
// loaded machine), began before the question was read.
func TestNoProbeScreenRunClosesTheSentinel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		// The run that asks.
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(250 * time.Millisecond)
		m.Open(fileSentinel("a1")) // before the working held the debounce
		time.Sleep(250 * time.Millisecond)
		if s := m.Snapshot(); s.State != Blocked || s.Activity != Working {
			t.Fatalf("the run that asked, confirmed late: %+v", s)
		}
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		// An extension's run.
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		expect(t, r, "working@300 idle@1300 blocked@2250(input needed) working@3800 blocked@4800(input needed)")
		expectSpells(t, r, "nr")
	})
}

// The probe's run start closes the sentinel itself, and its settle says
// what the run asks: nothing is held for the run's end, and the screen
// does not decide.
func TestProbeRunStartLeavesNothingPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.Open(fileSentinel("a1"))
		m.AgentSettled()
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second)
		m.AgentStart()
		m.AgentSettled()
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 blocked@0(input needed) run:completed@0 working@1000 idle@1000 run:completed@1000")
	})
}

// The file read again (a watcher that starts over on the file) says the
// paused question asks still: it is the one told already.
func TestNoProbePausedQuestionReadAgainIsNoNews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		m.Open(fileSentinel("a1"))
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.Open(fileSentinel("a1"))
		time.Sleep(time.Second)
		expect(t, r, "working@0 blocked@0(input needed) run:completed@300 working@1000 blocked@1000(input needed)")
		expectSpells(t, r, "nr")
	})
}

// With the screen alone, an extension's follow-up sent as the run that
// asked settles: the screen is busy again before its idle could hold, so
// it never confirms one in between. The busy indicator shown since after
// the question was read is the follow-up's run all the same.
func TestNoProbeScreenFollowUpAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second)
		m.Open(fileSentinel("a1"))
		m.Screen(Verdict{State: Idle})
		time.Sleep(100 * time.Millisecond)
		m.Screen(Verdict{State: Working, Rule: "busy_border"}) // the follow-up
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		expect(t, r, "working@300 blocked@1000(input needed) working@1400 blocked@2400(input needed)")
		expectSpells(t, r, "nr")
	})
}

// While the probe is connected, its settle says what its Pi asks: another
// reply of the session file that asks (a second Pi writing the same file)
// is no new question of this pane's.
func TestProbeConnectedFileReplyIsNoNewQuestion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Question: "Which file?"})
		m.AgentSettled()
		m.Open(fileSentinel("a1")) // the same reply, read off the file
		m.Open(fileSentinel("b1")) // the other Pi's
		if got := r.reasons(); got != "+sentinel" {
			t.Fatalf("reasons %q, want only the probe's sentinel", got)
		}
	})
}
