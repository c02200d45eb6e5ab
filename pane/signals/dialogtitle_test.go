package signals

import (
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// With the probe and Pi's status channel both on (PI_PROGRAM_STATUS=1, or a
// terminal that asks), one dialog is heard twice: the probe's
// ui_prompt_start carries its title as the extension gave it, and Pi's
// status report the same title with each run of control characters made
// one space and the ends trimmed (pi-agent.md §10). The two travel apart
// (a socket, the pty) and either may come first. A title with a line break
// or a trailing newline is still one dialog: told once, whichever order.
func TestADialogHeardFromBothChannelsIsToldOnce(t *testing.T) {
	for _, title := range []string{"Run this command?\n  rm -rf build", "Allow git push?\n", "  Pick a region\t"} {
		// What Pi's status channel reports for it.
		reported := strings.TrimSpace(strings.NewReplacer("\n", " ", "\t", " ").Replace(title))
		for _, probeFirst := range []bool{true, false} {
			name := "status first"
			if probeFirst {
				name = "probe first"
			}
			t.Run(strings.Fields(title)[0]+" "+name, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"}, control.AgentStart{})
				status := func() {
					r.s.ProgramStatus(state.ProgramStatus{State: "blocked", App: "pi", Kind: "question", Message: reported})
				}
				if !probeFirst {
					status()
				}
				r.feed(control.UIPromptStart{Kind: "select", Title: title})
				if probeFirst {
					status()
				}
				if _, notes := r.got(); strings.Count(notes, "input-needed") != 1 {
					t.Fatalf("notifications %q for one dialog titled %q, want one", notes, title)
				}
			})
		}
	}
}
