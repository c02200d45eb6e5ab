package signals

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// A question Pi asks while its probe is away — the connection lost, or
// the wrapper fell behind and the probe dropped the run's end — reaches
// the wrapper only as the session the probe repeats on its return. In the
// same session of the same Pi, a question the wrapper never had open was
// asked meanwhile: it is told, once. One it had open (told when asked, or
// restored from the session's history) is not told again, and neither is
// the question of a session started while it was away (/resume: history)
// unless a run of that session ended meanwhile in the same Pi (/new, then
// the reply asks): that question was asked, not restored.
func TestAQuestionAskedWhileTheProbeWasAwayIsToldOnce(t *testing.T) {
	const q2 = "Which branch?"
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	back := func(entry, question string) control.SessionStart {
		e := start
		e.Reason = "reconnect"
		e.InputNeeded, e.Question, e.QuestionEntry = true, question, entry
		return e
	}
	restoring := start
	restoring.InputNeeded, restoring.Question, restoring.QuestionEntry = true, q, "e0"
	resumed := back("e9", q2)
	resumed.SessionSeq, resumed.SessionFile, resumed.SessionID = 2, "/t.jsonl", "sid2"
	// /new while away, and the new session's first reply asks: the
	// probe's lastRun says a run of that session ended, unheard.
	renewed := resumed
	renewed.LastRun = &control.RunEnd{StopReason: "stop", Ended: 1}
	asked := func(entry, question string) []control.Event {
		return []control.Event{control.AgentStart{},
			control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: question, QuestionEntry: entry},
			control.AgentSettled{Idle: true, InputNeeded: true, Question: question, QuestionEntry: entry}}
	}
	lost := []control.Event{control.ProbeDisconnected{PID: 7}}
	redial := []control.Event{control.ProbeConnected{PID: 7}}
	cat := func(parts ...[]control.Event) []control.Event {
		var out []control.Event
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := []struct {
		name   string
		start  control.SessionStart
		before []control.Event // while the probe is there
		script string          // a `waiting start` label held throughout ("": none)
		away   []control.Event // the loss and the return
		notes  string
		state  string
	}{
		{"asked while the connection was down", start, []control.Event{control.AgentStart{}},
			"", cat(lost, redial, []control.Event{back("e1", q)}), "input-needed(" + q + ")", "blocked"},
		{"asked while the wrapper fell behind", start, []control.Event{control.AgentStart{}},
			"", []control.Event{back("e1", q)}, "input-needed(" + q + ")", "blocked"},
		{"asked while away and repeated twice", start, []control.Event{control.AgentStart{}},
			"", cat(lost, redial, []control.Event{back("e1", q)}, lost, redial, []control.Event{back("e1", q)}),
			"input-needed(" + q + ")", "blocked"},
		{"told before the loss", start, asked("e1", q),
			"", cat(lost, redial, []control.Event{back("e1", q)}), "input-needed(" + q + ")", "blocked"},
		{"answered and asked again while away", start, asked("e1", q),
			"", cat(lost, redial, []control.Event{back("e2", q2)}), "input-needed(" + q + "),input-needed(" + q2 + ")", "blocked"},
		{"answered and asked again while behind", start, asked("e1", q),
			"", []control.Event{back("e2", q2)}, "input-needed(" + q + "),input-needed(" + q2 + ")", "blocked"},
		{"restored at the start", restoring, nil,
			"", cat(lost, redial, []control.Event{back("e0", q)}), "", "blocked"},
		{"a session resumed while away", start, nil,
			"", cat(lost, redial, []control.Event{resumed}), "", "blocked"},
		{"a new session started while away, and its reply asked", start, nil,
			"", cat(lost, redial, []control.Event{renewed}), "input-needed(" + q2 + ")", "blocked"},
		{"a new session started while away asked, the old one's question open", start, asked("e1", q),
			"", cat(lost, redial, []control.Event{renewed}), "input-needed(" + q + "),input-needed(" + q2 + ")", "blocked"},
		{"a new session started while away asked, repeated twice", start, nil,
			"", cat(lost, redial, []control.Event{renewed}, lost, redial, []control.Event{renewed}), "input-needed(" + q2 + ")", "blocked"},
		{"a session resumed while away, another Pi's run", start, nil,
			"", cat(lost, []control.Event{control.ProbeConnected{PID: 8}, renewed}), "", "blocked"},
		{"asked while away under a script's wait", start, []control.Event{control.AgentStart{}},
			"approve", cat(lost, redial, []control.Event{back("e1", q)}), "input-needed(approve),input-needed(" + q + ")", "blocked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, c.start)
				time.Sleep(2 * time.Second)
				if c.script != "" {
					r.wait(t, control.WaitStart, "1", c.script)
				}
				r.feed(c.before...)
				time.Sleep(time.Second)
				for _, ev := range c.away {
					r.feed(ev)
					time.Sleep(time.Second)
				}
				time.Sleep(time.Minute)
				_, notes := r.got()
				if notes != c.notes {
					t.Errorf("notifications %q, want %q", notes, c.notes)
				}
				if s := r.s.Status(); s.State != c.state {
					t.Errorf("state %s, want %s", s.State, c.state)
				}
			})
		})
	}
}

