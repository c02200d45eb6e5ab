package state

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// causes lists the transitions as "to<-cause".
func (r *recorder) causes() []string {
	var out []string
	for _, e := range r.states() {
		if e.Kind == EventTransition {
			out = append(out, string(e.To)+"<-"+e.Cause)
		}
	}
	return out
}

// Without the probe, Pi's reports decide at once (no startup grace; a
// run's end after the debounce), and a screen that disagrees is not heard
// while they count. A run that ends and starts again within the debounce
// (a retry) stays working.
func TestProgramStatusDecidesWithoutProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, time.Second)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "idle", App: "pi"})
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi", Message: "my session"})
		// The screen still shows the idle editor; it is not heard.
		m.Screen(Verdict{State: Idle})
		time.Sleep(2 * time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		m.Screen(Verdict{State: Working, Rule: "busy_border"}) // a stale frame
		time.Sleep(2 * time.Second)
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "error", Message: "boom"})
		time.Sleep(100 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "working"}) // a retry
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "idle"}) // cancelled
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@2300 run:completed@2300 working@4000 idle@5400 run:aborted@5400")
		want := []string{"idle<-program-status:idle", "working<-program-status:working", "idle<-program-status:done",
			"working<-program-status:working", "idle<-program-status:idle"}
		if got := r.causes(); !slices.Equal(got, want) {
			t.Fatalf("causes\n got %q\nwant %q", got, want)
		}
		if s := m.Snapshot(); s.ActivitySource != "program-status:idle" || s.ProgramStatus == nil || s.ProgramStatus.State != "idle" {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

// blocked opens one reason, labelled by its kind, with Pi's text as the
// question — a dialog opened over it asks its own (Pi reports the newest);
// the next report of another state closes it. Pi reports blocked during a
// run (a confirmation inside a tool call): the run goes on after.
func TestProgramStatusBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "permission", Message: "Delete main.go?"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "A nested dialog"})
		s := m.Snapshot()
		if s.State != Blocked || len(s.Reasons) != 1 || s.Reasons[0].Kind != KindProgramStatus ||
			s.Reasons[0].Question != "A nested dialog" || s.Activity != Working {
			t.Fatalf("snapshot %+v", s)
		}
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "blocked"})
		m.ProgramStatus(ProgramStatus{State: "idle"})
		expect(t, r, "working@0 blocked@0(waiting for your permission) working@0 idle@300 run:completed@300 blocked@1000(waiting for input) idle@1000")
		if got, want := r.reasons(), "+program-status ?program-status -program-status +program-status -program-status"; got != want {
			t.Fatalf("reasons %q, want %q", got, want)
		}
		if e := r.states()[1]; e.Reason == nil || e.Reason.Restored || e.Cause != "program-status:blocked" {
			t.Fatalf("blocked event %+v", e)
		}
	})
}

// A run's end waits the debounce for the session file: a sentinel it
// opens meanwhile makes working turn blocked without idle between. Work
// reported on the channel is work: that sentinel is news, not history (it
// notifies).
func TestProgramStatusRunEndWaitsForTheSessionFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(250 * time.Millisecond)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		time.Sleep(time.Second)
		if s := m.Snapshot(); s.State != Blocked || s.Reasons[0].Restored || s.Activity != Idle {
			t.Fatalf("snapshot %+v", s)
		}
		m.Close("sentinel") // answered: the file has the person's message
		m.ProgramStatus(ProgramStatus{State: "working"})
		expect(t, r, "working@0 blocked@250(input needed) run:completed@300 idle@1250 working@1250")
	})
}

