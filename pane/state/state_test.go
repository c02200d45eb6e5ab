package state

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// recorder collects events with the time they arrived.
type recorder struct {
	mu     sync.Mutex
	events []Event
	start  time.Time
}

func (r *recorder) sink(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) list() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// states is the events without reason events.
func (r *recorder) states() []Event {
	var out []Event
	for _, e := range r.list() {
		if e.Kind != EventOpened && e.Kind != EventClosed && e.Kind != EventAsked {
			out = append(out, e)
		}
	}
	return out
}

// reasons renders the reason events as "+key", "-key" and "?key" (asks
// anew).
func (r *recorder) reasons() string {
	var parts []string
	for _, e := range r.list() {
		switch e.Kind {
		case EventOpened:
			parts = append(parts, "+"+e.Reason.Key)
		case EventClosed:
			parts = append(parts, "-"+e.Reason.Key)
		case EventAsked:
			parts = append(parts, "?"+e.Reason.Key)
		}
	}
	return strings.Join(parts, " ")
}

// summary renders events as "to@ms" (transitions) or "run:outcome@ms";
// reason events are left to reasons.
func (r *recorder) summary() string {
	var parts []string
	for _, e := range r.list() {
		at := e.At.Sub(r.start).Milliseconds()
		switch e.Kind {
		case EventOpened, EventClosed, EventAsked:
			continue
		case EventRunFinished:
			parts = append(parts, fmt.Sprintf("run:%s@%d", e.Outcome, at))
			continue
		}
		s := fmt.Sprintf("%s@%d", e.To, at)
		if e.Message != "" {
			s += fmt.Sprintf("(%s)", e.Message)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func newMachine(debounce, grace time.Duration) (*Machine, *recorder) {
	r := &recorder{start: time.Now()}
	m := New(Config{Debounce: debounce, StartupGrace: grace, Sink: r.sink})
	return m, r
}

func expect(t *testing.T, r *recorder, want string) {
	t.Helper()
	if got := r.summary(); got != want {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}

// A spinner redrawn every 80 ms for 2 s, then the idle screen: exactly one
// working, then idle exactly one debounce after the idle screen.
func TestSpinnerThenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		for i := 0; i < 25; i++ {
			m.Screen(Verdict{State: Working, Rule: "busy_row"})
			time.Sleep(80 * time.Millisecond)
		}
		m.Screen(Verdict{State: Idle})
		time.Sleep(2 * time.Second)
		expect(t, r, "working@300 idle@2300")
		if e := r.list()[0]; e.Cause != "screen:busy_row" || e.From != Unknown {
			t.Fatalf("first event %+v", e)
		}
	})
}

// A verdict that does not hold for the debounce is never reported.
func TestNoFlicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		for i := 0; i < 5; i++ {
			m.Screen(Verdict{State: Working})
			time.Sleep(200 * time.Millisecond)
			m.Screen(Verdict{State: Idle})
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second)
		// Nothing held until the screen settled on idle at 1800 ms.
		expect(t, r, "idle@2100")
	})
}

// An agent that draws nothing busy is idle once the grace is over.
func TestQuietAgentTurnsIdleAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, time.Second)
		defer m.Stop()
		if s := m.Snapshot(); s.State != Unknown {
			t.Fatalf("initial state %s", s.State)
		}
		time.Sleep(5 * time.Second)
		expect(t, r, "idle@1000")
	})
}

// Idle is confirmed only once the screen stopped changing.
func TestIdleWaitsForAStableScreen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working})
		time.Sleep(400 * time.Millisecond)
		for i := 0; i < 10; i++ { // output keeps coming, but nothing says busy
			m.Screen(Verdict{State: Idle})
			time.Sleep(100 * time.Millisecond)
		}
		m.Screen(Verdict{Skip: true, State: Unknown}) // a change without an opinion
		time.Sleep(time.Second)
		expect(t, r, "working@300 idle@1700")
	})
}

func TestStartupGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, time.Second)
		defer m.Stop()
		m.Screen(Verdict{State: Working})
		time.Sleep(3 * time.Second)
		expect(t, r, "working@1000")
	})
}

// Blocked is the OR of open reasons: one transition in, one out, with the
// message of the reason that opened it while that stays open, then of the
// oldest reason still open (a relabel, not a transition).
func TestReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Open(Reason{Key: "wait:hook:1", Kind: KindWait, Label: "review the plan"})
		m.Open(Reason{Key: "wait:hook:2", Kind: KindWait, Label: "other"})
		m.Open(Reason{Key: "wait:hook:1", Kind: KindWait, Label: "again"})
		m.Close("wait:hook:1")
		m.Close("nope")
		time.Sleep(time.Second)
		m.Close("wait:hook:2")
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Label: "ignored"})
		m.Open(Reason{Key: "perm:1", Kind: KindPermission})
		m.CloseKind(KindPermission)
		m.ClearReasons()
		expect(t, r, "blocked@0(review the plan) blocked@0(other) idle@1000 blocked@1000(input needed) idle@1000")
		// Every reason that opened or closed is told, whether or not the
		// state changed with it.
		if got := r.reasons(); got != "+wait:hook:1 +wait:hook:2 -wait:hook:1 -wait:hook:2 +sentinel +perm:1 -perm:1 -sentinel" {
			t.Fatalf("reason events %q", got)
		}
		if e := r.states()[0]; e.Reason == nil || e.Reason.Key != "wait:hook:1" || e.Cause != "open:wait:hook:1" {
			t.Fatalf("opening reason %+v", e)
		}
		m.Open(Reason{Key: "x", Kind: KindHerdrBlocked})
		if s := m.Snapshot(); s.State != Blocked || s.Message != "waiting for input" || len(s.Reasons) != 1 {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

// While blocked, the activity underneath keeps changing silently and is
// what the state returns to.
func TestBlockedOverWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second)
		m.Close("sentinel")
		expect(t, r, "working@300 blocked@1000(input needed) idle@2000")
	})
}

func TestScreenBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Blocked, Rule: "permission_prompt"})
		time.Sleep(time.Second)
		m.Screen(Verdict{State: Working, Rule: "busy"})
		time.Sleep(time.Second)
		expect(t, r, "blocked@300(blocked on screen (permission_prompt)) working@1300")
	})
}

// A run the person cut short ends aborted whatever its last stop reason
// (a retry cancelled on its countdown keeps the failed reply's, error),
// and the event keeps that stop reason; the next run is judged afresh.
// Outside a run it changes nothing.
func TestRunCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, time.Second)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.RunCancelled() // no run: nothing to cancel
		m.AgentStart()
		m.AgentEnd("error", "")
		m.RunCancelled()
		m.AgentSettled()
		m.AgentStart()
		m.AgentEnd("error", "")
		m.AgentSettled()
		expect(t, r, "idle@0 working@0 idle@0 run:aborted@0 working@0 idle@0 run:error@0")
		if e := r.list()[3]; e.StopReason != "error" {
			t.Fatalf("the cancelled run's event %+v: want stop reason error", e)
		}
	})
}

