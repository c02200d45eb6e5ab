package notify

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// told records what Triggers tell, as "kind", "kind(question)" or
// "kind[error]", and
// what they resolve, as "~kind:key".
type told struct {
	mu  sync.Mutex
	got []string
}

func (r *told) Notify(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ev.Kind.String()
	if ev.Question != "" {
		s += "(" + ev.Question + ")"
	}
	if ev.Error != "" {
		s += "[" + ev.Error + "]"
	}
	r.got = append(r.got, s)
}

func (r *told) Resolved(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, "~"+ev.Kind.String()+":"+ev.Key)
}

func (r *told) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, " ")
}

// triggerRig is a real state machine whose events go to Triggers.
func triggerRig(finishedAfter time.Duration) (*state.Machine, *told) {
	r := &told{}
	tr := NewTriggers(r, finishedAfter)
	m := state.New(state.Config{Sink: tr.StateEvent})
	return m, r
}

func expectTold(t *testing.T, r *told, want string) {
	t.Helper()
	if got := r.String(); got != want {
		t.Fatalf("told %q\n want %q", got, want)
	}
}

// Blocked is told once per spell, with the question; a run that ends
// blocked is not also told as finished; aborted runs are silent, errors
// always told.
func TestTriggersBlockedOncePerSpellAndRunOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Which file?"})
		// Same spell, but a script's wait is a new thing to act on: told,
		// by its label.
		m.Open(state.Reason{Key: "hook:a", Kind: state.KindHook, Label: "approve", Question: "approve"})
		m.Open(state.Reason{Key: "hook:a", Kind: state.KindHook, Label: "approve", Question: "approve"}) // the same wait
		m.AgentSettled()
		m.Close("hook:a")
		expectTold(t, r, "input-needed(Which file?) input-needed(approve)")

		m.AgentStart() // the answer closes the sentinel
		m.AgentEnd("stop", "")
		m.AgentSettled()
		m.AgentStart()
		m.AgentEnd("aborted", "")
		m.AgentSettled()
		m.AgentStart()
		m.AgentEnd("error", "")
		m.AgentSettled()
		m.Open(state.Reason{Key: "hook:b", Kind: state.KindHook, Label: "again"})
		expectTold(t, r, "input-needed(Which file?) input-needed(approve) finished failed input-needed")
	})
}

// Two dialogs at once: the person is told of the one they will find on
// the pane, the newest, which Pi's status channel names — once each in a
// spell, so the first one showing again when the newer is answered is no
// news. A dialog that opens while blocked is told too, with a restored
// question as with a told one; a wait that opens then is not.
func TestTriggersTellTheNewestDialog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.SessionStart()
		m.AgentStart()
		m.Open(state.Reason{Key: "ui_prompt#1", Kind: state.KindUIPrompt, Question: "Deploy?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Deploy?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Which region?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Deploy?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Which region?"})
		expectTold(t, r, "input-needed(Deploy?) input-needed(Which region?)")
		m.Close("ui_prompt#1")
		m.ProgramStatus(state.ProgramStatus{State: "working"})

		// Reports ahead of the probe: told once, with the newest.
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Tag it?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Which tag?"})
		m.Open(state.Reason{Key: "ui_prompt#2", Kind: state.KindUIPrompt, Question: "Tag it?"})
		m.Close("ui_prompt#2")
		m.ProgramStatus(state.ProgramStatus{State: "working"})
		expectTold(t, r, "input-needed(Deploy?) input-needed(Which region?) input-needed(Which tag?)")

		// A question asked, then a dialog over it (an extension asks once
		// the run settled): the dialog is what the pane shows.
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Which file?"})
		m.AgentSettled()
		m.Open(state.Reason{Key: "hook:a", Kind: state.KindHook, Label: "approve", Question: "approve"})
		m.Open(state.Reason{Key: "ui_prompt#3", Kind: state.KindUIPrompt, Question: "Commit?"})
		expectTold(t, r, "input-needed(Deploy?) input-needed(Which region?) input-needed(Which tag?) input-needed(Which file?) input-needed(approve) input-needed(Commit?)")

		// A restored question is not told; a dialog over it is news.
		m.SessionStart(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Which file?"})
		m.Open(state.Reason{Key: "ui_prompt#4", Kind: state.KindUIPrompt, Question: "Reload?"})
		m.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Reload?"})
		expectTold(t, r, "input-needed(Deploy?) input-needed(Which region?) input-needed(Which tag?) input-needed(Which file?) input-needed(approve) input-needed(Commit?) input-needed(Reload?)")
	})
}

