package handoff

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// An open that fails after its placement, with Herdr gone by then (it
// crashed, or was quit): the pane could not be closed, and a Herdr that
// comes back brings it back (its layout restored, or the pane itself
// after a live handoff). It is named for the ledger, as any close Herdr
// did not do is, so herdr-pi close can close it once Herdr is back —
// the policy of a handback and of a fully inspectable run's end too.
func TestAnUndoHerdrWasGoneForNamesWhatStaysForTheLedger(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	placed, err := Place(ctx, c, Placement{Mode: ModeSplit, CallerPane: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	s.Crash()
	failed := errors.New("starting the command in pane " + placed.PaneID + ": Herdr went away")
	o := Opened{Placed: placed}
	err = o.CloseAfter(c, failed)
	var lo *LeftOpenError
	if !errors.As(err, &lo) || !errors.Is(err, failed) || strings.Join(lo.Left, ",") != "pane "+placed.PaneID || lo.Placed.Terminal != placed.Terminal {
		t.Fatalf("the undo with Herdr gone said %v, want a *LeftOpenError naming pane %s (with its terminal) for the ledger", err, placed.PaneID)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	recs, err := l.AddLeftOpen("r1", s.SocketPath(), err)
	if err != nil || len(recs) != 1 {
		t.Fatalf("the ledger took %+v, %v", recs, err)
	}
	closed, failures := CloseRun(ctx, l, func(string) Herdr { return c }, recs, 0)
	if len(failures) != 0 || len(closed) != 1 || closed[0].How != "closed" {
		t.Fatalf("close once Herdr is back: %+v, failed %+v", closed, failures)
	}
}
