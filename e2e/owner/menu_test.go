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
	keyDown  = "\x1b[B"
	keyEnter = "\r"
	keyEsc   = "\x1b"
)

// agentActions opens the /workflow menu on the run's agent and returns the
// screen with its action list.
func agentActions(t *testing.T, tm *pitest.Term) string {
	t.Helper()
	tm.Type(t, "/workflow")
	tm.WaitText(t, "↑↓ navigate", long)
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Tree", long)
	for i := 0; ; i++ {
		s := tm.Screen()
		if selected(s, agentLabel) {
			break
		}
		if i == 6 {
			t.Fatalf("could not select agent %s in the run's tree:\n%s", agentLabel, s)
		}
		before := s
		if err := tm.Send(keyDown); err != nil {
			t.Fatal(err)
		}
		tm.WaitFor(t, "the cursor to move", long, func(s string) bool { return s != before })
	}
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	return tm.WaitText(t, "Agent actions", long)
}

// closeMenu presses Escape until no menu (with its "escape/ctrl+c" hint)
// is on screen.
func closeMenu(t *testing.T, tm *pitest.Term) {
	t.Helper()
	for i := 0; strings.Contains(tm.Screen(), "escape/ctrl+c"); i++ {
		if i == 5 {
			t.Fatalf("the /workflow menu does not close:\n%s", tm.Screen())
		}
		before := tm.Screen()
		if err := tm.Send(keyEsc); err != nil {
			t.Fatal(err)
		}
		tm.WaitFor(t, "the menu to go back", long, func(s string) bool { return s != before })
	}
}

// selected: the tree's cursor line names label.
func selected(screen, label string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "→") && strings.Contains(strings.SplitN(l, "|", 2)[0], label) {
			return true
		}
	}
	return false
}

// actionList is the agent action list on the screen (the lines after
// "Agent actions", right of the tree).
func actionList(screen string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		_, right, ok := strings.Cut(l, "|")
		if !ok {
			if in {
				break
			}
			continue
		}
		right = strings.TrimSpace(right)
		if right == "Agent actions" {
			in = true
			continue
		}
		if in && right != "" {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(right, "→")))
		}
	}
	return out
}

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
	o.tm.WaitText(t, "finder: handing off at the end of this turn", long)
	if err := os.WriteFile(wd.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	receive(t, ch)
	if _, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackFailed, Error: "no Herdr here"}); err != nil {
		t.Fatal(err)
	}
	waitRunResult(t, wd, o.attempt.RunID)

	// Leave the menu (it stayed open), then open it again on the settled
	// agent.
	closeMenu(t, o.tm)
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
	ch := o.order(ctx, "h1")
	o.tm.WaitText(t, "finder: handing off at the end of this turn", long)
	if err := os.WriteFile(wd.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	receive(t, ch)
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
