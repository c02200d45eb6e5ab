package owner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
)

// Seed 001 / docs/open.md "Back home": a reply that finished the task
// before the handoff stays the attempt's result. The order reaches the
// owner while the agent's last reply is on its way; the turn it ends is
// the boundary, so the pane gets a session whose task is done and no
// prompt to carry on with. Someone chats with the pane's Pi, which
// answers; after the handback the owner does not continue, and the
// workflow's result is the agent's own reply, not the pane's chat — which
// the transcript keeps.
func TestTerminalReplyBeforeTheHandoffStaysTheResult(t *testing.T) {
	wd := newWorld(t, "")
	wd.finalHeld = make(chan struct{})
	var release sync.Once
	let := func() { release.Do(func() { close(wd.finalHeld) }) }
	t.Cleanup(let)
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	waitFor(t, "the agent's last model request", func() bool {
		return slices.ContainsFunc(wd.llm.Requests(), func(r fakellm.Request) bool {
			return strings.Contains(r.LastUser(), agentTask) && r.AnsweredTool()
		})
	})
	ch := o.order(context.Background(), "h1")
	o.tm.WaitText(t, holding, long)
	let()
	l := receive(t, ch)
	es := transcript(t, l.SessionFile)
	if last := es[len(es)-1]; last.Role != "assistant" || last.Text != agentReply || last.StopReason != "stop" {
		t.Fatalf("at the launch the transcript should end with the agent's finished reply: %s", roles(es))
	}
	for _, a := range l.Argv {
		if strings.Contains(a.Text, "Carry on") {
			t.Fatalf("the pane is told to carry on with a finished task: %q", a.Text)
		}
	}

	pane := runPane(t, wd, l)
	pane.WaitFor(t, "the pane's editor", long, func(s string) bool { return strings.Count(s, "────────") >= 2 })
	// Pi shows its editor before its start-up is over, and answers Enter
	// then with "Startup is still in progress", keeping the text: Enter
	// again until the chat reaches the model.
	pane.Type(t, paneChat)
	waitFor(t, "the pane's chat to reach the model", func() bool {
		if slices.ContainsFunc(wd.llm.Requests(), func(r fakellm.Request) bool { return r.LastUser() == paneChat }) {
			return true
		}
		if strings.Contains(pane.Screen(), "Startup is still in progress") {
			_ = pane.Send("\r")
		}
		return false
	})
	waitFor(t, "the pane's reply in the session file", func() bool {
		es := transcript(t, l.SessionFile)
		return es[len(es)-1].Text == paneChatReply
	})
	pane.Close()
	r, err := o.link.Handback(context.Background(), "h1", control.Handback{Reason: control.HandbackExited, Transferred: true, LastStopReason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Transferred || r.Continued || r.Error != "" {
		t.Fatalf("resumed %+v, want transferred, not continued", r)
	}
	if got := waitRunResult(t, wd, o.attempt.RunID); got != agentReply {
		t.Fatalf("the workflow's result is %q, want the reply that finished the task before the handoff, %q", got, agentReply)
	}
	if es := transcript(t, l.SessionFile); es[len(es)-1].Text != paneChatReply {
		t.Fatalf("the transcript should keep the pane's chat: %s", roles(es))
	}
}
