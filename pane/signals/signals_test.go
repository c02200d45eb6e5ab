package signals

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/permissions"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// rig feeds Signals and records what reaches Herdr (the machine's
// transitions) and the person (what notify's Triggers tell), wired as wrap
// wires them.
type rig struct {
	s *Signals
	m *state.Machine

	mu          sync.Mutex
	transitions []string
	notes       []string
	// reasons are the machine's opened and closed events, "+key" and
	// "-key", in order.
	reasons []string
	// runs are the lengths of the runs the machine said finished.
	runs []time.Duration
}

func (r *rig) Notify(ev notify.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ev.Kind.String()
	if ev.Question != "" {
		s += "(" + ev.Question + ")"
	}
	if ev.Error != "" {
		s += "[" + ev.Error + "]"
	}
	r.notes = append(r.notes, s)
}

func (r *rig) Resolved(notify.Event) {}

func newRig() *rig { return newRigFinishedAfter(0) }

// newRigFinishedAfter is newRig with wrap's finished_after: a run shorter
// than d ends without a "finished" notification.
func newRigFinishedAfter(d time.Duration) *rig {
	r := &rig{}
	tr := notify.NewTriggers(r, d)
	// wrap's defaults: the screen says nothing before a second has passed.
	r.m = state.New(state.Config{Debounce: 300 * time.Millisecond, StartupGrace: time.Second, Sink: func(e state.Event) {
		switch e.Kind {
		case state.EventOpened, state.EventClosed:
			sign := "+"
			if e.Kind == state.EventClosed {
				sign = "-"
			}
			r.mu.Lock()
			r.reasons = append(r.reasons, sign+e.Reason.Key)
			r.mu.Unlock()
		}
		if e.Kind == state.EventRunFinished {
			r.mu.Lock()
			r.runs = append(r.runs, e.Duration)
			r.mu.Unlock()
		}
		if e.Kind == state.EventTransition {
			s := string(e.To)
			if e.Message != "" {
				s += "(" + e.Message + ")"
			}
			r.mu.Lock()
			r.transitions = append(r.transitions, s)
			r.mu.Unlock()
		}
		tr.StateEvent(e)
	}})
	// A session name heard goes in line with the notifications, to show
	// which it comes before.
	r.s = New(Config{Machine: r.m, Agent: "pi", SessionName: func(name string) {
		if name != "" {
			r.mu.Lock()
			r.notes = append(r.notes, "name("+name+")")
			r.mu.Unlock()
		}
	}})
	return r
}

func (r *rig) feed(evs ...control.Event) {
	for _, e := range evs {
		r.s.ProbeEvent(e)
	}
}

func (r *rig) got() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.transitions, " "), strings.Join(r.notes, ",")
}

func (r *rig) expect(t *testing.T, transitions, notes string) {
	t.Helper()
	gt, gn := r.got()
	if gt != transitions || gn != notes {
		t.Fatalf("transitions %q, want %q\nnotifications %q, want %q", gt, transitions, gn, notes)
	}
}

const q = "Which file should I edit?"

var blockedReply = []control.Event{
	control.AgentStart{},
	control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q},
	control.AgentSettled{Idle: true, InputNeeded: true, Question: q},
}

func TestSentinelRunNotifiesBlockedNotFinished(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(blockedReply...)
	r.expect(t, "idle working blocked(input needed)", "input-needed("+q+")")
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true})
	r.expect(t, "idle working blocked(input needed) working idle", "input-needed("+q+"),finished")
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "aborted"}, control.AgentSettled{Aborted: true})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{})
	if _, notes := r.got(); !strings.HasSuffix(notes, ",finished,failed") {
		t.Fatalf("aborted must be silent, error must notify: %q", notes)
	}
}

