package signals

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// The probe's hello says whether its Pi tells it of its dialogs. Pi 0.73.1
// does not (and has no status channel): an extension's select there is
// blocked through the screen while the probe speaks. Pi 1.6.0 does: the
// probe's ui_prompt_start is the dialog's one reason, and the screen's
// dialog opens none beside it.
func TestTheScreensDialogCountsWhereTheProbeCannotTellIt(t *testing.T) {
	for _, c := range []struct {
		name    string
		dialogs bool
		events  []control.Event
		want    string
		reasons string
	}{
		{"Pi 0.73.1", false, nil,
			"idle blocked(blocked on screen (dialog)) idle", "+screen -screen"},
		{"Pi 1.6.0", true, []control.Event{control.UIPromptStart{Kind: "select", Title: "1 interrupted workflow found"}},
			"idle blocked(waiting for your answer) idle", "+ui_prompt#1 -ui_prompt#1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 1, Dialogs: c.dialogs}, control.SessionStart{Reason: "startup", Mode: "tui"})
				r.m.Screen(state.Verdict{State: state.Idle})
				time.Sleep(2 * time.Second)
				r.feed(c.events...)
				r.m.Screen(state.Verdict{State: state.Blocked, Rule: "dialog"})
				time.Sleep(time.Second)
				if len(c.events) > 0 {
					r.feed(control.UIPromptEnd{Kind: "select", Title: "1 interrupted workflow found"})
				}
				r.m.Screen(state.Verdict{State: state.Idle})
				time.Sleep(time.Second)
				r.mu.Lock()
				reasons := strings.Join(r.reasons, " ")
				r.mu.Unlock()
				if gt, _ := r.got(); gt != c.want || reasons != c.reasons {
					t.Fatalf("transitions %q, want %q\nreasons %q, want %q", gt, c.want, reasons, c.reasons)
				}
			})
		})
	}
}
