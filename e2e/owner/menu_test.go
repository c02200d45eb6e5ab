package owner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

const (
	keyDown  = pitest.KeyDown
	keyEnter = pitest.KeyEnter
	keyEsc   = pitest.KeyEsc
)

// agentActions goes to the run's agent's action list (pitest.AgentActions).
func agentActions(t *testing.T, tm *pitest.Term) string {
	t.Helper()
	return pitest.AgentActions(t, tm, flowName, agentLabel, long)
}

var actionList = pitest.ActionList

func count(list []string, label string) int {
	n := 0
	for _, x := range list {
		if x == label {
			n++
		}
	}
	return n
}

const (
	liveLabel    = "Open live session in Herdr pane"
	inspectLabel = "Open session in Herdr pane"
)

// Inside Herdr the menu of a running agent offers the live action once
// (and no inspection); choosing it asks the wrapper, which orders the
// handoff; the session comes back and the workflow completes; the settled
// agent then offers inspection once, which asks the wrapper too.
func TestMenuActionsInsideHerdr(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	list := actionList(agentActions(t, o.tm))
	if count(list, liveLabel) != 1 || count(list, inspectLabel) != 0 {
		t.Fatalf("a running agent's actions %q: want %q once and no %q", list, liveLabel, inspectLabel)
	}
	if list[0] != liveLabel {
		t.Fatalf("the cursor starts on %q, not the live action", list[0])
	}
	if err := o.tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	req := wd.w.next(t, "the menu's handoff request", long, func(m control.OwnerMessage) bool { _, ok := m.(control.HandoffRequest); return ok }).(control.HandoffRequest)
	if req.RunID != o.attempt.RunID || req.SessionID != o.attempt.SessionID || req.Label != agentLabel || req.Attempt != 1 || !strings.HasPrefix(req.AgentID, o.attempt.RunID) {
		t.Fatalf("handoff request %+v for attempt %+v", req, o.attempt)
	}
	o.tm.WaitText(t, "finder: handoff requested", long)

	ctx := context.Background()
	ch := make(chan launched, 1)
	go func() {
		l, err := o.link.Handoff(ctx, control.HandoffOrder{ID: "h1", RunID: req.RunID, SessionID: req.SessionID, Request: req.ID})
		ch <- launched{l, err}
	}()
	o.tm.WaitText(t, holding, long)
	o.openGate(t)
	receive(t, ch)
	if _, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackFailed, Error: "no Herdr here"}); err != nil {
		t.Fatal(err)
	}
	waitRunResult(t, wd, o.attempt.RunID)
	// The run's completion reaches the owner as a follow-up it answers;
	// typing while it works would queue the text as a message.
	o.tm.WaitText(t, "owner: noted", long)

	// Back to the agent, settled now (the menu may still be open).
	list = actionList(agentActions(t, o.tm))
	if count(list, inspectLabel) != 1 || count(list, liveLabel) != 0 {
		t.Fatalf("a completed agent's actions %q: want %q once and no %q", list, inspectLabel, liveLabel)
	}
	if err := o.tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	ins := wd.w.next(t, "the menu's inspect request", long, func(m control.OwnerMessage) bool { _, ok := m.(control.InspectRequest); return ok }).(control.InspectRequest)
	if ins.RunID != o.attempt.RunID || ins.SessionID != o.attempt.SessionID || ins.SessionFile != o.attempt.SessionFile || ins.Cwd != wd.agent.Project {
		t.Fatalf("inspect request %+v for attempt %+v", ins, o.attempt)
	}
}

// Outside a complete Herdr environment the menu offers neither action.
func TestMenuActionsOutsideHerdr(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv())
	list := actionList(agentActions(t, o.tm))
	if len(list) == 0 || count(list, liveLabel)+count(list, inspectLabel) != 0 {
		t.Fatalf("actions outside Herdr %q: want none of herdr-pi's", list)
	}
}

// With the engine's own Herdr extension loaded too, the menu still shows
// one live action, herdr-pi's: choosing it reaches the wrapper, and the
// engine's extension never calls Herdr.
func TestMenuHidesTheEnginesHerdrExtension(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.extra = []string{"-e", upstreamHerdr(t, wd)}
	herdrLog := fakeHerdr(t, wd)
	o := startOwner(t, wd, wd.ownerEnv(append(herdrEnv, "PATH="+filepath.Dir(herdrLog)+":"+wd.path())...))
	if !o.engine.Upstream || strings.Join(o.engine.Hidden, ",") != "openSession,openLiveSession" {
		t.Fatalf("engine status %+v: want the engine's Herdr extension seen and its two actions hidden", o.engine)
	}
	list := actionList(agentActions(t, o.tm))
	if count(list, liveLabel) != 1 {
		t.Fatalf("actions %q: want %q exactly once", list, liveLabel)
	}
	if err := o.tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	wd.w.next(t, "herdr-pi's handoff request", long, func(m control.OwnerMessage) bool { _, ok := m.(control.HandoffRequest); return ok })
	if b, _ := os.ReadFile(herdrLog); len(b) != 0 {
		t.Fatalf("the engine's Herdr extension ran: herdr was called with\n%s", b)
	}
}

// Stopping the run while its agent is handed off makes the owner give the
// handoff up: it tells the wrapper (handoff_cancel), waits for the pane to
// be closed (the handback), and the run ends stopped.
func TestStoppedRunCancelsTheHandoff(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	ctx := context.Background()
	o.handOff(t, "h1")
	if err := o.link.PaneState("h1", control.PaneLaunched); err != nil {
		t.Fatal(err)
	}
	o.tm.WaitText(t, "finder: working", long)

	stopRun(t, o.tm)
	c := wd.w.next(t, "the owner's cancel", long, func(m control.OwnerMessage) bool { _, ok := m.(control.HandoffCancel); return ok }).(control.HandoffCancel)
	if c.ID != "h1" || c.Reason == "" {
		t.Fatalf("cancel %+v", c)
	}
	r, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackAborted, Transferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Continued {
		t.Fatalf("resumed %+v: a stopped run must not continue", r)
	}
	waitFor(t, "the run to stop", func() bool {
		s := readState(t, wd, o.attempt.RunID).State
		return s == "stopped" || s == "cancelled" || s == "failed"
	})
}

// stopRun stops the run through the /workflow menu's run actions.
func stopRun(t *testing.T, tm *pitest.Term) {
	t.Helper()
	tm.Type(t, "/workflow")
	tm.WaitText(t, "↑↓ navigate", long)
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Tree", long)
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Run actions", long)
	if err := tm.Send(keyDown); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "→ Stop", long)
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Stop workflow?", long)
	if err := tm.Send(keyEnter); err != nil { // "Yes"
		t.Fatal(err)
	}
}