// Escape on Pi's retry countdown ("Retrying (1/3) in 2s... (escape to
// cancel)"), or on the compaction that recovers from a context overflow,
// ends the run with the failed reply's stop reason, error, and
// agent_settled.aborted false; the probe says what was cancelled. The
// person pressed Escape: silent, as any aborted run. A retry that runs out
// ("Retry failed after 3 attempts") still fails, and so does a run Pi says
// was aborted no matter its last stop reason is silent.
func TestACancelledRetryIsSilent(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{RetryCancelled: true})
	r.expect(t, "idle working idle", "")
	if st := r.s.Status(); st.LastStopReason != "error" || !st.LastAborted {
		t.Fatalf("status after a cancelled retry: stop %q, aborted %v; want error, aborted", st.LastStopReason, st.LastAborted)
	}
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{CompactionCancelled: true})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{Aborted: true})
	r.expect(t, "idle working idle working idle working idle", "")
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentStart{}, control.AgentEnd{StopReason: "error"}, control.AgentSettled{})
	r.expect(t, "idle working idle working idle working idle working idle", "failed")
}

// A failed run is told with what Pi said went wrong with its last reply,
// which the probe's agent_end carries (Pi 1.6.0, and Pi 0.73.1, whose
// agent_end ends the run); a retry the person cancelled stays silent
// whatever the failed reply said.
func TestAFailedRunSaysWhy(t *testing.T) {
	const why = `429: {"message":"Rate limit reached"}`
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error", ErrorMessage: "503 overloaded"}, control.AgentSettled{RetryCancelled: true})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error", ErrorMessage: why}, control.AgentSettled{})
	r.expect(t, "idle working idle working idle", "failed["+why+"]")

	old := newRig()
	defer old.m.Stop()
	old.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", ModeInferred: true})
	old.feed(control.AgentStart{}, control.AgentEnd{StopReason: "error", ErrorMessage: "Connection error."})
	old.expect(t, "idle working idle", "failed[Connection error.]")
}

// The session's name (Pi's /name) is passed on before the event it came
// with reaches the machine: the notification that event causes names it.
func TestTheSessionNameComesBeforeTheNotification(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionName: "auth"})
	r.feed(control.AgentStart{},
		control.AgentEnd{StopReason: "stop", SessionName: "auth refactor", InputNeeded: true, Question: q},
		control.AgentSettled{Idle: true, SessionName: "auth refactor", InputNeeded: true, Question: q})
	r.expect(t, "idle working blocked(input needed)", "name(auth),name(auth refactor),name(auth refactor),input-needed("+q+")")
}

// The answer reaches the session file and the probe's agent_start at the
// same moment, through different channels; when the file is read first
// the pane still goes from blocked straight to working (the CI run of
// stop 16 saw blocked, idle, working here). A branch move that answers
// nothing and starts no run closes the question after the grace.
func TestAnswerReadFromTheFileFirstGoesStraightToWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
		r.feed(blockedReply...)
		r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
		r.s.SessionSentinel(session.Sentinel{Open: false, File: "/s.jsonl"})
		time.Sleep(time.Millisecond)
		r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true})
		r.expect(t, "idle working blocked(input needed) working idle", "input-needed("+q+"),finished")

		r.feed(blockedReply...)
		r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a2"})
		r.s.SessionSentinel(session.Sentinel{Open: false, File: "/s.jsonl"})
		r.expect(t, "idle working blocked(input needed) working idle working blocked(input needed)", "input-needed("+q+"),finished,input-needed("+q+")")
		time.Sleep(state.AnswerGrace)
		synctest.Wait()
		r.expect(t, "idle working blocked(input needed) working idle working blocked(input needed) idle", "input-needed("+q+"),finished,input-needed("+q+")")
	})
}

// Pi 0.73.1 has no agent_settled (the probe infers its mode): agent_end
// ends the run.
func TestOldPiSettlesOnAgentEnd(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", ModeInferred: true},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q})
	r.expect(t, "idle working blocked(input needed)", "input-needed("+q+")")
}

// herdr:blocked is counted as Herdr's own consumer counts it: each active
// opens one, each other payload closes one; the pane stays blocked until
// the count is back to zero.
func TestHerdrBlockedIsBalanced(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"},
		control.HerdrBlocked{Active: true, Label: "approve bash"}, control.HerdrBlocked{Active: true, Label: "second"},
		control.HerdrBlocked{Active: false})
	r.expect(t, "idle blocked(approve bash)", "input-needed(approve bash)")
	r.feed(control.HerdrBlocked{Active: false}, control.HerdrBlocked{Active: false})
	r.expect(t, "idle blocked(approve bash) idle", "input-needed(approve bash)")
}

