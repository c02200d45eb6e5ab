package e2e

import (
	"fmt"
	"testing"
)

// A fully inspectable agent's turn ends on a question (:input_needed:):
// its tab is blocked, not at rest, so it stays open with the question,
// and the owner's status line says blocked. The person answers in the
// tab; that turn ends at rest, the tab closes, and the answer's reply is
// the agent's result. (A handback taken at the question would close the
// tab before the answer could be typed, and the run would end with the
// question for its result.)
func TestFullyInspectableQuestionWaitsForTheAnswer(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "asker" });`, fiTaskAsk))
	fi.start()
	fi.waitPaneAsked(fiTaskAsk)
	_, panes, _ := fi.tabs(t)
	if len(panes) != 1 {
		t.Fatalf("tabs opened for panes %q", panes)
	}
	pane := panes[0]
	var got []string
	if !fi.s.Await(lvLong, func() bool {
		got = got[:0]
		for _, c := range fi.s.Reports(pane) {
			if c.Accepted {
				got = append(got, c.State)
			}
		}
		return len(got) > 0 && got[len(got)-1] == "blocked"
	}) {
		t.Fatalf("the tab's pane reported %q, want blocked last", got)
	}
	fi.owner.WaitText(t, "asker: blocked", lvLong)
	waitPiReady(t, fi.private, fi.s, pane)
	prompt(t, fi.s, pane, fiAnswer)
	if got := fi.result(); got != fiReplyAsk {
		t.Fatalf("the run's result is %q, want the answer's reply (Herdr saw %q)", got, fi.sequence(t))
	}
	if n := len(lvCalls(fi.s, "tab.create")); n != 1 {
		t.Fatalf("%d tabs opened for one turn and its answer", n)
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}