// With the probe connected its lifecycle decides, at once; the screen is
// the fallback when it goes away.
func TestProbeLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, time.Second)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.Screen(Verdict{State: Idle})
		time.Sleep(2 * time.Second)
		m.AgentEnd("error", "")
		m.AgentEnd("stop", "") // a retry overwrote the candidate
		m.AgentSettled()
		m.AgentSettled() // no run active: nothing
		m.AgentStart()
		m.AgentEnd("length", "")
		m.AgentSettled()
		m.AgentStart()
		m.AgentEnd("aborted", "")
		m.AgentSettled()
		m.AgentStart()
		m.AgentSettled() // no agent_end: completed
		m.AgentStart()
		m.AgentEnd("weird", "")
		m.AgentSettled()
		expect(t, r, "idle@0 working@0 idle@2000 run:completed@2000 working@2000 idle@2000 run:error@2000 "+
			"working@2000 idle@2000 run:aborted@2000 working@2000 idle@2000 run:completed@2000 "+
			"working@2000 idle@2000 run:completed@2000")

		// The marker reason closes when the next run starts.
		r.mu.Lock()
		r.events = nil
		r.mu.Unlock()
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Open(Reason{Key: "ask:1", Kind: KindAsk, Label: "pick one"})
		m.AgentStart()
		if s := m.Snapshot(); len(s.Reasons) != 1 || s.Reasons[0].Key != "ask:1" || !s.RunActive || s.Activity != Working {
			t.Fatalf("snapshot %+v", s)
		}
		m.SessionShutdown()
		// The run closed the sentinel; the flow still open is named.
		expect(t, r, "blocked@2000(input needed) blocked@2000(pick one) idle@2000")

		// The probe goes away mid-run: its working stands for the hold (an
		// agent killed: until its release, see exit_test.go), then the screen (idle,
		// confirmed long ago) decides.
		m.AgentStart()
		m.ProbeConnected(false)
		if s := m.Snapshot(); s.State != Working || s.ActivitySource != "probe:gone" {
			t.Fatalf("as the probe left: %+v", s)
		}
		time.Sleep(ProbeGoneGrace + time.Millisecond)
		s := m.Snapshot()
		if s.State != Idle || s.ActivitySource != "screen" {
			t.Fatalf("after the probe left: %+v", s)
		}
	})
}

// A session start mid-run resets the tracker: its settle is silent.
func TestSessionStartResetsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.Open(Reason{Key: "w", Kind: KindWait, Label: "w"})
		m.SessionStart()
		m.AgentSettled()
		expect(t, r, "idle@0 working@0 blocked@0(w) idle@0")
	})
}

// A hook wait (herdr-pi waiting) survives the agent's session changes;
// a restored sentinel reopens in the same step as the session start, so a
// /reload of a blocked session never reports a blip of idle.
func TestSessionStartKeepsHooksAndRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.SessionStart(Reason{Key: "sentinel", Kind: KindSentinel})
		expect(t, r, "idle@0 blocked@0(input needed)")

		m.Open(Reason{Key: "deploy:42", Kind: KindHook, Label: "approve deploy"})
		m.Open(Reason{Key: "plan:1", Kind: KindWait, Label: "plan"})
		m.SessionStart()
		if s := m.Snapshot(); s.State != Blocked || len(s.Reasons) != 1 || s.Reasons[0].Key != "deploy:42" {
			t.Fatalf("after session start: %+v", s)
		}
		m.SessionShutdown()
		if s := m.Snapshot(); len(s.Reasons) != 1 {
			t.Fatalf("after shutdown: %+v", s)
		}
		m.Close("deploy:42")
		// The session start closed the sentinel; the hook wait it keeps
		// is named until it closes.
		expect(t, r, "idle@0 blocked@0(input needed) blocked@0(approve deploy) idle@0")
	})
}

// Many goroutines opening and closing reasons: events always alternate
// between blocked and not, and the machine ends where the reasons say.
func TestConcurrentReasons(t *testing.T) {
	m, r := newMachine(0, 0)
	defer m.Stop()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				key := fmt.Sprintf("wait:%d:%d", g, i%3)
				m.Open(Reason{Key: key, Kind: KindWait, Label: key})
				m.Close(key)
			}
		}()
	}
	wg.Wait()
	prev := Unknown
	for _, e := range r.list() {
		if e.Kind != EventTransition {
			continue
		}
		if e.From != prev || e.To == e.From {
			t.Fatalf("event %+v after state %s", e, prev)
		}
		prev = e.To
	}
	if s := m.Snapshot(); s.State != Idle || prev != Idle {
		t.Fatalf("ended %s (last event to %s)", s.State, prev)
	}
}