// A permission prompt blocks with its label and a permission notification;
// its decision unblocks. An ask arriving while already blocked is told of
// its own, with its title.
func TestPermissionPromptsAndAsks(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	p := permissions.Prompt{RequestID: "r1", AgentName: "Worker", Surface: "bash", Value: "git push"}
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"}, control.PermissionPrompt{Prompt: p},
		control.PermissionPrompt{Prompt: p}, // the same id again: tracked once
		control.AskStarted{FlowID: "f1", Title: "Choose deployment"})
	if _, notes := r.got(); notes != "permission-needed(Permission required),ask-started(Choose deployment)" {
		t.Fatalf("notifications %q", notes)
	}
	r.feed(control.PermissionDecision{Decision: permissions.Decision{Resolution: "user_approved", Surface: "bash", Value: "git push", AgentName: "Worker"}})
	if s := r.s.Status(); s.State != "blocked" || len(s.Reasons) != 1 || s.Reasons[0].Kind != "pi-ask" {
		t.Fatalf("after the decision: %+v", s)
	}
	r.feed(control.AskCompleted{FlowID: "f1"})
	if s := r.s.Status(); s.State != "idle" {
		t.Fatalf("after the ask: %+v", s)
	}
	r.feed(control.AskStarted{FlowID: "f1", Title: "Choose again"}) // closed, so told again
	if _, notes := r.got(); !strings.HasSuffix(notes, ",ask-started(Choose again)") {
		t.Fatalf("notifications %q", notes)
	}
}

// When Pi goes away without shutting its session down, hook waits and the
// sentinel from the file stay, and what only the probe could close — Pi's
// dialog, a channel wait — is held a while for it to come back
// (TestProbeReconnectKeepsAnOpenDialog, TestChannelWaitsSurviveAProbeReconnect).
// A new Pi session ends the hold.
func TestProbeDisconnectKeepsHooksAndSentinel(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup"},
		control.WaitingForInput{Source: "plan-md", ID: "1", Waiting: true}, control.UIPromptStart{Kind: "confirm"})
	if err := r.s.Wait(control.WaitRequest{Action: control.WaitStart, Source: "deploy", ID: "7"}); err != nil {
		t.Fatal(err)
	}
	r.s.SessionFileRead("/s.jsonl") // the watcher names the file before it reports from it
	r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl"})
	r.feed(control.ProbeDisconnected{PID: 1})
	s := r.s.Status()
	var kinds []string
	for _, reason := range s.Reasons {
		kinds = append(kinds, reason.Kind)
	}
	if s.State != "blocked" || strings.Join(kinds, ",") != "wait,ui-prompt,wait,sentinel" || s.SessionFile != "/s.jsonl" {
		t.Fatalf("after the probe left: %+v (kinds %v)", s, kinds)
	}
	// A new Pi session keeps the hook wait too.
	r.feed(control.ProbeConnected{PID: 2}, control.SessionStart{Reason: "startup"})
	if s := r.s.Status(); len(s.Reasons) != 1 || s.Reasons[0].Key != "hook:deploy:7" {
		t.Fatalf("after a new session: %+v", s)
	}
}

// The session file read between agent_end and agent_settled already shows
// the marker: the run has not settled, so it waits for the settle, which
// blocks with the question. Should Pi leave before settling, the file's
// word counts.
func TestFileSentinelWaitsForTheSettle(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q})
	r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
	r.expect(t, "idle working", "")
	r.feed(control.AgentSettled{Idle: true, InputNeeded: true, Question: q})
	r.expect(t, "idle working blocked(input needed)", "input-needed("+q+")")

	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true})
	r.s.SessionSentinel(session.Sentinel{Open: false, File: "/s.jsonl"})
	r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a2"})
	r.feed(control.ProbeDisconnected{PID: 1})
	r.expect(t, "idle working blocked(input needed) working blocked(input needed)", "input-needed("+q+"),input-needed")
}

