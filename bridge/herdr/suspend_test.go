package herdr_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Stopped by Ctrl-Z, the pane shows idle and why, Herdr having it before
// Suspend returns; the agent's changes meanwhile wait, and Resume shows
// the newest of them.
func TestPresenceSuspendShowsIdleAndResumeTheAgentsState(t *testing.T) {
	s := herdrtest.Start(t)
	p := herdr.StartPresence(presenceConfig(s, &logSink{}))
	defer p.Close(context.Background())
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Suspend(ctx, "stopped (Ctrl-Z)")
	if st := s.Pane(s.PaneID()); st.Status != "idle" {
		t.Fatalf("pane %+v once Suspend returned, want idle", st)
	}
	p.Suspend(ctx, "again") // a second stop changes nothing
	p.Report("blocked", "approve")
	if err := p.Reported(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Pane(s.PaneID()); st.Status != "idle" {
		t.Fatalf("pane %+v after the agent's change while suspended, want idle still", st)
	}
	p.Resume()
	s.WaitFor(t, 10*time.Second, "blocked again", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	p.Resume() // and a second resume too
	if err := p.Reported(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range s.AgentCalls(s.PaneID()) {
		if c.State != "unknown" { // the claim, which "working" may overtake
			got = append(got, c.State+":"+c.Message)
		}
	}
	if want := "working: idle:stopped (Ctrl-Z) blocked:approve"; strings.Join(got, " ") != want {
		t.Errorf("reports %q, want %q", strings.Join(got, " "), want)
	}
}

// Nothing to stand for before the first state, nor on a nil Presence.
func TestPresenceSuspendBeforeAnyStateDoesNothing(t *testing.T) {
	var nilP *herdr.Presence
	nilP.Suspend(context.Background(), "x")
	nilP.Resume()
	s := herdrtest.Start(t)
	p := herdr.NewPresence(presenceConfig(s, &logSink{}))
	defer p.Close(context.Background())
	p.Suspend(context.Background(), "stopped")
	p.Start()
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	p.Resume()
	if err := p.Reported(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.AgentCalls(s.PaneID()) {
		if c.State == "idle" {
			t.Errorf("a suspension before Start reached Herdr: %+v", s.AgentCalls(s.PaneID()))
		}
	}
}