// While the probe is away the person answers Pi's dialog and Pi opens
// another (the next tool call asks): the probe, back, repeats only the new
// one. That is a dialog of its own, not the one held: told, and named by
// its own title, while the held one closes. A dialog Pi's status channel
// retitled (the newest of two open at once) is still found by the title
// the probe gave it.
func TestADialogOpenedWhileTheProbeWasAwayIsToldByItsTitle(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	again := start
	again.Reason = "reconnect"
	deploy := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
	region := control.UIPromptStart{Kind: "select", Title: "Which region?"}
	cases := []struct {
		name    string
		status  bool // Pi's status channel names the newest dialog
		repeats []control.Event
		notes   string
		open    string
	}{
		{"the held one answered, another opened", false, []control.Event{region},
			"input-needed(Deploy now?),input-needed(Which region?)", "Which region?"},
		{"the held one still open, another opened", false, []control.Event{deploy, region},
			"input-needed(Deploy now?),input-needed(Which region?)", "Deploy now?,Which region?"},
		{"the held one still open, retitled by the status channel", true, []control.Event{deploy},
			"input-needed(Deploy now?),input-needed(Nested?)", "Nested?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, start)
				time.Sleep(2 * time.Second)
				r.feed(deploy)
				if c.status {
					r.s.ProgramStatus(state.ProgramStatus{State: "blocked", Kind: "question", Message: "Nested?"})
				}
				time.Sleep(time.Minute)
				r.feed(control.ProbeDisconnected{PID: 7})
				time.Sleep(time.Second)
				r.feed(control.ProbeConnected{PID: 7}, again)
				r.feed(c.repeats...)
				time.Sleep(time.Minute)
				if _, notes := r.got(); notes != c.notes {
					t.Errorf("notifications %q, want %q", notes, c.notes)
				}
				var open []string
				for _, x := range r.m.Snapshot().Reasons {
					open = append(open, x.Question)
				}
				if got := strings.Join(open, ","); got != c.open {
					t.Errorf("open dialogs %q, want %q", got, c.open)
				}
			})
		})
	}
}

// Pi ends its session to start another (/reload, /new, /resume) and its
// probe is lost before the next session starts (Pi crashed in between, or
// the connection went): no session follows to say what is open, so what
// only the probe could close — a dialog of Pi's, a channel wait — closes
// once the probe has had its time to come back, and the pane is not left
// blocked for good.
func TestWhatASessionEndingLeftOpenClosesWhenItsProbeIsLost(t *testing.T) {
	for _, open := range []control.Event{
		control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"},
		control.AskStarted{FlowID: "f1", Title: "Which region?"},
		control.WaitingForInput{Source: "plan-md", ID: "c1", Waiting: true},
	} {
		t.Run(open.EventName(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, control.SessionStart{Reason: "startup", Mode: "tui", SessionSeq: 1})
				time.Sleep(2 * time.Second)
				r.feed(open)
				time.Sleep(time.Minute)
				r.feed(control.SessionShutdown{Reason: "reload"}, control.ProbeDisconnected{PID: 7})
				time.Sleep(time.Minute)
				if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
					t.Fatalf("a minute after the loss: %s, reasons %+v; want idle, none", s.State, s.Reasons)
				}
			})
		})
	}
}