func TestStopSilences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		m.Screen(Verdict{State: Working})
		m.Stop()
		time.Sleep(time.Second)
		m.Open(Reason{Key: "a", Kind: KindWait})
		expect(t, r, "")
	})
}

func TestOutcomeOf(t *testing.T) {
	for in, want := range map[string]Outcome{"stop": Completed, "toolUse": Completed, "": Completed,
		"error": Errored, "length": Errored, "aborted": Aborted, "weird": Completed} {
		if got := OutcomeOf(in); got != want {
			t.Errorf("OutcomeOf(%q) = %s, want %s", in, got, want)
		}
	}
}

// Issue 10: /reload of a blocked session. Pi says session_shutdown, then,
// about 100 ms later, session_start restoring the unanswered sentinel.
// Nothing is reported in between or after: no idle, no second blocked, not
// even a reason event, and the reason keeps its age.
func TestReloadWhileBlockedReportsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Question: "Which file?"})
		m.AgentSettled()
		expect(t, r, "idle@0 working@0 blocked@1000(input needed) run:completed@1000")
		opened := m.Snapshot().Reasons[0]
		if opened.Restored {
			t.Fatalf("a sentinel from a run of this session is not restored: %+v", opened)
		}
		before := len(r.list())

		time.Sleep(time.Second)
		m.SessionReplaced()
		time.Sleep(108 * time.Millisecond)
		if s := m.Snapshot(); s.State != Blocked {
			t.Fatalf("between shutdown and start: %+v", s)
		}
		m.SessionStart(Reason{Key: "sentinel", Kind: KindSentinel, Question: "Which file?"})
		time.Sleep(10 * time.Second) // past the replace grace: nothing pending fires
		if got := r.list()[before:]; len(got) != 0 {
			t.Fatalf("the reload reported %+v", got)
		}
		if s := m.Snapshot(); s.State != Blocked || len(s.Reasons) != 1 || !s.Reasons[0].Since.Equal(opened.Since) || s.Reasons[0].Restored {
			t.Fatalf("after the reload: %+v", s)
		}
	})
}

// Replacing a blocked session by one that waits for nothing (/new) turns
// idle when the new session starts, not when the old one shut down; a
// session that never comes ends the old one's reasons after the grace.
func TestReplacedSessionEndsOnStartOrAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Open(Reason{Key: "hook:a", Kind: KindHook, Label: "approve"})
		m.SessionReplaced()
		time.Sleep(100 * time.Millisecond)
		m.SessionStart()
		if s := m.Snapshot(); len(s.Reasons) != 1 || s.Reasons[0].Key != "hook:a" {
			t.Fatalf("after /new: %+v", s)
		}
		m.Close("hook:a")
		expect(t, r, "idle@0 blocked@0(input needed) blocked@100(approve) idle@100")
		if got := r.reasons(); got != "+sentinel +hook:a -sentinel -hook:a" {
			t.Fatalf("reason events %q", got)
		}

		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.SessionReplaced()
		time.Sleep(DefaultReplaceGrace - time.Millisecond)
		if s := m.Snapshot(); s.State != Blocked {
			t.Fatalf("before the grace ended: %+v", s)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait() // the timer's goroutine runs at the same instant
		expect(t, r, "idle@0 blocked@0(input needed) blocked@100(approve) idle@100 blocked@100(input needed) idle@5100")

		// The agent leaving mid-replacement: no session follows, and the
		// sentinel (what the file says) stays.
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.SessionReplaced()
		m.ProbeConnected(false)
		time.Sleep(2 * DefaultReplaceGrace)
		if s := m.Snapshot(); s.State != Blocked {
			t.Fatalf("after the agent left mid-replacement: %+v", s)
		}
	})
}

