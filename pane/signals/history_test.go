package signals

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// /tree back to a reply that asked, after the question was answered and
// Pi ran on: the branch Pi is on ends with that question again, so the
// pane is blocked, as it is when a /resume or a /fork lands on it. But the
// question is the session's history, written long before this look (the
// file's own time for it says so), and the person moved there themselves:
// it was told when it was asked, and is not told again (seed 000: restored,
// not a new question). The same holds without the probe, where a /tree
// that writes a branch summary shows the move.
func TestATreeMoveBackToAQuestionIsNotToldAgain(t *testing.T) {
	for _, probe := range []bool{true, false} {
		name := "probe"
		if !probe {
			name = "no probe"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			then := time.Now().Add(-time.Hour)
			appendSession(t, path, sessionHeader(dir, then),
				sessionLine(t, "u1", "", "user", "which file?", then),
				sessionLine(t, "a1", "u1", "assistant", asks, then),
				sessionLine(t, "u2", "a1", "user", "main.go", then),
				sessionLine(t, "a2", "u2", "assistant", "Done.", then))
			w := r.watchWhenAsked(t, path)
			if probe {
				r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "resume", Mode: "tui", SessionFile: path, LeafID: leaf("a2")})
			} else {
				w.Poke()
			}
			// A run of this Pi, seen working (by the probe, or by Pi's
			// status channel without it), ends with nothing asked.
			appendSession(t, path, sessionLine(t, "u3", "a2", "user", "and now?", time.Now()))
			if probe {
				r.feed(control.AgentStart{LeafID: leaf("a2")})
			} else {
				r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
			}
			appendSession(t, path, sessionLine(t, "a3", "u3", "assistant", "All done.", time.Now()))
			if probe {
				r.feed(control.AgentEnd{StopReason: "stop", LeafID: leaf("a3")}, control.AgentSettled{Idle: true, LeafID: leaf("a3")})
			} else {
				r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
			}
			r.waitRuns(t, 1)
			// The sink tells the run's end after it is counted: the
			// "finished" is waited for, or it could land after this look
			// and pass for a notification of the move.
			before := r.awaitNotes(t, `"finished"`, func(n string) bool { return n == "finished" })

			// /tree to the question.
			if probe {
				r.feed(control.SessionTree{LeafID: leaf("a1")})
			} else {
				appendSession(t, path, `{"type":"branch_summary","id":"b1","parentId":"a1","timestamp":"`+
					time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+`","summary":"went back"}`)
				w.Poke()
			}
			r.awaitOpen(t, "sentinel")
			if _, notes := r.got(); notes != before {
				t.Fatalf("notifications %q after the move back to the question, want %q still: it was told when it was asked", notes, before)
			}
			if s := r.s.Status(); s.State != "blocked" {
				t.Fatalf("state %q after the move back to the question, want blocked", s.State)
			}
		})
	}
}

// awaitNotes waits until the notifications are as ok wants (want says
// what that is), and returns them.
func (r *rig) awaitNotes(t *testing.T, want string, ok func(string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, got := r.got()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("notifications %q, want %s", got, want)
		}
	}
}

// awaitOpen waits until the machine opened the reason key.
func (r *rig) awaitOpen(t *testing.T, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		got := append([]string(nil), r.reasons...)
		r.mu.Unlock()
		for _, k := range got {
			if k == "+"+key {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("reasons %q, want +%s", got, key)
		}
	}
}