// A run that ends while the probe is away — its agent_settled went down
// with the connection, or was dropped while the wrapper fell behind — is
// told from the repeated session, which says how the session's latest run
// ended: failed or finished as at its settle, not at all when cut short,
// as blocked when it ended asking, and once — a repeat of a run heard
// ending is no news.
func TestARunThatEndedWhileTheProbeWasAwayIsTold(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	back := func(end control.RunEnd, asking bool) control.SessionStart {
		e := start
		e.Reason = "reconnect"
		e.LastRun = &end
		if asking {
			e.InputNeeded, e.Question, e.QuestionEntry = true, q, "e1"
		}
		return e
	}
	lost := []control.Event{control.ProbeDisconnected{PID: 7}, control.ProbeConnected{PID: 7}}
	cases := []struct {
		name   string
		before []control.Event
		away   []control.Event
		notes  string
	}{
		{"failed", []control.Event{control.AgentStart{}},
			append(lost, back(control.RunEnd{StopReason: "error", ErrorMessage: "rate limited", Ended: 1}, false)), "failed[rate limited]"},
		{"finished", []control.Event{control.AgentStart{}},
			append(lost, back(control.RunEnd{StopReason: "stop", Ended: 1}, false)), "finished"},
		{"finished, the wrapper behind", []control.Event{control.AgentStart{}},
			[]control.Event{back(control.RunEnd{StopReason: "stop", Ended: 1}, false)}, "finished"},
		{"cut short", []control.Event{control.AgentStart{}},
			append(lost, back(control.RunEnd{StopReason: "error", ErrorMessage: "x", RetryCancelled: true, Ended: 1}, false)), ""},
		{"asking", []control.Event{control.AgentStart{}},
			append(lost, back(control.RunEnd{StopReason: "stop", Ended: 1}, true)), "input-needed(" + q + ")"},
		{"heard ending before the loss", []control.Event{control.AgentStart{}, control.AgentEnd{StopReason: "stop"}, control.AgentSettled{Idle: true}},
			append(lost, back(control.RunEnd{StopReason: "stop", Ended: 1}, false)), "finished"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, start)
				time.Sleep(2 * time.Second)
				r.feed(c.before...)
				time.Sleep(time.Second)
				r.feed(c.away...)
				time.Sleep(time.Minute)
				if _, notes := r.got(); notes != c.notes {
					t.Errorf("notifications %q, want %q", notes, c.notes)
				}
			})
		})
	}
}

// A run that ends while the probe is away lasts as long as it ran, not up
// to the probe's return: the probe says how long ago it ended (lastRun's
// endedMsAgo), so a short run lost in a long outage is not told
// "finished" past finished_after. A probe that does not say has it end at
// the return, the latest it can have.
func TestARunThatEndedWhileTheProbeWasAwayLastsAsItRan(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	back := func(ago *float64) control.SessionStart {
		e := start
		e.Reason = "reconnect"
		e.LastRun = &control.RunEnd{StopReason: "stop", Ended: 1, EndedMsAgo: ago}
		return e
	}
	ms := func(v float64) *float64 { return &v }
	cases := []struct {
		name  string
		ago   *float64
		run   time.Duration
		notes string
	}{
		{"ended 2 s in, 38 s before the return", ms(38000), 2 * time.Second, ""},
		{"not said", nil, 40 * time.Second, "finished"},
		{"said as before the run began", ms(3600000), 0, ""},
		{"said as after the return", ms(-5), 40 * time.Second, "finished"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRigFinishedAfter(20 * time.Second)
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, start)
				time.Sleep(2 * time.Second)
				r.feed(control.AgentStart{})
				time.Sleep(time.Second)
				r.feed(control.ProbeDisconnected{PID: 7})
				time.Sleep(39 * time.Second)
				r.feed(control.ProbeConnected{PID: 7}, back(c.ago))
				time.Sleep(time.Minute)
				r.mu.Lock()
				runs := slices.Clone(r.runs)
				r.mu.Unlock()
				if len(runs) != 1 || runs[0] != c.run {
					t.Errorf("runs %v, want [%v]", runs, c.run)
				}
				if _, notes := r.got(); notes != c.notes {
					t.Errorf("notifications %q, want %q", notes, c.notes)
				}
			})
		})
	}
}
