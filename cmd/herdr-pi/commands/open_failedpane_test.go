package commands

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// A workspace open made around a pane whose command failed stays after
// the pane: its record names the workspace's root pane and terminal, so
// herdr-pi close can tell it from a workspace a Herdr started afresh gave
// the same id (handoff.Foreign).
func TestAWorkspaceAroundAFailedPaneIsRecordedWithItsTerminal(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	placed, err := handoff.Place(ctx, c, handoff.Placement{Mode: handoff.ModeWorkspace, CallerPane: s.PaneID(),
		Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	l := handoff.LedgerAt(filepath.Join(t.TempDir(), "rt"))
	if err := recordAroundFailedPane(l, "r1", s.SocketPath(), placed); err != nil {
		t.Fatal(err)
	}
	recs, err := l.List()
	if err != nil || len(recs) != 1 || recs[0].Thing() != "workspace "+placed.WorkspaceID {
		t.Fatalf("recorded %+v (%v), want the workspace", recs, err)
	}
	r := recs[0]
	info, err := c.PaneGet(ctx, r.Pane)
	if r.Pane == "" || r.Terminal == "" || err != nil || info.TerminalID != r.Terminal || info.WorkspaceID != placed.WorkspaceID {
		t.Fatalf("workspace recorded with pane %q terminal %q, Herdr says %+v (%v): close cannot tell it from a namesake", r.Pane, r.Terminal, info, err)
	}
}
