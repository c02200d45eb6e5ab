package owner

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// The engine gives every local agent session its tool-timing extension,
// which records each tool call's duration in the session file (the
// trajectory view reads them). A tool call the pane's Pi makes gets its
// entry too, exactly one, as the local agent's call got one before the
// handoff: the launch carries the engine's own extension.
func TestAToolCallInThePaneIsTimedAsLocally(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.paneCallsTool, wd.paneToolAnswers = true, true
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	pane := runPane(t, wd, l)
	waitFor(t, "the pane's reply after its tool call in the session file", func() bool {
		es := transcript(t, l.SessionFile)
		return len(es) > 0 && es[len(es)-1].Text == paneReply
	})
	pane.Close()

	var local, remote []pitest.ToolTiming
	for _, e := range pitest.ToolTimings(t, l.SessionFile) {
		if e.ToolCallID == paneToolCall {
			remote = append(remote, e)
		} else if e.ToolName == "herdr_lookup" {
			local = append(local, e)
		}
	}
	// The baseline: the engine timed the local agent's call.
	if len(local) != 1 {
		t.Fatalf("the local agent's herdr_lookup call has %d timing entries, want 1 (the engine's own extension): %+v", len(local), local)
	}
	if len(remote) != 1 {
		t.Fatalf("the pane's tool call %s has %d timing entries in %s, want 1 as the local call has", paneToolCall, len(remote), l.SessionFile)
	}
	r := remote[0]
	if r.ToolName != "herdr_lookup" || r.IsError || r.StartedAt <= 0 || r.CompletedAt < r.StartedAt || r.DurationMs != r.CompletedAt-r.StartedAt {
		t.Errorf("the pane's timing entry: %+v", r)
	}
	if r.StartedAt < local[0].CompletedAt {
		t.Errorf("the pane's call started (%d) before the local one ended (%d)", r.StartedAt, local[0].CompletedAt)
	}
}
