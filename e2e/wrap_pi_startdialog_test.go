package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// An extension that asks at Pi's start, before the session starts (the
// workflow engine's "interrupted workflow found" of a restarted owner):
// the probe connects only once it is answered, and without Pi's status
// channel (Herdr does not answer its query) only the screen shows the
// dialog. The pane must read blocked while it waits, and idle once it is
// answered.
func TestWrapPiDialogBeforeTheSessionStartsIsBlocked(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	ext, err := filepath.Abs("testdata/pistatus/ask-at-start.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, []string{r.hp, "wrap", r.pi.Bin, "-e", ext}, r.env(), r.agent.Project, 40, 120)
	t.Cleanup(tm.Close)
	tm.WaitText(t, "2 paused jobs found", time.Minute)
	r.waitLast("the dialog at start", "blocked(blocked on screen (dialog))")
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
	r.waitLast("the answer", "idle")
	quit(t, tm)
}

// waitLast waits until the pane's last accepted report is want. Pi may
// draw its editor before its start-up asks, which reads idle first.
func (r *piRig) waitLast(what, want string) {
	r.t.Helper()
	var got []string
	if !r.herdr.Await(time.Minute, func() bool {
		got = r.states()
		return len(got) > 0 && got[len(got)-1] == want
	}) {
		r.t.Fatalf("%s: reports %q, want the last %q", what, got, want)
	}
}
