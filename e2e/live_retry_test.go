package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Seed 001: "Only actions valid for the latest attempt are shown." The
// finder's first attempt fails (a provider error) and the person has the
// engine try again with a model chosen ("Change model": a new attempt;
// "Retry" would go on in the same one). While the retry works, `herdr-pi
// open --list` offers the failed attempt for inspection and the retry
// live; the owner's /workflow menu offers the live action alone (not the
// inspection a settled attempt gets); and `herdr-pi open` hands the retry
// off — its own session, not the failed attempt's — and back, the
// workflow completing with the pane's reply.
func TestLiveHandoffOfARetriedAgent(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.retried = true })
	lr.launchOwner()
	lr.owner.Type(t, lvOwnerPrompt)
	// The engine asks what to do about the failed attempt.
	lr.owner.WaitText(t, `Subagent "`+lvLabel+`" failed`, lvLong)
	lr.owner.WaitText(t, "→ Retry", lvLong)
	lvSend(t, lr.owner, pitest.KeyDown)
	lr.owner.WaitText(t, "→ Change model", lvLong)
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitFor(t, "the model selector", lvLong, func(s string) bool {
		return strings.Contains(s, "→ fake-model [fake]") && strings.Contains(s, "Model catalogs refreshed")
	})
	lvSend(t, lr.owner, lvEnter)
	lvWait(t, "the retry's tool call", func() bool {
		return slices.ContainsFunc(lr.toolLines(), func(l string) bool { return strings.HasPrefix(l, "start alpha gate") })
	})
	st := lr.run()
	var sessions []string
	for _, a := range st.Agents {
		if a.Label == lvLabel {
			for _, d := range a.AttemptDetails {
				sessions = append(sessions, d.Session.Locator.SessionFile)
			}
		}
	}
	if len(sessions) != 2 || sessions[0] == sessions[1] {
		t.Fatalf("the finder's attempts' sessions %q: want two (the set-up did not retry)", sessions)
	}

	out, code := lr.herdrPi(t, "open", "--list", st.ID, "--json")
	var list struct {
		Runs []struct {
			Agents []struct {
				Label    string `json:"label"`
				State    string `json:"state"`
				Attempts []struct {
					Name        string `json:"name"`
					State       string `json:"state"`
					Settled     bool   `json:"settled"`
					Live        bool   `json:"live"`
					Action      string `json:"action"`
					SessionFile string `json:"session_file"`
				} `json:"attempts"`
			} `json:"agents"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list.Runs) != 1 || len(list.Runs[0].Agents) != 1 {
		t.Fatalf("open --list: exit %d (%v)\n%s", code, err, out)
	}
	ag := list.Runs[0].Agents[0]
	if len(ag.Attempts) != 2 || ag.State != "running" ||
		ag.Attempts[0].Name != lvLabel+"#1" || ag.Attempts[0].State != "failed" || !ag.Attempts[0].Settled || ag.Attempts[0].Action != "open" || ag.Attempts[0].SessionFile != sessions[0] ||
		ag.Attempts[1].Name != lvLabel+"#2" || ag.Attempts[1].Settled || !ag.Attempts[1].Live || ag.Attempts[1].Action != "live" || ag.Attempts[1].SessionFile != sessions[1] {
		t.Fatalf("open --list: want %s#1 failed to open and %s#2 live:\n%s", lvLabel, lvLabel, out)
	}

	actions := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(actions, "Open live session in Herdr pane") != 1 || lvCount(actions, "Open session in Herdr pane") != 0 {
		t.Fatalf("the retried agent's actions %q: want the live action alone", actions)
	}
	lr.leaveMenu()

	ro, launched := lr.handOff(lvLabel)
	if !slices.Contains(launched.Command, sessions[1]) || slices.Contains(launched.Command, sessions[0]) {
		t.Fatalf("the pane runs %q, want the retry's session %s", launched.Command, sessions[1])
	}
	res := ro.wait(t)
	if ls := ro.lines(t); res.code != 0 || events(ls) != "ordered launched working idle handback" || ls[0].Attempt != lvLabel+"#2" || !ls[len(ls)-1].Transferred {
		t.Fatalf("exit %d, events %q\n%s%s", res.code, events(ls), res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
	if ts := lvTranscript(t, sessions[0]); slices.ContainsFunc(ts, func(m pitest.Message) bool { return strings.Contains(m.Text, lvPaneReply) }) {
		t.Fatalf("the failed attempt's transcript got the pane's turn: %+v", ts)
	}
}
