package commands

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr was quit and started afresh while open waited for its pane to
// start, and the person's first split got the id of the pane open had
// split. Open then gives up (Ctrl-C, or the pane it split is gone) and
// closes what it made: it leaves the person's pane open, and does not
// claim to have closed it.
func TestOpenGivenUpAfterHerdrStartedAfreshLeavesThePersonsPane(t *testing.T) {
	f, s, run, _, errb := openWorldOn(t, "exec sleep 600", herdrtest.Options{NoEventPacing: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- openRun(ctx, f, &openOptions{Run: run, Attempt: "api", Place: "split", StartTimeout: time.Hour, ForkTimeout: time.Hour})
	}()
	// Open has typed its command and watches the pane's end.
	s.WaitFor(t, time.Minute, "open to watch its pane", func() bool { return slices.Contains(s.Methods(), "events.subscribe") })
	if err := s.RestartCold(); err != nil {
		t.Fatal(err)
	}
	c := herdr.NewClient(s.SocketPath())
	mine, err := c.PaneSplit(t.Context(), herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	if mine.PaneID != "w1:p2" {
		t.Fatalf("the new Herdr gave the person's pane %s, not open's w1:p2: the test proves nothing", mine.PaneID)
	}
	s.ClearRecords()
	// Whichever comes first ends open: its watch seeing w1:p2 gone (if it
	// looked before the person split), or Ctrl-C.
	cancel()
	err = <-done
	said := errb.String()
	if err != nil {
		said += err.Error()
	}
	if m := s.Methods(); slices.Contains(m, "pane.close") || !s.Pane(mine.PaneID).Exists {
		t.Fatalf("open closed the person's pane %s (calls %q): %s", mine.PaneID, m, said)
	}
	if strings.Contains(said, "closed pane") || !strings.Contains(said, "Herdr has restarted since") {
		t.Fatalf("open said %q, want that it left pane w1:p2 open, and why", said)
	}
}

// Herdr went away while open waited for its pane to start, and the person
// pressed Ctrl-C: the pane could not be closed, and a Herdr that comes
// back brings it back. Open does not claim it closed the pane: it is in
// the ledger, and open says herdr-pi close <run> sees to it once Herdr is
// back, which it then does.
func TestOpenInterruptedWhileHerdrIsGoneLeavesThePaneToClose(t *testing.T) {
	f, s, run, _, errb := openWorldOn(t, "exec sleep 600", herdrtest.Options{NoEventPacing: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- openRun(ctx, f, &openOptions{Run: run, Attempt: "api", Place: "split", StartTimeout: time.Hour, ForkTimeout: time.Hour})
	}()
	s.WaitFor(t, time.Minute, "open to watch its pane", func() bool { return slices.Contains(s.Methods(), "events.subscribe") })
	s.Crash()
	cancel()
	err := <-done
	said := errb.String()
	if err != nil {
		said += err.Error()
	}
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	recs, _ := ledger.List()
	if len(recs) != 1 || recs[0].Thing() != "pane w1:p2" || strings.Contains(said, "closed pane") || !strings.Contains(said, "herdr-pi close "+run[:8]) {
		t.Fatalf("open said %q and the ledger holds %+v: want pane w1:p2 kept for herdr-pi close, and said so", said, recs)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	closed, failed := handoff.CloseRun(t.Context(), ledger, func(socket string) handoff.Herdr { return herdr.NewClient(socket) }, recs, time.Second)
	if len(failed) != 0 || len(closed) != 1 || closed[0].How != "closed" || s.Pane("w1:p2").Exists {
		t.Fatalf("herdr-pi close once Herdr is back: closed %+v, failed %+v", closed, failed)
	}
}