// Issue 10: /reload (and /resume of the same session) while blocked. Pi
// sends session_shutdown, then, about 100 ms later, the new instance's
// session_start that restores the unanswered question. Nothing is
// reported (no idle, no second blocked) and no second toast goes out.
func TestReloadOrResumeWhileBlockedReportsNothing(t *testing.T) {
	for _, reason := range []string{"reload", "resume", "fork"} {
		t.Run(reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl"})
				r.feed(blockedReply...)
				r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
				want := "idle working blocked(input needed)"
				r.expect(t, want, "input-needed("+q+")")

				time.Sleep(time.Second)
				r.feed(control.SessionShutdown{Reason: reason, TargetSessionFile: "/s.jsonl"})
				time.Sleep(108 * time.Millisecond)
				r.feed(control.SessionStart{Reason: reason, Mode: "tui", SessionFile: "/s.jsonl", InputNeeded: true, Question: q})
				time.Sleep(time.Minute)
				r.expect(t, want, "input-needed("+q+")")
				if s := r.s.Status(); s.State != "blocked" || len(s.Reasons) != 1 || s.Reasons[0].Kind != "sentinel" {
					t.Fatalf("after %s: %+v", reason, s)
				}
			})
		})
	}
}

// Issue 10: a restart on an unanswered question (a new wrapper, `pi
// --session`): the file says blocked before Pi is up, and the probe's
// session start says the same. Blocked is reported, as the pane's first
// state, but the person is not told again.
func TestRestartOnUnansweredQuestionIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", InputNeeded: true, Question: q})
		r.expect(t, "blocked(input needed)", "")
		// The answer, then a new question: that one is news.
		r.feed(blockedReply...)
		r.expect(t, "blocked(input needed) working blocked(input needed)", "input-needed("+q+")")
	})
}

// /new from a blocked session: idle once the new session starts, not
// before; /quit ends everything at once.
func TestNewSessionAndQuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
		r.feed(blockedReply...)
		r.feed(control.SessionShutdown{Reason: "new"})
		if s := r.s.Status(); s.State != "blocked" {
			t.Fatalf("between shutdown and start: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
		r.feed(control.SessionStart{Reason: "new", Mode: "tui"})
		r.expect(t, "idle working blocked(input needed) idle", "input-needed("+q+")")
		r.feed(blockedReply...)
		r.feed(control.SessionShutdown{Reason: "quit"})
		r.expect(t, "idle working blocked(input needed) idle working blocked(input needed) idle", "input-needed("+q+"),input-needed("+q+")")
	})
}

// status says how the last run ended (a live handoff asks the pane's
// wrapper whether its turn was cut), and forgets it when a run starts.
func TestStatusSaysHowTheLastRunEnded(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true})
	if st := r.s.Status(); st.LastStopReason != "stop" || st.LastAborted || st.Runs != 1 {
		t.Fatalf("after a finished run: %q aborted %v, %d runs", st.LastStopReason, st.LastAborted, st.Runs)
	}
	// Escape before the model said anything: no aborted reply, but the
	// settle says the run was aborted.
	r.feed(control.AgentStart{})
	if st := r.s.Status(); st.LastStopReason != "" || st.LastAborted {
		t.Fatalf("while a run works: %q aborted %v", st.LastStopReason, st.LastAborted)
	}
	r.feed(control.AgentEnd{StopReason: "toolUse"}, control.AgentSettled{Aborted: true})
	if st := r.s.Status(); st.LastStopReason != "toolUse" || !st.LastAborted {
		t.Fatalf("after an aborted run: %q aborted %v", st.LastStopReason, st.LastAborted)
	}
	// Pi 0.73.1 (no settle): the aborted reply says it.
	r.feed(control.AgentStart{}, control.AgentEnd{StopReason: "aborted"})
	if st := r.s.Status(); st.LastStopReason != "aborted" || !st.LastAborted || st.Runs != 2 {
		t.Fatalf("after an aborted reply: %q aborted %v, %d runs", st.LastStopReason, st.LastAborted, st.Runs)
	}
}