// A sentinel found before the agent was seen working in the session (a
// restart on an unanswered question, the session file read at start) and
// one restored by a session start are Restored; one after a run is not.
func TestRestoredSentinels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Open(Reason{Key: "hook:a", Kind: KindHook})
		e := r.states()[0]
		if e.To != Blocked || !e.Reason.Restored || m.Snapshot().Reasons[1].Restored {
			t.Fatalf("first sentinel %+v; reasons %+v", e.Reason, m.Snapshot().Reasons)
		}
		m.ClearReasons()

		// Working on screen counts as work (an agent without the probe).
		m.Screen(Verdict{State: Working})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		if s := m.Snapshot(); s.Reasons[0].Restored {
			t.Fatalf("after work on screen: %+v", s.Reasons[0])
		}

		// A new session forgets the work; what it restores is restored.
		m.ProbeConnected(true)
		m.SessionStart(Reason{Key: "ask:1", Kind: KindAsk})
		if s := m.Snapshot(); len(s.Reasons) != 1 || !s.Reasons[0].Restored {
			t.Fatalf("restored by the session start: %+v", s.Reasons)
		}
		m.ClearReasons()
		m.AgentStart()
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		if s := m.Snapshot(); s.Reasons[0].Restored {
			t.Fatalf("after a run: %+v", s.Reasons[0])
		}
	})
}

// A run's duration goes from its first agent start to its settle; a retry's
// second agent start does not restart it.
func TestRunDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		time.Sleep(20 * time.Second)
		m.AgentStart()
		time.Sleep(5 * time.Second)
		m.AgentSettled()
		m.AgentStart()
		time.Sleep(60 * time.Millisecond)
		m.AgentSettled()
		var got []time.Duration
		for _, e := range r.list() {
			if e.Kind == EventRunFinished {
				got = append(got, e.Duration)
			}
		}
		if len(got) != 2 || got[0] != 25*time.Second || got[1] != 60*time.Millisecond {
			t.Fatalf("durations %v", got)
		}
	})
}

// The session file says the question was answered (a user message after
// it) a moment before the signal that says the agent works on the answer —
// or the other way round: the pane goes from blocked straight to working,
// whichever source decides the activity. Nothing working it: the answer
// closes the reason after AnswerGrace.
func TestAnsweredClosesWhenTheAgentWorks(t *testing.T) {
	probe := func(m *Machine) { m.ProbeConnected(true) }
	probeStart, probeEnd := func(m *Machine) { m.AgentStart() }, func(m *Machine) { m.AgentSettled() }
	programStart := func(m *Machine) { m.ProgramStatus(ProgramStatus{State: "working"}) }
	programEnd := func(m *Machine) { m.ProgramStatus(ProgramStatus{State: "done"}) }
	screenStart := func(m *Machine) { m.Screen(Verdict{State: Working, Rule: "busy"}) }
	screenEnd := func(m *Machine) { m.Screen(Verdict{State: Idle}) }
	for _, tc := range []struct {
		name       string
		connect    func(m *Machine) // nil: nothing to connect
		start, end func(m *Machine) // a run starts and ends, as this source says
		// startsOnAnswer: the agent starts on the answer, 50 ms after the
		// file said so ("nothing": it never does).
		startsOnAnswer bool
		want           string
	}{
		{"probe", probe, probeStart, probeEnd, true,
			"idle@0 working@0 blocked@1000(input needed) run:completed@1000 working@2050 idle@3050 run:completed@3050"},
		{"program status", nil, programStart, programEnd, true,
			"working@0 blocked@1000(input needed) run:completed@1300 working@2050 idle@3350 run:completed@3350"},
		{"screen", nil, screenStart, screenEnd, true,
			"working@300 blocked@1000(input needed) working@2350 idle@3350"},
		{"nothing", nil, screenStart, screenEnd, false,
			"working@300 blocked@1000(input needed) idle@3000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, r := newMachine(300*time.Millisecond, 0)
				defer m.Stop()
				if tc.connect != nil {
					tc.connect(m)
				}
				tc.start(m)
				time.Sleep(time.Second)
				// The reply asks; the run ends under it.
				m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
				tc.end(m)
				time.Sleep(time.Second) // the person reads the question
				m.Answered("sentinel")
				m.Answered("nope") // not open: ignored
				time.Sleep(50 * time.Millisecond)
				if s := m.Snapshot(); s.State != Blocked || len(s.Reasons) != 1 {
					t.Fatalf("answered but nothing works yet: %+v", s)
				}
				if tc.startsOnAnswer {
					tc.start(m)
				}
				time.Sleep(time.Second)
				tc.end(m)
				time.Sleep(2 * time.Second)
				expect(t, r, tc.want)
				if got := r.reasons(); got != "+sentinel -sentinel" {
					t.Fatalf("reason events %q", got)
				}
			})
		})
	}
}

