package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// These tests load the generated extension into a real Pi 1.6.0 under a
// real pty: the fake model calls a bridged tool, the tool runs here (the
// owner), and what Pi makes of it is read from its screen and from the
// next request it sends the model.

var echoSpec = Spec{
	Name:        "herdr_echo",
	Label:       "Herdr echo",
	Description: "Echoes text from the workflow owner.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}

var slowSpec = Spec{Name: "herdr_slow", Description: "Runs until cancelled."}

// startPane serves the tools, writes the client and runs Pi with it and
// an initial prompt (no typing race with Pi's startup).
func startPane(t *testing.T, llm *fakellm.Server, exec ExecutorFunc, specs ...Spec) (*Server, *pitest.Term) {
	t.Helper()
	pi := pitest.Current(t)
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	srv, err := Serve(Config{Dir: shortDir(t), Tools: specs, Executor: exec, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	client, err := srv.WriteClient()
	if err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, []string{pi.Bin, "--extension", client, "Please use the tool."}, a.Env, a.Project, 30, 100)
	return srv, tm
}

func TestRealPiCallsABridgedTool(t *testing.T) {
	llm := fakellm.Start(func(req fakellm.Request) fakellm.Reply {
		if !req.AnsweredTool() {
			return fakellm.Reply{Tool: &fakellm.ToolCall{ID: "call_echo_1", Name: "herdr_echo", Args: map[string]string{"text": "from the model"}}}
		}
		return fakellm.Reply{Text: "All done here."}
	})
	defer llm.Close()
	calls := make(chan Call, 1)
	release := make(chan struct{})
	_, tm := startPane(t, llm, func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
		update(json.RawMessage(`{"content":[{"type":"text","text":"partial from the owner"}]}`))
		calls <- call
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"owner says: from the model"}],"details":{}}`), nil
	}, echoSpec)

	call := receive(t, calls, "bridged call")
	if call.Name != "herdr_echo" || call.ToolCallID == "" || string(call.Params) != `{"text":"from the model"}` {
		t.Fatalf("call %+v", call)
	}
	// Pi shows the partial result while the tool runs: the update got there.
	tm.WaitText(t, "partial from the owner", 20*time.Second)
	close(release)
	tm.WaitText(t, "All done here.", 30*time.Second)

	reqs, err := llm.WaitRequests(2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reqs[0].Body), `"herdr_echo"`) || !strings.Contains(string(reqs[0].Body), "Echoes text from the workflow owner.") {
		t.Fatalf("the first request does not declare the bridged tool: %.2000s", reqs[0].Body)
	}
	var toolMsgs []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m.Text)
		}
	}
	if len(toolMsgs) != 1 || toolMsgs[0] != "owner says: from the model" {
		t.Fatalf("tool results the model got: %q", toolMsgs)
	}
	if strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Text, "partial") {
		t.Fatal("the partial update reached the model")
	}
}

func TestRealPiEscapeCancelsTheOwnersTool(t *testing.T) {
	llm := fakellm.Start(func(req fakellm.Request) fakellm.Reply {
		if !req.AnsweredTool() {
			return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "herdr_slow", Args: map[string]any{}}}
		}
		return fakellm.Reply{Text: "Should not be asked."}
	})
	defer llm.Close()
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	_, tm := startPane(t, llm, func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
		update(json.RawMessage(`{"content":[{"type":"text","text":"slow tool running"}]}`))
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}, slowSpec)

	receive(t, started, "bridged call")
	tm.WaitText(t, "slow tool running", 20*time.Second)
	// A lone Escape, on its own, aborts the running turn (pi-agent.md §4.2).
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, ended, "cancellation in the owner"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the tool's context ended with %v", err)
	}
	if reqs := llm.Requests(); len(reqs) != 1 {
		t.Fatalf("after the abort Pi asked the model again (%d requests)", len(reqs))
	}
}
