package e2e

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// These tests walk the live handoff as a person running several agents
// at once does: two handoffs of one run handed back in the opposite
// order, a second turn typed into a held pane, the owner Pi killed and
// started again on its session.

const (
	lvSecondAsk   = "SECOND-ASK and one more thing"
	lvSecondReply = "pane: the second answer"
)

// Two agents of one run are handed off at once (--hold: each pane stays
// after its turn), and handed back in the opposite order: /quit in the
// pane opened last, then in the first's. Each handback is its own
// (exited, transferred); the first pane keeps running while the second
// comes back; the run completes with both panes' replies, each in its own
// session file; nothing is left.
func TestLiveHandoffTwoAgentsHandedBackInTheOppositeOrder(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.two = true })
	lr.startOwner()
	st := lr.run()
	first := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json", "--hold")
	first.waitEvent(t, "ordered")
	second := lr.start(t, lr.s, nil, st.ID, lvLabel2, "--json", "--hold")
	second.waitEvent(t, "ordered")
	lr.openGate()
	a, b := first.waitEvent(t, "launched"), second.waitEvent(t, "launched")
	if a.PaneID == b.PaneID || a.Handoff == b.Handoff {
		t.Fatalf("launched %+v and %+v: want two panes, two handoffs", a, b)
	}
	lvWait(t, "both panes at rest", func() bool {
		return strings.HasSuffix(events(first.lines(t)), "working idle") && strings.HasSuffix(events(second.lines(t)), "working idle")
	})
	// The pane opened last goes back first.
	if b.PaneID != "w1:p3" {
		first, second, a, b = second, first, b, a
	}
	waitPiReady(t, lr.private, lr.s, b.PaneID)
	prompt(t, lr.s, b.PaneID, "/quit")
	res, hb := second.handback(t)
	if res.code != 0 || hb.Reason != "exited" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("the second: exit %d, handback %+v\n%s", res.code, hb, res.stderr)
	}
	// The first is still out, untouched.
	first.running(t)
	if pn := lr.s.Pane(a.PaneID); !pn.Exists {
		t.Fatalf("the first's pane %s went with the second's handback", a.PaneID)
	}
	if got := events(first.lines(t)); !strings.HasSuffix(got, "working idle") {
		t.Fatalf("the first's open printed %q after the second's handback", got)
	}
	waitPiReady(t, lr.private, lr.s, a.PaneID)
	prompt(t, lr.s, a.PaneID, "/quit")
	res, hb = first.handback(t)
	if res.code != 0 || hb.Reason != "exited" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("the first: exit %d, handback %+v\n%s", res.code, hb, res.stderr)
	}
	lr.wantResult(t, lvPaneReply+" | "+lvPaneReply)
	for _, label := range []string{lvLabel, lvLabel2} {
		if es := lvTranscript(t, lr.run().sessionFile(t, label)); es[len(es)-1].Text != lvPaneReply {
			t.Fatalf("%s's session ends %+v", label, es[len(es)-1])
		}
	}
	lr.wantClosedAll(t, st.ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// open --hold; after the pane's turn the person types a second message
// into the pane, it answers, and then the person closes the pane. Both
// turns are in the attempt's session file, the handback is closed and
// transferred, and the workflow's result is the pane's last reply.
func TestLiveHandoffHeldPaneTakesASecondTurnThenCloses(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) {
		lr.more = func(req fakellm.Request) (fakellm.Reply, bool) {
			if strings.Contains(req.LastUser(), lvSecondAsk) {
				return fakellm.Reply{Text: lvSecondReply, WordDelay: 40 * time.Millisecond}, true
			}
			return fakellm.Reply{}, false
		}
	})
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel, "--hold")
	lvWait(t, "the pane at rest", func() bool { return strings.HasSuffix(events(ro.lines(t)), "working idle") })
	waitPiReady(t, lr.private, lr.s, launched.PaneID)
	prompt(t, lr.s, launched.PaneID, lvSecondAsk)
	lvWait(t, "the second turn at rest", func() bool {
		return strings.HasSuffix(events(ro.lines(t)), "working idle working idle")
	})
	session := lr.run().sessionFile(t, lvLabel)
	lvWait(t, "the second reply in the session", func() bool {
		es := lvTranscript(t, session)
		return es[len(es)-1].Text == lvSecondReply
	})
	if err := herdr.NewClient(lr.s.SocketPath()).PaneClose(t.Context(), launched.PaneID); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Reason != "closed" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	es := lvTranscript(t, session)
	if !slices.ContainsFunc(es, func(m pitest.Message) bool { return m.Text == lvPaneReply }) ||
		!slices.ContainsFunc(es, func(m pitest.Message) bool { return m.Role == "user" && strings.Contains(m.Text, lvSecondAsk) }) {
		t.Fatalf("the session lost a turn: %+v", es)
	}
	lr.wantResult(t, lvSecondReply)
	lr.wantClosedAll(t, lr.run().ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// The same live attempt opened from two panes. The first open hands it
// off without --hold; once its pane runs, a second open from another
// pane with --hold cannot have what it asks (the pane hands back when its
// turn ends): it is refused at once, naming the handoff, who asked for
// it, its pane and the ways on — not taken on as a follower whose --hold
// is dropped without a word (it was: the second open printed the first's
// lines and its pane then closed at the turn's end). Without --hold a
// second open follows, saying first where the handoff stands (not its
// history, "handing off …" long past), and its Ctrl-C
// leaves the handoff to the first, naming the pane and `herdr-pi close`.
// The first then has the handback, and only one pane was split.
func TestLiveHandoffOpenedFromTwoPanes(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	other, err := herdr.NewClient(lr.s.SocketPath()).PaneSplit(t.Context(), herdr.Split{TargetPaneID: "w1:p1", Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	st := lr.run()
	fromOther := []string{"HERDR_PANE_ID=" + other.PaneID}
	asked := lr.start(t, lr.s, fromOther, st.ID, lvLabel, "--hold")
	lvWait(t, "the second open with --hold to end or follow", func() bool {
		select {
		case <-asked.done:
			return true
		default:
			return strings.Contains(asked.out.String(), "pane "+launched.PaneID+": working")
		}
	})
	select {
	case <-asked.done:
	default:
		t.Fatalf("a second open with --hold follows the handoff without it, its --hold dropped:\n%s%s", asked.out.String(), asked.errb.String())
	}
	held := asked.wait(t)
	for _, want := range []string{lvLabel + "#1", "handed off already", "herdr-pi open (pid ", "pane " + launched.PaneID, "without --hold",
		"open it without --hold"} {
		if held.code != 1 || !strings.Contains(held.stderr, want) {
			t.Fatalf("a second open with --hold: exit %d, stderr does not say %q:\n%s%s", held.code, want, held.stdout, held.stderr)
		}
	}
	second := lr.start(t, lr.s, fromOther, st.ID, lvLabel)
	second.waitOutput(t, "pane "+launched.PaneID+": working")
	// Its first line is where the handoff stands — whose, in which pane,
	// since when — not the handoff's history replayed from "handing off
	// … at the end of its current turn", long past.
	if out := second.out.String(); strings.Contains(out, "handing off") || !strings.HasPrefix(out, "following handoff ") ||
		!strings.Contains(out, "asked for by herdr-pi open (pid ") || !strings.Contains(out, "runs in pane "+launched.PaneID+": working for ") {
		t.Fatalf("the second open, following, said:\n%s\nwant first where the handoff stands (following handoff …: … runs in pane %s: working for …)", out, launched.PaneID)
	}
	if err := second.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := second.wait(t)
	if res.code != 130 || !strings.Contains(res.stderr, "stopped following") || !strings.Contains(res.stderr, "pane "+launched.PaneID) ||
		!strings.Contains(res.stderr, "herdr-pi close "+st.ID) {
		t.Fatalf("the second open's Ctrl-C: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	ro.running(t)
	if n := len(lvCalls(lr.s, "pane.split")); n != 2 {
		t.Fatalf("%d pane.split calls: want the handoff's and the test's", n)
	}
	if err := herdr.NewClient(lr.s.SocketPath()).PaneSendInput(t.Context(), launched.PaneID, "", "Escape"); err != nil {
		t.Fatal(err)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Reason != "idle" || !hb.NeedsContinue || !hb.Continued {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvLocalReply)
}

// A handback while the owner's Pi is busy with another agent's turn: of
// two agents of one run, the first is handed off; the second's turn holds
// a bash command open in the owner (it waits for a second gate) all the
// while the first's pane works, goes idle and is handed back. The first
// comes back with its pane's reply, the second's turn is not disturbed
// (its command ends and it answers), and the run completes with both.
func TestLiveHandoffHandedBackWhileTheOwnerRunsAnotherAgentsTurn(t *testing.T) {
	const seekerDone = "agent: seeker finished after its command"
	var gate2 string
	lr := newLiveRig(t, func(lr *liveRig) {
		lr.two = true
		lr.more = func(req fakellm.Request) (fakellm.Reply, bool) {
			if !strings.Contains(req.LastUser(), lvTask2) {
				return fakellm.Reply{}, false
			}
			tools := 0
			for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "user"; i-- {
				if req.Messages[i].Role == "tool" {
					tools++
				}
			}
			switch tools {
			case 1:
				return fakellm.Reply{ToolCommand: "while [ ! -e " + lvShellQuote(gate2) + " ]; do sleep 0.05; done; echo gate2 open"}, true
			case 2:
				return fakellm.Reply{Text: seekerDone}, true
			}
			return fakellm.Reply{}, false
		}
	})
	gate2 = lr.gate + "2"
	lr.startOwner()
	ro, _ := lr.handOff(lvLabel)
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Reason != "idle" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	// The second agent's command still runs: its turn was under way all
	// through the first's handback.
	if slices.ContainsFunc(lr.llm.Requests(), func(r fakellm.Request) bool {
		return strings.Contains(r.LastUser(), lvTask2) && slices.ContainsFunc(r.Messages, func(m fakellm.Message) bool { return strings.Contains(m.Text, "gate2 open") })
	}) {
		t.Fatal("the second agent's command ended before the first's handback: the test did not hold its turn open")
	}
	lvWait(t, "the first agent's session back with its pane's reply", func() bool {
		es := lvTranscript(t, lr.run().sessionFile(t, lvLabel))
		return es[len(es)-1].Text == lvPaneReply
	})
	if err := os.WriteFile(gate2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	lr.wantResult(t, lvPaneReply+" | "+seekerDone)
	lr.wantClosedAll(t, lr.run().ID)
	lr.quitOwner()
	lr.wantNothingLeft()
}

// `herdr-pi open` of an attempt while it is being handed back: the pane
// goes idle after its turn and the owner's wrapper closes it, which Herdr
// takes 4 s to do (the wrapper waits 2 s, then leaves it to close); a second open asked then does not join the
// ending handoff, and asks anew once the attempt is back — where its
// owner finishes it (the pane's reply was its last) before any turn
// boundary comes. Nothing was handed off: the second open exits 1,
// saying the attempt finished and naming the command that opens what it
// left; it used to exit 0 with "handed back: aborted (the workflow owner
// cancelled the handoff: the attempt ended)", as if the attempt had been
// taken over and given back.
func TestLiveHandoffOpenedWhileItIsHandedBack(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	lr.s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 4 * time.Second, Methods: []string{"pane.close"}, Count: 1})
	ro, launched := lr.handOff(lvLabel)
	lvWait(t, "the handback's pane.close", func() bool { return len(lvCalls(lr.s, "pane.close")) > 0 })
	second := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json")
	res, hb := ro.handback(t)
	// Herdr answered the pane's close after the wrapper's 2 s: the pane
	// stays in the ledger, and the handback says so.
	if res.code != 0 || hb.Reason != "idle" || !hb.Transferred || !strings.Contains(hb.LeftOpen, "pane "+launched.PaneID) {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	r2, last := second.handback(t)
	if last.Handoff == hb.Handoff {
		t.Fatalf("the second open joined the handoff being handed back:\n%s", r2.stdout)
	}
	for _, want := range []string{lvLabel + "#1 finished", "nothing was handed off", "herdr-pi open " + st.ID[:8] + " '" + lvLabel + "#1'"} {
		if r2.code != 1 || last.Transferred || !strings.Contains(r2.stderr, want) {
			t.Fatalf("the second open: exit %d, last line %+v; stderr does not say %q:\n%s", r2.code, last, want, r2.stderr)
		}
	}
	lr.wantResult(t, lvPaneReply)
	// Herdr did close it in the end: close finds it gone.
	if out, code := lr.herdrPi(t, "close", st.ID); code != 0 || !strings.Contains(out, "pane "+launched.PaneID+" was closed already") {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
}

// `herdr-pi close <run>` in words while a held handoff's pane (a split)
// runs: close names the pane and the bridge it closed, the handoff is
// handed back as closed with the pane's reply kept, and a second close
// finds nothing open.
func TestCloseAHeldHandoffsSplitInWords(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	st := lr.run()
	ro, launched := lr.handOff(lvLabel, "--hold")
	lvWait(t, "the pane at rest", func() bool { return strings.HasSuffix(events(ro.lines(t)), "working idle") })
	out, code := lr.herdrPi(t, "close", st.ID[:8])
	if code != 0 || !strings.Contains(out, "pane "+launched.PaneID) || !strings.Contains(out, "bridge") {
		t.Fatalf("close: exit %d\n%s", code, out)
	}
	res, hb := ro.handback(t)
	if res.code != 0 || hb.Reason != "closed" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	lr.wantResult(t, lvPaneReply)
	lr.wantClosedAll(t, st.ID)
}
