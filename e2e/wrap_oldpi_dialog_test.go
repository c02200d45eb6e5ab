package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Pi 0.73.1 tells its extensions nothing of its dialogs (Pi has had
// ui_prompt_start since 0.84.4) and has no status channel, so the probe
// inside it cannot say that an extension's select waits for the person:
// only the screen can. Users run old Pis; the pane must read blocked while
// the question waits, and idle once it is answered.
func TestWrapOldPiDialogIsBlocked(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.pi = pitest.Old(t)
	ext, err := filepath.Abs("testdata/pistatus/select.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrap("-e", ext)
	tm.Type(t, "/resume-or-skip")
	tm.WaitText(t, "1 interrupted workflow found", time.Minute)
	r.waitLast("the dialog", "blocked(blocked on screen (dialog))")
	r.waitReasons("the dialog", "screen:screen")
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
	r.waitLast("the answer", "idle")
	r.waitReasons("the answer")
	quit(t, tm)
}