// Issue 10: "finished" only for a run that took at least finished_after;
// a 60 ms turn says nothing, and failures are told whatever their length.
func TestTriggersFinishedOnlyAfterLongRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(20 * time.Second)
		defer m.Stop()
		m.ProbeConnected(true)
		run := func(d time.Duration, stop string) {
			m.AgentStart()
			time.Sleep(d)
			m.AgentEnd(stop, "")
			m.AgentSettled()
		}
		run(60*time.Millisecond, "stop")
		run(20*time.Second-time.Millisecond, "stop")
		run(60*time.Millisecond, "error")
		run(20*time.Second, "stop")
		run(5*time.Minute, "stop")
		expectTold(t, r, "failed finished finished")
	})
}

// pi-ask flows and permission prompts are told one by one by their id,
// also while the agent is blocked already, and again only after they
// closed.
func TestTriggersAskAndPermissionByID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		perm := state.Reason{Key: "permission:r1", Kind: state.KindPermission, Label: "Permission required", Question: "Permission required"}
		m.Open(perm)
		m.Open(state.Reason{Key: "ask:f1", Kind: state.KindAsk, Question: "Choose deployment"})
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel}) // the same spell: quiet
		m.Close("permission:r1")
		m.Open(perm) // reopened: told again
		m.Close("ask:f1")
		m.Close("permission:r1")
		m.Close("sentinel")
		expectTold(t, r, "permission-needed(Permission required) ask-started(Choose deployment) "+
			"~permission-needed:permission:r1 permission-needed(Permission required) "+
			"~ask-started:ask:f1 ~permission-needed:permission:r1")
	})
}

// Issue 10: what a session restores (a reload, resume or restart of an
// unanswered question) is not news: no toast, though the state is blocked.
func TestTriggersStayQuietForRestoredReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		// A restart: the session file says blocked before anything ran.
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel})
		m.ProbeConnected(true)
		m.SessionStart(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Which file?"})
		if s := m.Snapshot(); s.State != state.Blocked {
			t.Fatalf("state %s", s.State)
		}
		// /resume of another session that waits, from an idle one.
		m.AgentStart()
		m.AgentSettled()
		m.SessionReplaced()
		m.SessionStart(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Other?"})
		expectTold(t, r, "finished")
		// A new question in the session is news again.
		m.AgentStart()
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel, Question: "Next?"})
		m.AgentSettled()
		expectTold(t, r, "finished input-needed(Next?)")
	})
}

// A pi-ask flow a session restores while the agent is blocked already (a
// hook wait keeps it so across the reload) is history too: it opens
// without a toast, like one that opens the blocked state.
func TestTriggersStayQuietForARestoredAskWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		m.Open(state.Reason{Key: "hook:1", Kind: state.KindHook, Label: "review"})
		m.ProbeConnected(true)
		m.SessionStart(state.Reason{Key: "ask:f1", Kind: state.KindAsk, Question: "Deploy?"})
		if s := m.Snapshot(); s.State != state.Blocked || len(s.Reasons) != 2 {
			t.Fatalf("snapshot %+v", s)
		}
		expectTold(t, r, "input-needed")
	})
}