// The probe's connection is lost and made again (the wrapper dropped it):
// the probe repeats the session, asked afresh, and a run under way. At
// rest on a question nothing is reported or told again; mid-run the pane
// is working again once the repeat arrives, whatever the screen said
// meanwhile, and the run still ends in a finished notification.
func TestProbeReconnectRepeatsWithoutNews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl"})
		r.feed(blockedReply...)
		want, told := "idle working blocked(input needed)", "input-needed("+q+")"
		r.expect(t, want, told)

		time.Sleep(time.Minute)
		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Second)
		r.feed(control.ProbeConnected{PID: 1},
			control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl", InputNeeded: true, Question: q})
		time.Sleep(time.Minute)
		r.expect(t, want, told)
		if s := r.s.Status(); s.State != "blocked" || s.SessionFile != "/s.jsonl" || len(s.Reasons) != 1 || s.Reasons[0].Kind != "sentinel" {
			t.Fatalf("after the reconnect at rest: %+v", s)
		}

		r.feed(control.AgentStart{})
		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Second)
		r.feed(control.ProbeConnected{PID: 1},
			control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl"}, control.AgentStart{})
		time.Sleep(time.Minute)
		if s := r.s.Status(); s.State != "working" {
			t.Fatalf("after the reconnect mid-run: %+v", s)
		}
		r.feed(control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true})
		if gt, gn := r.got(); !strings.HasPrefix(gt, want+" working") || !strings.HasSuffix(gt, "working idle") || gn != told+",finished" {
			t.Fatalf("transitions %q, notifications %q", gt, gn)
		}
	})
}

// `status` names the process holding a wait (`waiting start --pid`): the
// latest start says which (none without --pid), a stop forgets it, and a
// reopened wait has the holder its new start gave.
func TestStatusNamesTheHolderOfAWait(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	holders := func() map[string]int {
		got := map[string]int{}
		for _, reason := range r.s.Status().Reasons {
			got[reason.Key] = reason.HolderPID
		}
		return got
	}
	do := func(action, id string, pid int) {
		t.Helper()
		if err := r.s.Wait(control.WaitRequest{Action: action, Source: "deploy", ID: id, PID: pid}); err != nil {
			t.Fatal(err)
		}
	}
	do(control.WaitStart, "1", 4242)
	do(control.WaitStart, "2", 0)
	if got := holders(); got["hook:deploy:1"] != 4242 || got["hook:deploy:2"] != 0 || len(got) != 2 {
		t.Fatalf("holders %v", got)
	}
	do(control.WaitStart, "1", 5151)
	do(control.WaitStart, "2", 6161)
	if got := holders(); got["hook:deploy:1"] != 5151 || got["hook:deploy:2"] != 6161 {
		t.Fatalf("after the second starts: %v", got)
	}
	do(control.WaitStart, "2", 0)
	do(control.WaitStop, "1", 0)
	do(control.WaitStart, "1", 0)
	if got := holders(); got["hook:deploy:1"] != 0 || got["hook:deploy:2"] != 0 {
		t.Fatalf("after starts without --pid and a stop: %v", got)
	}
}

// `status` names the session as the probe last said it, for `herdr-pi
// notify` in the pane to name it as the wrapper's notifications do.
func TestStatusNamesTheSession(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionName: "deploy fixes"})
	if got := r.s.Status().SessionName; got != "deploy fixes" {
		t.Fatalf("after session start: %q", got)
	}
	r.feed(control.AgentStart{}, control.AgentSettled{Idle: true, SessionName: "release"})
	if got := r.s.Status().SessionName; got != "release" {
		t.Fatalf("after a run renamed it: %q", got)
	}
}