// Two dialogs at once: Pi's status channel names the newest, the one on
// screen; the probe heard only the first (Pi 1.6.0 tells extensions of the
// outermost dialog alone). Whichever comes first — the report through the
// pty or the probe's event through its socket — the dialog's reason ends up
// asking what the newest dialog asks, and says so with an EventAsked when
// it changes. Without the probe the channel's own reason does the same.
func TestTheNewestDialogAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		// The probe's event first.
		m.Open(Reason{Key: "ui_prompt#1", Kind: KindUIPrompt, Question: "Deploy?"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Deploy?"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Which region?"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Deploy?"}) // the newer answered
		m.Close("ui_prompt#1")
		m.ProgramStatus(ProgramStatus{State: "working"})
		// The reports first.
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Tag it?"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Which tag?"})
		m.Open(Reason{Key: "ui_prompt#2", Kind: KindUIPrompt, Question: "Tag it?"})
		// A login is no dialog of the probe's.
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "auth", Message: "Log in to Anthropic"})
		var got []string
		for _, e := range r.list() {
			switch e.Kind {
			case EventAsked:
				got = append(got, "asked:"+e.Reason.Key+":"+e.Reason.Question)
			case EventTransition:
				if e.To == Blocked {
					got = append(got, "blocked:"+e.Reason.Question)
				}
			}
		}
		want := []string{"blocked:Deploy?", "asked:ui_prompt#1:Which region?", "asked:ui_prompt#1:Deploy?", "blocked:Which tag?"}
		if !slices.Equal(got, want) {
			t.Fatalf("events\n got %q\nwant %q", got, want)
		}
		if s := m.Snapshot(); len(s.Reasons) != 2 || s.Reasons[0].Question != "Which tag?" {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

// While the probe is connected it decides the activity; the channel's
// blocked opens a reason only for a login, which the probe cannot see.
func TestProgramStatusUnderTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question", Message: "Pick one"})
		if s := m.Snapshot(); s.State != Idle || len(s.Reasons) != 0 || s.ActivitySource != "probe" {
			t.Fatalf("under the probe: %+v", s)
		}
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "auth", Message: "Log in to Anthropic"})
		m.ProgramStatus(ProgramStatus{State: "idle"})
		expect(t, r, "idle@0 blocked@0(waiting for you to log in) idle@0")

		// The probe leaves: the channel's last word decides.
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.ProbeConnected(false)
		if s := m.Snapshot(); s.State != Working || s.ActivitySource != "program-status:working" {
			t.Fatalf("after the probe left: %+v", s)
		}
	})
}

// Lost output may have held a report: the channel is forgotten (its reason
// closes) and the screen decides until the next report. clear, which Pi
// sends when it stops, forgets it too; unknown states change nothing.
func TestProgramStatusLostAndCleared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second) // the screen confirms working, unheard
		m.ProgramStatus(ProgramStatus{State: "done"})
		m.ProgramStatus(ProgramStatus{State: "blocked", Kind: "question"})
		m.ProgramStatusLost()
		if s := m.Snapshot(); s.State != Working || s.ActivitySource != "screen:busy_border" || s.ProgramStatus != nil {
			t.Fatalf("after a loss: %+v", s)
		}
		m.ProgramStatusLost() // nothing left to forget: no event
		m.ProgramStatus(ProgramStatus{State: "idle"})
		m.ProgramStatus(ProgramStatus{State: "sleeping"})
		m.ProgramStatus(ProgramStatus{State: "clear"})
		if s := m.Snapshot(); s.State != Idle || s.ActivitySource != "screen" {
			t.Fatalf("right after clear: %+v", s)
		}
		// The screen still shows busy a debounce later: it decides.
		time.Sleep(time.Second)
		want := []string{"working<-screen:busy_border", "idle<-program-status:done", "blocked<-program-status:blocked",
			"working<-program-status:lost", "idle<-program-status:idle", "working<-screen:busy_border"}
		if got := r.causes(); !slices.Equal(got, want) {
			t.Fatalf("causes\n got %q\nwant %q", got, want)
		}
		expect(t, r, "working@300 idle@1000 blocked@1000(waiting for your answer) working@1000 idle@1000 working@1300")
	})
}

// Pi clears its status as it exits. Its last report stands over a screen
// that lags behind the output (a loaded machine): the frame the screen
// confirmed from before Pi went idle does not turn the pane working in the
// moment before the wrapper releases it.
func TestProgramStatusClearedOverALaggingScreen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working"})
		m.Screen(Verdict{State: Working, Rule: "busy_border"})
		time.Sleep(time.Second) // the screen confirms working beneath the channel
		m.ProgramStatus(ProgramStatus{State: "done"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "clear"}) // /quit
		time.Sleep(100 * time.Millisecond)
		m.Screen(Verdict{State: Idle}) // the screen catches up
		time.Sleep(time.Second)
		expect(t, r, "working@0 idle@1300 run:completed@1300")
		if s := m.Snapshot(); s.State != Idle || s.ActivitySource != "screen" {
			t.Fatalf("after clear: %+v", s)
		}
	})
}