// notifications-and-sentinel.md D2.4, the run tracker, through the machine:
// the last stop reason of a run wins, error and length fail, aborted is
// silent, an unknown or missing one finished, a settle without a run (or
// after a shutdown) says nothing, and a second settle nothing more.
func TestTriggersRunVectors(t *testing.T) {
	cases := []struct {
		name string
		run  func(m *state.Machine)
		want string
	}{
		{"retries: last end wins", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("error", ""); m.AgentEnd("stop", "") }, "finished"},
		{"error", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("error", "") }, "failed"},
		{"length", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("length", "") }, "failed[" + lengthError + "]"},
		{"error says why", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("error", "429 slow down") }, "failed[429 slow down]"},
		{"retries: the last error says why", func(m *state.Machine) {
			m.AgentStart()
			m.AgentEnd("error", "503 down")
			m.AgentEnd("error", "Connection error.")
		}, "failed[Connection error.]"},
		{"the next run does not inherit the error", func(m *state.Machine) {
			m.AgentStart()
			m.AgentEnd("error", "503 down")
			m.AgentSettled()
			m.AgentStart()
			m.AgentEnd("error", "")
		}, "failed[503 down] failed"},
		{"a cancelled retry stays silent", func(m *state.Machine) {
			m.AgentStart()
			m.AgentEnd("error", "503 down")
			m.RunCancelled()
		}, ""},
		{"aborted is silent", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("aborted", "") }, ""},
		{"unknown is finished", func(m *state.Machine) { m.AgentStart(); m.AgentEnd("tool_use", "") }, "finished"},
		{"no end is finished", func(m *state.Machine) { m.AgentStart() }, "finished"},
		{"settle without a run", func(*state.Machine) {}, ""},
		{"shutdown forgets the run", func(m *state.Machine) { m.AgentStart(); m.SessionShutdown() }, ""},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			m, r := triggerRig(0)
			defer m.Stop()
			m.ProbeConnected(true)
			c.run(m)
			m.AgentSettled()
			m.AgentSettled()
			if got := r.String(); got != c.want {
				t.Errorf("%s: told %q, want %q", c.name, got, c.want)
			}
		})
	}
}

// Another reply of the session file that asks while the agent is blocked
// on the sentinel already is a new question, told once; the reply told
// already, and one that comes from the session's history, are not told.
func TestTriggersTellASentinelThatAsksAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := triggerRig(0)
		defer m.Stop()
		sentinel := func(entry string) state.Reason {
			return state.Reason{Key: "sentinel", Kind: state.KindSentinel, Entry: entry}
		}
		m.Open(sentinel("a0")) // before any work: history
		m.Open(sentinel("a1")) // asks anew, still history
		expectTold(t, r, "")
		m.ProgramStatus(state.ProgramStatus{State: "working"})
		m.ProgramStatus(state.ProgramStatus{State: "done"})
		m.Open(sentinel("a2"))
		m.Open(sentinel("a2")) // read again
		m.Open(sentinel("a3"))
		m.Open(state.Reason{Key: "sentinel", Kind: state.KindSentinel}) // no entry: the same
		expectTold(t, r, "input-needed input-needed")
	})
}

// Hushed (a wrapper nested inside this one's agent holds the pane and
// tells of it), the triggers tell nothing, neither a question nor a run's
// end, yet go on following the machine: the spell that began hushed is
// not told when the hush lifts within it, and the next one is.
func TestTriggersHushedTellNothingAndFollowOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &told{}
		tr := NewTriggers(r, 0)
		hushed := true
		tr.HushWhile(func() bool { return hushed })
		m := state.New(state.Config{Sink: tr.StateEvent})
		defer m.Stop()
		m.ProbeConnected(true)
		m.AgentStart()
		m.AgentEnd("error", "")
		m.AgentSettled()
		m.Open(state.Reason{Key: "hook:a", Kind: state.KindHook, Label: "approve", Question: "approve"})
		m.Open(state.Reason{Key: "hook:b", Kind: state.KindHook, Label: "deploy", Question: "deploy"})
		synctest.Wait()
		expectTold(t, r, "")

		hushed = false
		m.Close("hook:b") // the spell goes on: nothing new
		m.Close("hook:a")
		m.Open(state.Reason{Key: "hook:c", Kind: state.KindHook, Label: "review", Question: "review"})
		synctest.Wait()
		expectTold(t, r, "input-needed(review)")
	})
}