// A session that starts over (a reload) forgets what was answered in the
// old one: the new session's restored question waits for its own answer.
func TestAnsweredIsForgottenWithTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.AgentSettled()
		m.Answered("sentinel")
		m.SessionReplaced()
		m.SessionStart(Reason{Key: "sentinel", Kind: KindSentinel})
		time.Sleep(5 * time.Second)
		expect(t, r, "idle@0 working@0 blocked@0(input needed) run:completed@0")
	})
}

// A hook wait opened again takes the latest label, as it takes the latest
// holder: it stays open since it first opened; when it opened the blocked
// state, the new message is reported (relabelled, not a transition: no
// new spell to notify). Other kinds keep what they opened with.
func TestAHookWaitOpenedAgainTakesTheLatestLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve build 1"})
		since := m.Snapshot().Reasons[0].Since
		time.Sleep(time.Second)
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve build 2"})
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve build 2"})
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Open(Reason{Key: "hook:lint:1", Kind: KindHook, Label: "lint 1"})
		m.Open(Reason{Key: "hook:lint:1", Kind: KindHook, Label: "lint 2"})
		m.Open(Reason{Key: "plan:1", Kind: KindWait, Label: "plan 1"})
		m.Open(Reason{Key: "plan:1", Kind: KindWait, Label: "plan 2"})
		expect(t, r, "idle@0 blocked@0(approve build 1) blocked@1000(approve build 2)")
		if e := r.states()[2]; e.Kind != EventRelabelled {
			t.Errorf("the new message came as %q, want %q", e.Kind, EventRelabelled)
		}
		s := m.Snapshot()
		labels := []string{}
		for _, x := range s.Reasons {
			labels = append(labels, x.Label)
		}
		if s.Message != "approve build 2" || !s.Reasons[0].Since.Equal(since) || strings.Join(labels, ",") != "approve build 2,,lint 2,plan 1" {
			t.Errorf("snapshot %+v", s)
		}
	})
}

// output stands for the tap in Config.Output: written counts the bytes
// that reached the terminal, and the test says with ScreenSeen how many of
// them the screen has looked at.
type output struct {
	mu      sync.Mutex
	written uint64
}

func (o *output) add(n uint64) {
	o.mu.Lock()
	o.written += n
	o.mu.Unlock()
}

func (o *output) count() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.written
}

// newLaggingMachine is a machine with a 300 ms debounce whose screen looks
// lag behind the output the test writes to out (Config.Output); call it
// inside the test's bubble.
func newLaggingMachine() (*Machine, *recorder, *output) {
	out := &output{}
	r := &recorder{start: time.Now()}
	return New(Config{Debounce: 300 * time.Millisecond, Sink: r.sink, Output: out.count}), r, out
}