// The probe's connection is lost while one of Pi's dialogs is open, and
// made again: the probe repeats the dialog after the session. The pane
// stays blocked throughout (no idle between the loss and the repeat) and
// the person is not told of the same dialog twice (a replay is no news).
// A dialog answered while the probe was away is not repeated: it closes
// once the reconnected probe has had time to say what is still open, as
// one does when the probe never comes back.
func TestProbeReconnectKeepsAnOpenDialog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1})
		time.Sleep(2 * time.Second)
		dialog := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
		r.feed(dialog)
		time.Sleep(time.Minute)
		want, told := "idle blocked(waiting for your answer)", "input-needed(Deploy now?)"
		r.expect(t, want, told)

		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Second)
		r.expect(t, want, told)
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1}, dialog)
		time.Sleep(time.Minute)
		r.expect(t, want, told)
		if s := r.s.Status(); s.State != "blocked" || len(s.Reasons) != 1 || s.Reasons[0].Kind != "ui-prompt" {
			t.Fatalf("after the reconnect: %+v", s)
		}
		// The repeated dialog is the one that closes.
		r.feed(control.UIPromptEnd{Kind: "confirm", Title: "Deploy now?"})
		time.Sleep(time.Minute)
		r.expect(t, want+" idle", told)

		// Answered while the probe was away: no repeat, idle.
		r.feed(dialog)
		time.Sleep(time.Minute)
		want, told = want+" idle blocked(waiting for your answer)", told+",input-needed(Deploy now?)"
		r.expect(t, want, told)
		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Second)
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1})
		time.Sleep(time.Minute)
		r.expect(t, want+" idle", told)

		// The probe never comes back: the dialog cannot be heard closing.
		r.feed(dialog)
		time.Sleep(time.Minute)
		want, told = want+" idle blocked(waiting for your answer)", told+",input-needed(Deploy now?)"
		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Minute)
		r.expect(t, want+" idle", told)
	})
}

// Of two dialogs open when the probe lost its connection, the one it
// repeats is found by its title, not taken for the oldest: the other was
// answered while it was away, and the pane names the one still open.
func TestProbeReconnectRepeatIsMatchedByTitle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1})
		time.Sleep(2 * time.Second)
		r.feed(control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}, control.UIPromptStart{Kind: "select", Title: "Which region?"})
		time.Sleep(time.Minute)
		r.feed(control.ProbeDisconnected{PID: 1})
		time.Sleep(time.Second)
		r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1},
			control.UIPromptStart{Kind: "select", Title: "Which region?"})
		time.Sleep(time.Minute)
		if open := r.m.Snapshot().Reasons; len(open) != 1 || open[0].Question != "Which region?" {
			t.Fatalf("after the reconnect: %+v; want one dialog, \"Which region?\"", open)
		}
		r.feed(control.UIPromptEnd{Kind: "select", Title: "Which region?"})
		time.Sleep(time.Minute)
		if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
			t.Fatalf("after its end: %+v", s)
		}
	})
}

// A dialog of Pi's open when the probe lost its connection is held for its
// return only when it returns as the same Pi process in the same session
// (the pid of its hello and the count of sessions its session_start says,
// as for the channel waits): then the repeat takes it over, no blip and no
// second notification. Any other return — another Pi process, the same Pi
// after a /new, /resume or /reload while it was away, or a probe that does
// not count its sessions and so cannot say — starts a session the dialog is
// not part of: it closes at that session_start, not a second later, and a
// dialog the new session repeats is that session's own.
func TestProbeReconnectKeepsDialogsOnlyOfTheSameSession(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	again := start
	again.Reason = "reconnect"
	moved := again
	moved.SessionSeq = 2 // a /new, /resume or /reload while away
	uncounted, uncountedAgain := start, again
	uncounted.SessionSeq, uncountedAgain.SessionSeq = 0, 0
	cases := []struct {
		name        string
		first, back control.SessionStart
		pid         int // of the returning probe (the first is 7)
		kept        bool
	}{
		{"the same Pi in the same session", start, again, 7, true},
		{"another Pi process", start, again, 8, false},
		{"the same Pi in another session", start, moved, 7, false},
		{"a probe that does not count its sessions", uncounted, uncountedAgain, 7, false},
	}
	dialog := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7, Conn: 1}, c.first)
				time.Sleep(2 * time.Second)
				r.feed(dialog)
				time.Sleep(time.Minute)
				transitions, notes := r.got()
				opened := r.reasonEvents()
				if opened != "+ui_prompt#1" {
					t.Fatalf("the dialog did not open: reasons %q", opened)
				}

				r.feed(control.ProbeDisconnected{PID: 7, Conn: 1})
				time.Sleep(time.Second)
				r.feed(control.ProbeConnected{PID: c.pid, Conn: 2}, c.back)
				synctest.Wait()
				if !c.kept {
					if got := r.reasonEvents(); got != opened+" -ui_prompt#1" {
						t.Fatalf("at the session_start: reasons %q, want %q (the old session's dialog closed there)", got, opened+" -ui_prompt#1")
					}
					r.feed(dialog)
					time.Sleep(time.Minute)
					if got, s := r.reasonEvents(), r.s.Status(); got != opened+" -ui_prompt#1 +ui_prompt#2" || s.State != "blocked" {
						t.Fatalf("after the new session's dialog: reasons %q (state %s), want %q, blocked", got, s.State, opened+" -ui_prompt#1 +ui_prompt#2")
					}
					return
				}
				r.feed(dialog)
				time.Sleep(time.Minute)
				if gt, gn := r.got(); gt != transitions || gn != notes || r.reasonEvents() != opened || r.s.Status().State != "blocked" {
					t.Fatalf("after the return: transitions %q, notifications %q, reasons %q (state %s); want %q, %q, %q, blocked",
						gt, gn, r.reasonEvents(), r.s.Status().State, transitions, notes, opened)
				}
			})
		})
	}
}

