package signals

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// pokeCounter is a real session watcher that counts the looks it is asked
// for.
type pokeCounter struct {
	*session.Watcher
	pokes atomic.Int32
}

func (p *pokeCounter) Poke() {
	p.pokes.Add(1)
	p.Watcher.Poke()
}

// Pi's status reports reach the machine, and a report that may end a run
// asks the session watcher for a look now: the reply is in the file
// already, and the machine holds the run's idle only for the debounce.
func TestProgramStatusAsksForTheSessionFile(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	w := &pokeCounter{Watcher: session.Watch(session.WatchConfig{Sink: r.s, Interval: time.Hour})}
	defer w.Close()
	r.s.SetWatcher(w)
	for _, c := range []struct {
		st    string
		pokes int32
	}{{"idle", 1}, {"working", 1}, {"blocked", 1}, {"working", 1}, {"done", 2}, {"working", 2}, {"error", 3}, {"clear", 3}} {
		r.s.ProgramStatus(state.ProgramStatus{State: c.st, App: "pi"})
		if got := w.pokes.Load(); got != c.pokes {
			t.Fatalf("after %s: %d looks asked for, want %d", c.st, got, c.pokes)
		}
	}
	// Pi's dialog told the person; clear (Pi stopped) leaves the screen to
	// decide, which has seen nothing yet: idle.
	r.expect(t, "idle working blocked(waiting for input) working idle", "input-needed")
}

// Without the probe, what the person hears of a run's end comes from Pi's
// status channel, wired as wrap wires it: a run that ends done is
// "finished", one that ends in an error is "failed" and names it. A reply
// that asks for input also reads done on the channel; the session file
// opens its sentinel within the debounce the run's idle is held, and the
// person hears only that Pi needs input.
func TestNoProbeRunEndsAreTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.s.ProgramStatus(state.ProgramStatus{State: "idle", App: "pi"})
		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle", "finished")

		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "error", App: "pi", Message: "429 Too Many Requests"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle working idle", "finished,failed[429 Too Many Requests]")

		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
		time.Sleep(100 * time.Millisecond)
		r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle working idle working blocked(input needed)", "finished,failed[429 Too Many Requests],input-needed")
		if len(r.runs) != 3 {
			t.Fatalf("runs %v: the machine did not tell the third run's end", r.runs)
		}
	})
}

// appendSession appends lines to a session file, as Pi writes them.
func appendSession(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// waitRuns waits for the machine to tell n runs' ends.
func (r *rig) waitRuns(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		got := len(r.runs)
		r.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs told, want %d", got, n)
		}
	}
}

// Without the probe, Pi's status channel reports a retry the person
// cancelled on its countdown as error, like a run that failed; the session
// file tells them apart, read by the real watcher as wrap wires it: Pi left
// the failed reply out to retry it, and no retry came. The cancelled run is
// not told; retries that run out are a failure, told with Pi's error. The
// watcher looks only when asked (its interval is an hour): Pi's reports
// ask it, within the debounce the run's end is held.
func TestNoProbeCancelledRetryIsNotTold(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`)
	r.watchWhenAsked(t, path)

	r.s.ProgramStatus(state.ProgramStatus{State: "idle", App: "pi"})
	r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
	appendSession(t, path,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"FAIL please"}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 overloaded"}}`,
		`{"type":"context_edit","id":"e1","parentId":"a1","timestamp":"t","targetId":"a1","replacement":null}`)
	// Escape on "Retrying (1/3) in 2s...": Pi writes nothing more.
	r.s.ProgramStatus(state.ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"})
	r.waitRuns(t, 1)
	r.expect(t, "idle working idle", "")

	r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
	appendSession(t, path,
		`{"type":"message","id":"u2","parentId":"e1","timestamp":"t","message":{"role":"user","content":"FAIL again"}}`,
		`{"type":"message","id":"a2","parentId":"u2","timestamp":"t","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 overloaded"}}`,
		`{"type":"context_edit","id":"e2","parentId":"a2","timestamp":"t","targetId":"a2","replacement":null}`,
		`{"type":"message","id":"a3","parentId":"e2","timestamp":"t","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 overloaded"}}`)
	// "Retry failed after 3 attempts" (one, here).
	r.s.ProgramStatus(state.ProgramStatus{State: "error", App: "pi", Message: "503 overloaded"})
	r.waitRuns(t, 2)
	// The sink tells the failure after the run is counted: waited for.
	r.waitFor(t, "idle working idle working idle", "failed[503 overloaded]")
}

// waitFor waits, ten seconds at most, until the transitions and the
// notifications are exactly these.
func (r *rig) waitFor(t *testing.T, transitions, notes string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		gt, gn := r.got()
		if gt == transitions && gn == notes {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transitions %q, want %q\nnotifications %q, want %q", gt, transitions, gn, notes)
		}
	}
}

// Without the probe, an extension (not the person) starts a run while Pi
// waits on a question: its own message, which the session rule passes over
// (only a user message answers), so the file still ends with the question.
// Pi's status channel says the run began: the pane works while it runs, and
// the run's reply that asks again is a new question, told again. Read by
// the real watcher as wrap wires it, looking only when Pi's reports ask.
func TestNoProbeExtensionRunAfterAQuestion(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`)
	r.watchWhenAsked(t, path)

	r.s.ProgramStatus(state.ProgramStatus{State: "idle", App: "pi"})
	r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
	appendSession(t, path,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"which file?"}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"Which file?\n:input_needed:"}],"stopReason":"stop"}}`)
	r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
	r.waitFor(t, "idle working blocked(input needed)", "input-needed")

	// The extension's follow-up starts a run.
	appendSession(t, path, `{"type":"custom_message","id":"c1","parentId":"a1","timestamp":"t","customType":"test-ext","content":"go on","display":true}`)
	r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
	r.waitFor(t, "idle working blocked(input needed) working", "input-needed")

	// Its reply asks again.
	appendSession(t, path, `{"type":"message","id":"a2","parentId":"c1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"And which function?\n:input_needed:"}],"stopReason":"stop"}}`)
	r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
	r.waitFor(t, "idle working blocked(input needed) working blocked(input needed)", "input-needed,input-needed")
}

// Without the probe and with nothing that saw the run between them (a run
// quicker than the screen's debounce, no status channel), the session file
// alone says the pane waits on another question: a reply after the one
// that asked, asking again. It is told as the new question it is.
func TestNoProbeNewQuestionWhileBlockedIsTold(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`)
	w := r.watchWhenAsked(t, path)
	r.m.Screen(state.Verdict{State: state.Working, Rule: "busy_border"})
	r.waitFor(t, "working", "")
	appendSession(t, path,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"which file?"}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"Which file?\n:input_needed:"}],"stopReason":"stop"}}`)
	w.Poke()
	r.m.Screen(state.Verdict{State: state.Idle})
	r.waitFor(t, "working blocked(input needed)", "input-needed")

	appendSession(t, path,
		`{"type":"custom_message","id":"c1","parentId":"a1","timestamp":"t","customType":"test-ext","content":"go on","display":true}`,
		`{"type":"message","id":"a2","parentId":"c1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"And which function?\n:input_needed:"}],"stopReason":"stop"}}`)
	w.Poke()
	r.waitFor(t, "working blocked(input needed)", "input-needed,input-needed")
}
