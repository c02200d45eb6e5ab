package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Two of Pi's dialogs at once: Pi 1.6.0 shows the newer over the first,
// and tells extensions of the first alone (ui_prompt_start for the
// outermost dialog only). Its status channel (OSC 7501) names the newest.
// The toast must name the dialog the person finds on switching to the
// pane.

const secondDialog = "Which region second?"

// toastsNameTheNewest waits for a toast naming the dialog on screen; every
// toast is a "needs your input".
func toastsNameTheNewest(t *testing.T, h *herdrtest.Server) {
	t.Helper()
	toastsName(t, h, secondDialog)
}

// toastsName waits until the last toast names dialog; it returns them all,
// each a "needs your input".
func toastsName(t *testing.T, h *herdrtest.Server, dialog string) []herdrtest.NotificationCall {
	t.Helper()
	var notes []herdrtest.NotificationCall
	ok := h.Await(time.Minute, func() bool {
		notes = h.Notifications()
		return len(notes) > 0 && strings.HasPrefix(notes[len(notes)-1].Body, dialog+" · ")
	})
	if !ok {
		t.Fatalf("notifications %+v: the last does not name the dialog on screen, %q", notes, dialog)
	}
	for _, n := range notes {
		if n.Title != "Pi needs your input" {
			t.Fatalf("notifications %+v: want only \"needs your input\"", notes)
		}
	}
	return notes
}

// answerBoth answers the newer dialog, which gives the first back, then
// the first.
func answerBoth(t *testing.T, tm *pitest.Term) {
	t.Helper()
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
	tm.WaitFor(t, "the first dialog again", time.Minute, func(s string) bool {
		return strings.Contains(s, "Deploy the first build?") && !strings.Contains(s, secondDialog)
	})
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
	tm.WaitFor(t, "the editor back", time.Minute, func(s string) bool { return !strings.Contains(s, "Deploy the first build?") })
}

func twoDialogs(t *testing.T) string {
	t.Helper()
	ext, err := filepath.Abs("testdata/pistatus/two-dialogs.mjs")
	if err != nil {
		t.Fatal(err)
	}
	return ext
}

// With the probe, which heard of the first dialog only, and Pi's status
// channel on.
func TestWrapPiToastNamesTheNewestDialog(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.extra = append(r.extra, "PI_PROGRAM_STATUS=1")
	tm := r.wrap("-e", twoDialogs(t))
	tm.Type(t, "/two-dialogs")
	tm.WaitText(t, secondDialog, time.Minute)
	r.waitStates("the dialogs", "unknown", "idle", "blocked(waiting for your answer)")
	toastsNameTheNewest(t, r.herdr)
	answerBoth(t, tm)
	r.waitStates("the answers", "unknown", "idle", "blocked(waiting for your answer)", "idle")
	quit(t, tm)
}

// Without the probe the channel alone says what Pi waits for.
func TestWrapNoProbeToastNamesTheNewestDialog(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.answerOnceWorking()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS=1"}, "-e", twoDialogs(t))
	// Nothing tells when Pi without the probe takes input: a turn first,
	// its prompt sent again until the model is asked.
	tm.Type(t, "hello")
	r.submitted(tm)
	r.waitTraced(trace, "the turn", "unknown", "idle", "working", "idle")
	tm.Type(t, "/two-dialogs")
	tm.WaitText(t, secondDialog, time.Minute)
	toastsNameTheNewest(t, r.herdr)
	answerBoth(t, tm)
	quit(t, tm)
}

// A reply that asks, then a dialog an extension opens once the run
// settled: Pi shows the dialog in place of its editor, under the question.
// The person is told of the question, then of the dialog, which is what
// they find on the pane. (No status channel needed: the probe hears the
// dialog.)
func TestWrapPiToastNamesADialogOverTheQuestion(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	ext, err := filepath.Abs("testdata/pistatus/ask-after-run.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrap("-e", ext)
	tm.Type(t, "which file?")
	tm.WaitText(t, "Commit these changes?", time.Minute)
	r.waitStates("the question and the dialog", "unknown", "idle", "working", "blocked(input needed)")
	notes := toastsName(t, r.herdr, "Commit these changes?")
	// Two toasts, or one: when the dialog comes before the question's toast
	// went out (a loaded machine, Herdr's pace), the two are one toast that
	// names the dialog and counts the question ("+1 more").
	merged := len(notes) == 1 && strings.HasSuffix(notes[0].Body, " · +1 more")
	if !merged && (len(notes) != 2 || !strings.HasPrefix(notes[0].Body, question+" · ")) {
		t.Fatalf("notifications %+v: want the question's, then the dialog's (or one of both, +1 more)", notes)
	}
	if err := tm.Send("\x1b"); err != nil { // the dialog cancelled: the question stays
		t.Fatal(err)
	}
	tm.WaitFor(t, "the dialog gone", time.Minute, func(s string) bool { return !strings.Contains(s, "Commit these changes?") })
	quit(t, tm)
}
