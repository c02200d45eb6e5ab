package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// Seeds 000 and 003 through `herdr-pi wrap` and Herdr, in one Pi process:
// a session that ends (here /new) takes what it left open with it (its
// question, an extension's wait), so Herdr shows the pane idle in the new
// session; /resume back to the
// session whose question nobody answered makes it blocked again, without
// a second "needs your input" (the person was told when Pi asked).
func TestWrapPiNewSessionLeavesTheQuestionAndResumeRestoresIt(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "please block") {
			return fakellm.Reply{Text: question + "\n" + session.Marker}
		}
		return fakellm.Reply{Text: "Sure."}
	}, true)
	r.answerOnceWorking()
	r.herdr.SetDelivery("herdr")
	waiter, err := filepath.Abs("realpi/testdata/waiter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrap("-e", waiter)
	r.waitStates("the probe connected", "unknown", "idle")
	project := filepath.Base(r.agent.Project)
	told := []string{"Pi needs your input | " + question + " · " + project}

	tm.Type(t, "please block")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	if got := toasts(t, r.herdr, 1); !slices.Equal(got, told) {
		t.Fatalf("toasts %q, want %q", got, told)
	}
	// An extension's wait joins the question (told by itself, as plan-md's
	// question would be); the session's end takes both.
	tm.Type(t, "/wait-on")
	told = append(told, "Pi needs your input | "+project)
	if got := toasts(t, r.herdr, 2); !slices.Equal(got, told) {
		t.Fatalf("toasts %q, want %q", got, told)
	}

	tm.Type(t, "/new")
	r.waitStates("the new session", "unknown", "idle", "working", "blocked(input needed)", "idle")
	tm.Type(t, "hello there")
	tm.WaitText(t, "Sure.", time.Minute)
	r.waitStates("the new session's run", "unknown", "idle", "working", "blocked(input needed)", "idle", "working", "idle")

	tm.Type(t, "/resume")
	pickSession(t, tm, "please block")
	r.waitStates("the resumed question", "unknown", "idle", "working", "blocked(input needed)", "idle", "working", "idle", "blocked(input needed)")
	if s := tm.WaitText(t, question, 30*time.Second); markerVisible(s) {
		t.Fatalf("the resumed history shows the marker:\n%s", s)
	}
	quit(t, tm)
	if got := toasts(t, r.herdr, 2); !slices.Equal(got, told) {
		t.Fatalf("toasts %q after the resume, want only %q", got, told)
	}
}

// pickSession selects the session whose first message says text in Pi's
// /resume picker and opens it. The picker lists sessions newest first and
// fills in as it reads them, so an entry read late can move the selection:
// Enter only once the selection held still on the right entry.
func pickSession(t *testing.T, tm *pitest.Term, text string) {
	t.Helper()
	tm.WaitText(t, text, 30*time.Second)
	rowOf := func(s, text string) int {
		return slices.IndexFunc(strings.Split(s, "\n"), func(l string) bool { return strings.Contains(l, text) })
	}
	selected := func(s string) bool {
		return slices.ContainsFunc(strings.Split(s, "\n"), func(l string) bool { return strings.Contains(l, text) && strings.Contains(l, "›") })
	}
	for i := 0; i < 30; i++ {
		s := tm.Screen()
		if selected(s) {
			time.Sleep(300 * time.Millisecond)
			if tm.Screen() == s {
				break
			}
			continue
		}
		key := pitest.KeyDown
		if rowOf(s, "›") > rowOf(s, text) {
			key = "\x1b[A"
		}
		if err := tm.Send(key); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if !selected(tm.Screen()) {
		t.Fatalf("could not select the session %q:\n%s", text, tm.Screen())
	}
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
}