// runs lists the run-finished events as "outcome:duration-ms[error]".
func (r *recorder) runs() []string {
	var out []string
	for _, e := range r.list() {
		if e.Kind == EventRunFinished {
			s := fmt.Sprintf("%s:%d", e.Outcome, e.Duration.Milliseconds())
			if e.Error != "" {
				s += "[" + e.Error + "]"
			}
			out = append(out, s)
		}
	}
	return out
}

// Without the probe, Pi's status channel tells a run's end: done is a run
// that completed, error one that failed (with Pi's first line of the error),
// idle one the person cancelled. The run-finished event comes when the
// run's idle is committed, after the debounce, and says how long the run
// took up to Pi's report. A compaction outside a run (Pi reports it as
// working with "Compacting context") is no run.
func TestProgramStatusTellsRunEndsWithoutProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "idle", App: "pi"})
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi", Message: "my session"})
		time.Sleep(2 * time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi", Message: "my session"})
		time.Sleep(700 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "429 Too Many Requests"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(500 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "idle", App: "pi"}) // Escape
		time.Sleep(time.Second)
		// /compact: working, then done, outside any run.
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi", Message: "Compacting context"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@2300 run:completed@2300 working@2700 idle@4000 run:error@4000 "+
			"working@4700 idle@5500 run:aborted@5500 working@6200 idle@7500")
		expectRuns(t, r, "", "completed:2000", "error:1000[429 Too Many Requests]", "aborted:500")
	})
}

// A run that Pi compacts inside (a context overflow) is one run, from its
// start to its end.
func TestProgramStatusCompactionInsideARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi", Message: "Compacting context"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		expect(t, r, "working@0 idle@3300 run:completed@3300")
		expectRuns(t, r, "", "completed:3000")
	})
}

// With the probe connected it alone tells runs: the channel's reports of
// the same run add none. A probe that connects while the channel reports a
// run under way takes it over: one run-finished, the probe's.
func TestProgramStatusLeavesRunsToTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		probeRunStarts(m)
		time.Sleep(time.Second)
		probeRunCompletes(m)
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@1000 run:completed@1000")

		// The probe leaves; a run begins on the channel; the probe comes
		// back mid-run (a resync) and tells its end.
		m.ProbeConnected(false)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProbeConnected(true)
		m.SessionRepeated(true, nil)
		m.AgentStart()
		time.Sleep(time.Second)
		probeRunCompletes(m)
		time.Sleep(time.Second)
		expect(t, r, "idle@0 working@0 idle@1000 run:completed@1000 working@2000 idle@4000 run:completed@4000")
	})
}

// A run whose reports may have been lost (output dropped) is not told: the
// channel's word on it is in doubt. The next run counts from its own start.
// A run that ends as Pi stops reporting (clear within the debounce) is not
// told either: its idle never counts.
func TestProgramStatusForgetsRunsItLostTrackOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatusLost()
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		m.ProgramStatus(ProgramStatus{State: "clear", App: "pi"})
		time.Sleep(time.Second)
		expectRuns(t, r, "", "completed:1000")
	})
}

// Without the probe, a run that Pi's channel ends with error while the
// session file says the run's last reply is a retry Pi left pending is a
// retry the person cancelled on its countdown: Aborted, however Pi reported
// it. The file's word counts when the run's idle is committed, so it may
// come within the debounce after Pi's report; a retry that ran and failed
// for good takes it back. A run that compacted inside (a context overflow,
// whose refused reply Pi leaves out too before it compacts) is not told as
// cancelled on the file's word: a compaction that failed ends it with the
// same file. Without an error, the word changes nothing.
func TestProgramStatusRetryCancelledOnItsCountdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.RetryPending(true) // "Retrying (1/3) in 2s..."
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"}) // Escape
		time.Sleep(time.Second)
		m.RetryPending(false) // the person writes again

		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"})
		time.Sleep(100 * time.Millisecond)
		m.RetryPending(true) // read late, within the debounce
		time.Sleep(time.Second)
		m.RetryPending(false)

		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.RetryPending(true)
		time.Sleep(time.Second)
		m.RetryPending(false) // the retry's reply: failed for good
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"})
		time.Sleep(time.Second)

		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi", Message: "Compacting context"})
		m.RetryPending(true) // the overflowed reply, left out
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "Context overflow recovery failed"})
		time.Sleep(time.Second)
		m.RetryPending(false)

		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.RetryPending(true)
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		expectRuns(t, r, "", "aborted:1000[503 overloaded]", "aborted:1000[503 overloaded]",
			"error:1000[503 overloaded]", "error:1000[Context overflow recovery failed]", "completed:1000")
	})
}

