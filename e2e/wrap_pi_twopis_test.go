package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Two Pis on one session file: the wrapped one in this pane, and another
// `pi -c` (another pane, unwrapped here) continuing the same session. Pi
// does not lock the file: each appends from its own leaf, and the file's
// last line is whichever wrote last. The other Pi's question must not turn
// this pane blocked, and the other Pi's answer to its own question must
// not close this pane's; this Pi's own question and answer still do.
func TestWrapPiAnotherPiOnTheSameSession(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "ask") {
			return fakellm.Reply{Text: question + "\n:input_needed:"}
		}
		return fakellm.Reply{Text: "Done."}
	}, true)
	// This pane's runs are held until Herdr shows them (untilWorking); the
	// other Pi's, which this pane never shows, are not.
	r.llm.SetResponder(func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "other") {
			return r.respond(req)
		}
		return r.untilWorking(r.respond(req))
	})
	a := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	a.Type(t, "hello from this pane")
	r.waitStates("this pane's first run", "unknown", "idle", "working", "idle")
	a.WaitText(t, "Done.", 15*time.Second)
	files := r.agent.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	file := files[0]
	count := func(s string) int {
		b, _ := os.ReadFile(file)
		return strings.Count(string(b), s)
	}

	// The other Pi continues the session; its reply asks.
	b := pitest.StartTerm(t, []string{r.pi.Bin, "-c"}, r.agent.With(), r.agent.Project, 40, 120)
	t.Cleanup(b.Close)
	b.WaitFor(t, "the other Pi's editor", 30*time.Second, func(s string) bool {
		return strings.Count(s, strings.Repeat("─", 100)) >= 2
	})
	typeUntilWritten(t, b, "ask from the other pane", func() bool { return count(`:input_needed:"`) == 1 })
	held(t, r, 2*time.Second, "unknown", "idle", "working", "idle")

	// This pane's Pi asks, from its own leaf.
	a.Type(t, "ask from this pane")
	r.waitStates("this pane's question", "unknown", "idle", "working", "idle", "working", "blocked(input needed)")

	// The other Pi's person answers the other Pi's question; its reply,
	// the file's last line now, asks nothing.
	typeUntilWritten(t, b, "the other answer", func() bool { return count(`"Done."`) == 2 })
	held(t, r, 2*time.Second, "unknown", "idle", "working", "idle", "working", "blocked(input needed)")

	a.Type(t, "my answer")
	r.waitStates("this pane's answer", "unknown", "idle", "working", "idle", "working", "blocked(input needed)", "working", "idle")
	quit(t, a)
	quit(t, b)
}

// typeUntilWritten types a prompt into an unwrapped Pi and waits until the
// session file shows its run's end (written): Pi keeps a prompt typed
// before its start-up is over in the editor, so Enter goes again until it
// is taken.
func typeUntilWritten(t *testing.T, tm *pitest.Term, text string, written func() bool) {
	t.Helper()
	tm.Type(t, text)
	for deadline := time.Now().Add(time.Minute); !written(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never reached the session file:\n%s", text, tm.Screen())
		}
		if strings.Contains(tm.Screen(), "Startup is still in progress") {
			_ = tm.Send("\r")
		}
	}
}

// held checks that this pane's reports stay want for d after the other
// Pi wrote: the wrapper reads the file at once (inotify), and an answer
// read from it closes the question within state.AnswerGrace (1 s).
func held(t *testing.T, r *piRig, d time.Duration, want ...string) {
	t.Helper()
	wanted := strings.Join(want, " ")
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got := strings.Join(r.states(), " "); got != wanted {
			t.Fatalf("this pane reported %q after the other Pi wrote, want %q still", got, wanted)
		}
	}
}

// /tree to the entry before the question's prompt: no run, nothing written to the
// session file (the file's last line is the question still); Pi's branch
// no longer waits, and the probe says where Pi moved (session_tree). The
// pane stops being blocked once the answer grace is over.
func TestWrapPiTreeMoveAwayFromTheQuestion(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n:input_needed:"}), true)
	r.answerOnceWorking()
	ext, err := filepath.Abs("testdata/pievents/tree.mjs")
	if err != nil {
		t.Fatal(err)
	}
	a := r.wrap("-e", ext)
	r.waitStates("the probe connected", "unknown", "idle")
	a.Type(t, "ask")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	a.Type(t, "/tree-back")
	r.waitStates("the move", "unknown", "idle", "working", "blocked(input needed)", "idle")
	quit(t, a)
}

// /tree back to a question after it was answered: the branch Pi is on
// ends with the question again, so the pane is blocked, but the question
// was told when Pi asked it; the move back is the person's own and no news
// (seed 003: one notification per event).
func TestWrapPiTreeBackToAnAnsweredQuestionIsNotToldAgain(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	r.herdr.SetDelivery("herdr")
	ext, err := filepath.Abs("testdata/pievents/tree.mjs")
	if err != nil {
		t.Fatal(err)
	}
	a := r.wrap("-e", ext)
	r.waitStates("the probe connected", "unknown", "idle")
	a.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	a.Type(t, "ANSWER: use main.go")
	r.waitStates("the answer", "unknown", "idle", "working", "blocked(input needed)", "working", "idle")
	a.Type(t, "/tree-back")
	r.waitStates("the move back", "unknown", "idle", "working", "blocked(input needed)", "working", "idle", "blocked(input needed)")
	quit(t, a) // wrap drains its queued toasts before it exits
	notes := r.herdr.Notifications()
	if len(notes) != 1 || notes[0].Title != "Pi needs your input" {
		t.Fatalf("toasts %+v, want the one for the question only", notes)
	}
}