// A verdict that comes due while the screen has not looked at all the
// output written by then waits for the screen's next look, and is
// confirmed at that look, at once, when the verdict still holds: what the
// screen showed may already be overdrawn by bytes it has not taken.
func TestScreenVerdictWaitsForTheScreenToCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r, out := newLaggingMachine()
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		m.ScreenSeen(0)
		out.add(10)
		time.Sleep(400 * time.Millisecond)
		expect(t, r, "")
		m.ScreenSeen(5)
		synctest.Wait()
		expect(t, r, "")
		m.ScreenSeen(10) // a look that changed nothing: the verdict holds
		synctest.Wait()
		expect(t, r, "working@400")

		// Output keeps coming while the screen says idle, and the screen
		// always lags a little: idle is confirmed at the first look that
		// took what was written when it came due, not kept back for ever.
		m.Screen(Verdict{State: Idle})
		time.Sleep(5 * time.Millisecond) // looks between the timer's ticks
		for range 100 {
			seen := out.count()
			out.add(10)
			time.Sleep(10 * time.Millisecond)
			m.ScreenSeen(seen)
		}
		// Due at 700; the look at 705 took the bytes of 695 only, the
		// one at 715 those written before 700.
		expect(t, r, "working@400 idle@715")
	})
}

// A verdict waiting for the screen is not confirmed when the screen's
// next look says otherwise: the new verdict holds for its own debounce.
func TestScreenVerdictOverdrawnWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r, out := newLaggingMachine()
		defer m.Stop()
		out.add(10) // the agent's first bytes, not taken yet
		time.Sleep(350 * time.Millisecond)
		expect(t, r, "") // the empty screen's idle waits
		m.Screen(Verdict{State: Working, Rule: "busy_row"})
		m.ScreenSeen(10)
		time.Sleep(time.Second)
		expect(t, r, "working@650")
	})
}

// The person answers and the agent asks again at once: a short reply to
// the answer that ends with the marker, written before the screen could
// confirm the run (shorter than the debounce; no probe, no status
// channel). The session file says answered, then open again: the new
// question keeps the pane blocked: the answer to the old one no longer
// closes it when its grace ends.
func TestAQuestionAskedAgainBeforeTheAnswerClosedStaysOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		m.Screen(Verdict{State: Working, Rule: "busy"})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Screen(Verdict{State: Idle})
		time.Sleep(time.Second) // the person reads the question
		m.Answered("sentinel")
		m.Screen(Verdict{State: Working, Rule: "busy"})
		time.Sleep(200 * time.Millisecond)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel}) // the reply asks again
		m.Screen(Verdict{State: Idle})
		time.Sleep(3 * time.Second)
		if s := m.Snapshot(); s.State != Blocked || len(s.Reasons) != 1 {
			t.Fatalf("the second question: %+v", s)
		}
		expect(t, r, "working@300 blocked@1000(input needed)")
	})
}

// A sentinel the session file says was written while watched (Live) is
// news though the agent was never seen working — without the probe, a run
// quicker than the screen's debounce — when it opens and when another
// live reply asks anew. The history the file held is not. With the probe
// connected its runs decide: a live reply it did not run is not news.
func TestLiveSentinelsAreNewsWithoutTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(300*time.Millisecond, 0)
		defer m.Stop()
		live := func(entry string) Reason {
			return Reason{Key: "sentinel", Kind: KindSentinel, Entry: entry, Live: true}
		}
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Entry: "a0"})
		m.ClearReasons()
		m.Open(live("a1"))
		m.Open(live("a2"))
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Entry: "a3"})
		var asked []bool
		for _, e := range r.list() {
			if e.Kind == EventAsked {
				asked = append(asked, e.Reason.Restored)
			}
		}
		if got := r.restoredOpens(); got != "rn" || len(asked) != 2 || asked[0] || !asked[1] {
			t.Fatalf("blocked spells restored/news %q, want \"rn\"; asked again, restored: %v, want [false true]", got, asked)
		}
		m.ClearReasons()

		m.ProbeConnected(true)
		m.SessionStart()
		m.Open(live("b1"))
		if s := m.Snapshot(); len(s.Reasons) != 1 || !s.Reasons[0].Restored {
			t.Fatalf("a live reply the probe did not run: %+v", s.Reasons)
		}
	})
}