// The same move within the wrapper that saw the question asked: Pi asks,
// the person answers, Pi replies, and the person goes back with /tree to
// the reply that asked. The pane is blocked again, but the question was
// told as it was asked, in this very pane: once is enough (seed 003). So
// too a /resume back to a session whose question this wrapper told.
func TestATreeMoveBackToAQuestionToldHereIsNotToldAgain(t *testing.T) {
	for _, probe := range []bool{true, false} {
		name := "probe"
		if !probe {
			name = "no probe"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			told := &toldSink{Sink: r.s}
			w := session.Watch(session.WatchConfig{Sink: told, Interval: time.Hour})
			t.Cleanup(w.Close)
			w.Follow(path)
			r.s.SetWatcher(w)
			if probe {
				r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: path, LeafID: leaf("")})
			}
			run := func(from, user, reply, answer string, asks bool) {
				if probe {
					r.feed(control.AgentStart{LeafID: leaf(from)})
				} else {
					r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
				}
				appendSession(t, path, sessionLine(t, user, from, "user", "go", time.Now()),
					sessionLine(t, reply, user, "assistant", answer, time.Now()))
				if probe {
					question := ""
					if asks {
						question = "Which file should I edit?"
					}
					r.feed(control.AgentEnd{StopReason: "stop", InputNeeded: asks, Question: question, LeafID: leaf(reply)},
						control.AgentSettled{Idle: true, InputNeeded: asks, Question: question, LeafID: leaf(reply)})
				} else {
					r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
				}
			}
			appendSession(t, path, sessionHeader(dir, time.Now()))
			run("", "u1", "a1", asks, true)
			r.awaitOpen(t, "sentinel")
			told.await(t, w, true) // the file said which reply asks
			run("a1", "u2", "a2", "Done.", false)
			r.waitRuns(t, 1)
			r.awaitReasons(t, 2)    // the question closed
			told.await(t, w, false) // and the file said it was answered
			// The answered run's end is told after it is counted.
			before := r.awaitNotes(t, "the question, then the run's end", func(n string) bool { return strings.HasSuffix(n, "finished") })
			if strings.Count(before, "input-needed") != 1 {
				t.Fatalf("notifications %q before the move, want the question once", before)
			}

			// /tree to the question.
			if probe {
				r.feed(control.SessionTree{LeafID: leaf("a1")})
			} else {
				appendSession(t, path, `{"type":"branch_summary","id":"b1","parentId":"a1","timestamp":"`+
					time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+`","summary":"went back"}`)
				w.Poke()
			}
			r.awaitReasons(t, 3)
			if _, notes := r.got(); notes != before {
				t.Fatalf("notifications %q after the move back to the question, want %q still: it was told when it was asked", notes, before)
			}
			if s := r.s.Status(); s.State != "blocked" {
				t.Fatalf("state %q after the move back to the question, want blocked", s.State)
			}
		})
	}
}

// toldSink passes what the watcher reads on to Sink and keeps the last
// word on the sentinel, so a test can wait for the file to have been read.
// The word is kept once Sink has taken it: a test that went on as soon as
// the watcher had read it raced the word to the signals, which then found
// the next run under way (a word that came during it is held, not news).
type toldSink struct {
	session.Sink
	mu   sync.Mutex
	last *session.Sentinel
}

func (s *toldSink) SessionSentinel(x session.Sentinel) {
	s.Sink.SessionSentinel(x)
	s.mu.Lock()
	s.last = &x
	s.mu.Unlock()
}

// await pokes w until the watcher's last word on the sentinel is open
// (or closed).
func (s *toldSink) await(t *testing.T, w *session.Watcher, open bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if last != nil && last.Open == open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher's last word %+v, want open %v", last, open)
		}
		w.Poke()
	}
}

// Without the probe, a /resume back to a session whose question this
// wrapper told: the locator follows the newest file of the project's
// session directory, so the pane is blocked again once Pi writes to it,
// and the question, written while herdr-pi watched (live), is the one it
// told before: not told again.
func TestAResumeBackToAQuestionToldHereIsNotToldAgain(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute)
	w := session.Watch(session.WatchConfig{Sink: r.s, Locator: session.Locator{Dir: dir, Since: start}, Interval: time.Hour})
	t.Cleanup(w.Close)
	r.s.SetWatcher(w)
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	touch := func(path string, at time.Time) {
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		w.Poke()
	}

	now := time.Now()
	appendSession(t, a, sessionHeader(dir, now), sessionLine(t, "u1", "", "user", "which file?", now),
		sessionLine(t, "a1", "u1", "assistant", asks, now))
	touch(a, now)
	r.awaitOpen(t, "sentinel")
	// /new, and a chat there: the newest file says nothing is asked.
	appendSession(t, b, sessionHeader(dir, now), sessionLine(t, "u9", "", "user", "hi", now),
		sessionLine(t, "a9", "u9", "assistant", "Hello.", now))
	touch(b, now.Add(time.Second))
	r.awaitReasons(t, 2)
	// /resume of the first session: Pi writes to it (a model change).
	appendSession(t, a, `{"type":"model_change","id":"m1","parentId":"a1","timestamp":"`+
		time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+`","provider":"x","modelId":"y"}`)
	touch(a, now.Add(2*time.Second))
	r.awaitReasons(t, 3)
	if _, notes := r.got(); notes != "input-needed" {
		t.Fatalf("notifications %q after the resume back to the question, want %q: it was told when it was asked", notes, "input-needed")
	}
	if s := r.s.Status(); s.State != "blocked" {
		t.Fatalf("state %q after the resume back to the question, want blocked", s.State)
	}
}
