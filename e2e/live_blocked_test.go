package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
)

// The texts of a pane turn that ends on a question.
const (
	lvQuestion = "pane: which word should I look for?\n:input_needed:"
	lvAnswer   = "ANSWER-WORD look for beta"
)

// The pane's Pi ends its turn on a question (the :input_needed: marker):
// the pane is blocked, not at rest. The handback that a turn ending at
// rest brings must wait for the person's answer: open says blocked, the
// owner's status line says blocked, and nothing goes back while the
// question stands. Once the person answers in the pane and that turn
// ends at rest, the attempt goes back (idle), with both turns in its
// session file.
func TestLiveHandoffPaneBlockedOnAQuestionIsNoHandback(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) {
		lr.paneTool = false
		lr.more = func(req fakellm.Request) (fakellm.Reply, bool) {
			switch u := req.LastUser(); {
			case strings.Contains(u, lvAnswer):
				return fakellm.Reply{Text: lvPaneReply, WordDelay: 40 * time.Millisecond}, true
			case strings.Contains(u, lvInPane):
				return fakellm.Reply{Text: lvQuestion, WordDelay: 40 * time.Millisecond}, true
			}
			return fakellm.Reply{}, false
		}
	})
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "blocked")
	lr.owner.WaitText(t, lvLabel+": blocked", lvLong)
	if got := events(ro.lines(t)); strings.Contains(got, "idle") || strings.Contains(got, "handback") {
		t.Fatalf("open printed %q for a pane blocked on a question", got)
	}
	ro.running(t)
	waitPiReady(t, lr.private, lr.s, launched.PaneID)
	// Still blocked, still out, while the question stands.
	ro.running(t)
	if pn := lr.s.Pane(launched.PaneID); !pn.Exists {
		t.Fatalf("pane %s closed while its Pi asked a question", launched.PaneID)
	}
	prompt(t, lr.s, launched.PaneID, lvAnswer)
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Reason != "idle" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if got := events(ro.lines(t)); !strings.Contains(got, "blocked working idle handback") {
		t.Fatalf("open printed %q, want the question blocked, then the answer's turn, then the handback", got)
	}
	lr.wantResult(t, lvPaneReply)
	lr.wantClosedAll(t, lr.run().ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}
