package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Where a live handoff asked with no place goes is what the engine's
// settings say at the handoff, as for open's inspections — not what they
// said when the owner started. The owner starts with fully inspectable
// mode on and the person turns it off before the run: the run's agents
// work locally, and their handoff splits the owner's pane, not a
// workspace. A settings file the engine would refuse, at the moment of a
// handoff, refuses it before the owner is asked (nothing is cut, nothing
// opens) with an error that names the file and the way out; once the file
// is fixed the same attempt hands off.
func TestLiveHandoffPlacesByTheSettingsAtTheHandoff(t *testing.T) {
	lr := newLiveRig(t)
	lr.settings(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`)
	lr.launchOwner()
	lr.settings(`{"concurrency": 2}`)
	lr.runFlow()
	st := lr.run()

	file := lr.settings(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": "yes"}}}`)
	ro := lr.start(t, lr.s, nil, st.ID, lvLabel)
	deadline := time.Now().Add(lvLong)
	for ended := false; !ended; {
		select {
		case <-ro.done:
			ended = true
		case <-time.After(20 * time.Millisecond):
		}
		if strings.Contains(ro.out.String(), "handing off") {
			t.Fatalf("with a settings file the engine refuses, the handoff was ordered anyway:\n%s%s\nHerdr was asked %q", ro.out.String(), ro.errb.String(), lr.s.Methods())
		}
		if time.Now().After(deadline) {
			t.Fatalf("open still runs after %v:\n%s%s", lvLong, ro.out.String(), ro.errb.String())
		}
	}
	res := ro.wait(t)
	if res.code != 1 || !strings.Contains(res.stderr, file) || !strings.Contains(res.stderr, "herdr-pi doctor") ||
		!strings.Contains(res.stderr, "--split") {
		t.Fatalf("exit %d, want 1 with the file named and the way out:\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, m := range lr.s.Methods() {
		if m == "pane.split" || m == "tab.create" || m == "workspace.create" {
			t.Fatalf("Herdr was asked %s for a refused handoff", m)
		}
	}

	lr.settings(`{"concurrency": 2}`)
	ro, launched := lr.handOff(lvLabel)
	if m := lr.s.Methods(); slices.Contains(m, "workspace.create") || slices.Contains(m, "tab.create") {
		t.Fatalf("placed by %q: the handoff went by the settings of the owner's start (fully inspectable mode on), not by the settings now (off)", m)
	}
	if split := lvCalls(lr.s, "pane.split"); len(split) != 1 || paramsOf(t, split[0])["target_pane_id"] != "w1:p1" || launched.PaneID != "w1:p2" {
		t.Fatalf("pane.split %v, launched %+v: want a split of the owner's pane", split, launched)
	}
	if res := ro.wait(t); res.code != 0 {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
}