// The probe's connection lost and made again while a run is under way
// (the same Pi, the same session) is no news: the pane stays working
// throughout — while the probe is away Pi's screen says so, and the
// resync says the run goes on — and the run that then settles is told as
// one, its length counted from its real start. Before, the new connection
// and the repeated session each said idle for a moment (working idle
// working), and the run was counted from the reconnect.
func TestProbeReconnectMidRunStaysWorking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.feed(control.ProbeConnected{PID: 1, Conn: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1})
		time.Sleep(2 * time.Second)
		r.feed(control.AgentStart{})
		r.m.Screen(state.Verdict{State: state.Working, Rule: "busy_border"})
		time.Sleep(time.Minute)
		r.expect(t, "idle working", "")
		start := r.m.Snapshot()

		r.feed(control.ProbeDisconnected{PID: 1, Conn: 1})
		time.Sleep(time.Second)
		r.feed(control.ProbeConnected{PID: 1, Conn: 2},
			control.SessionStart{Reason: "reconnect", Mode: "tui", SessionFile: "/s.jsonl", SessionSeq: 1, Running: true},
			control.AgentStart{})
		time.Sleep(time.Minute)
		r.expect(t, "idle working", "")
		if snap := r.m.Snapshot(); snap.State != state.Working || snap.Since != start.Since || !snap.RunActive {
			t.Fatalf("after the reconnect: %+v, want working since %v, the run active", snap, start.Since)
		}

		r.feed(control.AgentEnd{StopReason: "stop"}, control.AgentSettled{})
		time.Sleep(time.Minute)
		r.expect(t, "idle working idle", "finished")
		r.mu.Lock()
		defer r.mu.Unlock()
		if want := 2*time.Minute + time.Second; len(r.runs) != 1 || r.runs[0] != want {
			t.Fatalf("runs %v, want one of %v (from its start, not from the reconnect)", r.runs, want)
		}
	})
}

// The wrapper hears each session file Pi names at session_start, for its
// pane's opener (handoff.WriteStarted): one that names none is not heard.
func TestSessionStartedHearsTheSessionFile(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	var heard []string
	r.s = New(Config{Machine: r.m, Agent: "pi", SessionStarted: func(file string) {
		heard = append(heard, file)
	}})
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.SessionStart{Reason: "new", Mode: "tui", SessionFile: "/s/a.jsonl"})
	if strings.Join(heard, ",") != "/s/a.jsonl" {
		t.Fatalf("heard %q, want the one session file named", heard)
	}
	if st := r.s.Status(); st.SessionFile != "/s/a.jsonl" {
		t.Fatalf("status shows %q", st.SessionFile)
	}
}