// With the probe connected it alone tells runs; the file's word on a
// retry changes nothing the probe says.
func TestRetryPendingUnderTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		m.RetryPending(true)
		time.Sleep(time.Second)
		m.AgentEnd("error", "503 overloaded")
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"})
		m.AgentSettled()
		time.Sleep(time.Second)
		expectRuns(t, r, "", "error:1000[503 overloaded]")
	})
}

// A probe that leaves mid-run (it crashed, or lost the wrapper's socket)
// hands the run under way to the channel, which tells its end once: the
// run counts from the probe's agent_start. A probe that comes back before
// the end takes the run back (it repeats its agent_start) and tells it
// alone; one that comes back after the channel saw the end, saying no run
// is under way, leaves the end to the channel.
func TestProgramStatusTakesOverTheRunOfAProbeThatLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		probeRunStarts(m)
		time.Sleep(time.Second)
		m.ProbeConnected(false) // never returns
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		expectRuns(t, r, "a probe that left mid-run", "completed:2000")

		// It comes back mid-run: the probe tells the run, once.
		probeRunStarts(m)
		time.Sleep(time.Second)
		m.ProbeConnected(false)
		time.Sleep(500 * time.Millisecond)
		m.ProbeConnected(true)
		m.SessionRepeated(true, nil)
		m.AgentStart()
		time.Sleep(500 * time.Millisecond)
		probeRunCompletes(m)
		time.Sleep(time.Second)
		expectRuns(t, r, "a probe back mid-run", "completed:2000", "completed:2000")

		// It comes back after the run's end was reported, within the
		// debounce: no agent_start follows, and the channel tells it.
		m.AgentStart()
		m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		m.ProbeConnected(false)
		time.Sleep(500 * time.Millisecond)
		m.ProgramStatus(ProgramStatus{State: "error", App: "pi", Message: "500 boom"})
		time.Sleep(100 * time.Millisecond)
		m.ProbeConnected(true)
		m.SessionStart()
		time.Sleep(time.Second)
		expectRuns(t, r, "a probe back after the end", "completed:2000", "completed:2000", "error:1500[500 boom]")
	})
}

// A probe back after the end of the run the channel tracked, followed at
// once by a new run (within the debounce): the ended run is told then, and
// the new one counts from its own start.
func TestProgramStatusEndedRunIsToldWhenTheProbeStartsANewOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		probeRunStarts(m)
		time.Sleep(time.Second)
		m.ProbeConnected(false)
		time.Sleep(time.Second)
		m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
		time.Sleep(100 * time.Millisecond)
		probeRunStarts(m)
		time.Sleep(500 * time.Millisecond)
		probeRunCompletes(m)
		time.Sleep(time.Second)
		expectRuns(t, r, "", "completed:2000", "completed:500")
	})
}

// probeRunStarts is a connected probe's session and a run of it, which
// Pi's status channel reports too.
func probeRunStarts(m *Machine) {
	m.ProbeConnected(true)
	m.SessionStart()
	m.AgentStart()
	m.ProgramStatus(ProgramStatus{State: "working", App: "pi"})
}

// probeRunCompletes is the end of a probe's run, as the probe and the
// channel tell it.
func probeRunCompletes(m *Machine) {
	m.AgentEnd("stop", "")
	m.ProgramStatus(ProgramStatus{State: "done", App: "pi"})
	m.AgentSettled()
}

// expectRuns checks the run-finished events so far (see runs); what names
// the check in its failure, when it is one of several.
func expectRuns(t *testing.T, r *recorder, what string, want ...string) {
	t.Helper()
	if got := r.runs(); !slices.Equal(got, want) {
		if what != "" {
			what += ": "
		}
		t.Fatalf("%sruns\n got %q\nwant %q\n(events %s)", what, got, want, r.summary())
	}
}
