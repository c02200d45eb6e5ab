package handoff

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr was quit and started again while a run's panes were recorded: the
// new Herdr counts its ids from the start, and the pane id herdr-pi kept
// now names a pane the person opened. herdr-pi close leaves that pane and
// that tab alone and says why; a pane that is still the one herdr-pi
// opened is closed as before.
func TestCloseRunLeavesAPaneWhoseIdHerdrGaveAnother(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	split, err := Place(ctx, c, Placement{Mode: ModeSplit, CallerPane: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Place(ctx, c, Placement{Mode: ModeTab, CallerPane: s.PaneID()})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	recs, err := l.AddAll(append(split.Records("r1", s.SocketPath()), tab.Records("r1", s.SocketPath())...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestartCold(); err != nil {
		t.Fatal(err)
	}
	// The person's own panes, opened in the new Herdr, get the same ids.
	mine, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	myTab, myRoot, err := c.TabCreate(ctx, "w1", herdr.NewPlace{})
	if err != nil {
		t.Fatal(err)
	}
	if mine.PaneID != split.PaneID || myTab.TabID != tab.TabID || myRoot.PaneID != tab.PaneID {
		t.Fatalf("the new Herdr did not reuse the ids (%s %s, recorded %s %s): the test proves nothing", mine.PaneID, myTab.TabID, split.PaneID, tab.TabID)
	}
	s.ClearRecords()
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	if m := s.Methods(); slices.Contains(m, "pane.close") || slices.Contains(m, "tab.close") {
		t.Fatalf("close closed the person's pane or tab that has a recorded id (calls %q; closed %+v)", m, closed)
	}
	for _, x := range closed {
		if !strings.HasPrefix(x.How, "left open: ") || !strings.Contains(x.How, "Herdr has restarted since") {
			t.Errorf("%s %s: %q, want it left open, saying why", x.Kind, x.ID, x.How)
		}
	}
	if len(closed) != 2 {
		t.Errorf("closed %+v, want the pane and the tab, each left open", closed)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("records left of what is gone: %+v", rs)
	}

	// Still the pane herdr-pi opened: closed.
	again, err := Place(ctx, c, Placement{Mode: ModeSplit, CallerPane: "w1:p1", Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err = l.AddAll(again.Records("r1", s.SocketPath()))
	if err != nil {
		t.Fatal(err)
	}
	closed, failed = CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil || len(closed) != 1 || closed[0].How != "closed" {
		t.Fatalf("herdr-pi's own pane: closed %+v, failed %+v", closed, failed)
	}
}

// The same for a run's workspace: after Herdr started afresh, the id
// herdr-pi kept names the person's new workspace. close leaves it (and the
// tab of the same id in it) open and says why, rather than closing every
// pane the person has there; a workspace that is still the one herdr-pi
// opened closes as before.
func TestCloseRunLeavesAWorkspaceWhoseIdHerdrGaveAnother(t *testing.T) {
	p := Placement{Mode: ModeWorkspace, Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"}
	s, c, l, placed, recs := placedThenRestartedCold(t, &p)
	ctx := context.Background()
	// The person's own workspace and a tab in it, in the new Herdr, get
	// the ids herdr-pi recorded.
	mine, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	myTab, _, err := c.TabCreate(ctx, mine.Workspace.WorkspaceID, herdr.NewPlace{})
	if err != nil {
		t.Fatal(err)
	}
	if mine.Workspace.WorkspaceID != placed.WorkspaceID || myTab.TabID != placed.TabID {
		t.Fatalf("the new Herdr did not reuse the ids (%s %s, recorded %s %s): the test proves nothing", mine.Workspace.WorkspaceID, myTab.TabID, placed.WorkspaceID, placed.TabID)
	}
	s.ClearRecords()
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	if m := s.Methods(); slices.Contains(m, "workspace.close") || slices.Contains(m, "tab.close") {
		t.Fatalf("close closed the person's workspace or tab that has a recorded id (calls %q; closed %+v)", m, closed)
	}
	for _, x := range closed {
		if !strings.HasPrefix(x.How, "left open: ") || !strings.Contains(x.How, "Herdr has restarted since") {
			t.Errorf("%s %s: %q, want it left open, saying why", x.Kind, x.ID, x.How)
		}
	}
	if len(closed) != 2 {
		t.Errorf("closed %+v, want the workspace and the tab, each left open", closed)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("records left of what is gone: %+v", rs)
	}

	// Still the workspace herdr-pi opened: closed, its tab with it.
	p.WorkspaceLabel = "workflow again"
	again, err := Place(ctx, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err = l.AddAll(again.Records("r1", s.SocketPath())); err != nil {
		t.Fatal(err)
	}
	closed, failed = CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil || len(closed) != 2 || closed[0].How != "closed" || closed[1].How != "with workspace "+again.WorkspaceID {
		t.Fatalf("herdr-pi's own workspace: closed %+v, failed %+v", closed, failed)
	}
}

// A workspace is herdr-pi's while it holds any pane herdr-pi opened there:
// the person closed its first pane (the spare shell), and the run's tab
// still tells it. A record from a herdr-pi that kept no terminal closes
// as before, unchecked.
func TestCloseRunTellsAWorkspaceByAnyPaneItOpenedThere(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	p := Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"}
	placed, err := Place(ctx, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneClose(ctx, placed.RootPane); err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	recs, err := l.AddAll(placed.Records("r1", s.SocketPath()))
	if err != nil {
		t.Fatal(err)
	}
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil || len(closed) != 2 || closed[0].How != "closed" {
		t.Fatalf("a workspace holding herdr-pi's tab: closed %+v, failed %+v", closed, failed)
	}

	p.WorkspaceLabel = "workflow old"
	old, err := Place(ctx, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err = l.AddAll(CreatedRecords("r1", s.SocketPath(), old.Created)); err != nil {
		t.Fatal(err)
	}
	closed, failed = CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil || len(closed) != 2 || closed[0].How != "closed" {
		t.Fatalf("an older herdr-pi's records: closed %+v, failed %+v", closed, failed)
	}
}

// Undoing a placement before its launch, after Herdr started afresh: the
// person's new workspace has the id of the one herdr-pi made, and its
// first tab the id of that one's root tab, so it looks joined by no one.
// Nothing of it closes; the error says why.
func TestUndoJoinedLeavesAWorkspaceWhoseIdHerdrGaveAnother(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	placed, err := Place(ctx, c, Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestartCold(); err != nil {
		t.Fatal(err)
	}
	mine, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if mine.Workspace.WorkspaceID != placed.WorkspaceID || mine.Tab.TabID != placed.RootTab {
		t.Fatalf("the new Herdr did not reuse the ids: the test proves nothing")
	}
	s.ClearRecords()
	_, err = placed.UndoJoined(ctx, c)
	if m := s.Methods(); slices.Contains(m, "workspace.close") || slices.Contains(m, "tab.close") {
		t.Fatalf("undo closed the person's workspace %s (calls %q, err %v)", placed.WorkspaceID, m, err)
	}
	var fe *ForeignError
	if !errors.As(err, &fe) || !strings.Contains(fe.Why, "Herdr has restarted since") {
		t.Fatalf("undo said %v, want why the workspace is left", err)
	}
}

// An open whose pane never started its command (or was given up) undoes
// its placement. Herdr was quit and started afresh meanwhile, and the
// person's first split (or tab) got the id of the pane (tab) herdr-pi
// opened: the undo leaves it open, says why, and names nothing for the
// ledger (it is not herdr-pi's). The same before a live handoff's launch.
func TestUndoLeavesAPaneOrTabWhoseIdHerdrGaveAnother(t *testing.T) {
	for _, mode := range []Mode{ModeSplit, ModeTab} {
		t.Run(string(mode), func(t *testing.T) {
			s := herdrtest.Start(t)
			c := herdr.NewClient(s.SocketPath())
			ctx := context.Background()
			p := Placement{Mode: mode, CallerPane: s.PaneID(), Direction: "right"}
			placed, err := Place(ctx, c, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RestartCold(); err != nil {
				t.Fatal(err)
			}
			mine, err := Place(ctx, c, p) // the person's, in the new Herdr
			if err != nil {
				t.Fatal(err)
			}
			if mine.PaneID != placed.PaneID || mine.TabID != placed.TabID && mode == ModeTab {
				t.Fatalf("the new Herdr did not reuse the ids (%s %s, placed %s %s): the test proves nothing", mine.PaneID, mine.TabID, placed.PaneID, placed.TabID)
			}
			s.ClearRecords()
			failed := errors.New("pane did not start its command")
			o := Opened{Placed: placed}
			err = o.CloseAfter(c, failed)
			if m := s.Methods(); slices.Contains(m, "pane.close") || slices.Contains(m, "tab.close") {
				t.Fatalf("the undo closed the person's pane %s (calls %q, err %v)", mine.PaneID, m, err)
			}
			var lo *LeftOpenError
			if !errors.Is(err, failed) || errors.As(err, &lo) || !strings.Contains(err.Error(), "Herdr has restarted since") {
				t.Fatalf("the undo said %v, want the first error, and why nothing was closed, with nothing for the ledger", err)
			}

			s.ClearRecords()
			again := Opened{Placed: placed}
			if _, err := again.UndoJoined(ctx, c); err == nil || !strings.Contains(err.Error(), "Herdr has restarted since") {
				t.Fatalf("the undo before a launch said %v, want why nothing was closed", err)
			}
			if m := s.Methods(); slices.Contains(m, "pane.close") || slices.Contains(m, "tab.close") {
				t.Fatalf("the undo before a launch closed the person's pane %s (calls %q)", mine.PaneID, m)
			}

			// The person's pane is the one placed now: its own undo closes it.
			own := Opened{Placed: mine}
			if err := own.CloseAfter(c, failed); !errors.Is(err, failed) || strings.Contains(err.Error(), "closing") {
				t.Fatalf("undoing a placement that is still ours: %v", err)
			}
			if st := s.Pane(mine.PaneID); st.Exists {
				t.Fatalf("a pane herdr-pi did open was not closed by its undo")
			}
		})
	}
}

// placedThenRestartedCold places p (from the fake's first pane, which it
// sets as p's CallerPane) in a fresh fake Herdr, keeps what it opened in a
// ledger, and has the Herdr quit and started afresh: the ids herdr-pi
// kept may now be given to someone else.
func placedThenRestartedCold(t *testing.T, p *Placement) (*herdrtest.Server, *herdr.Client, Ledger, Placed, []Record) {
	t.Helper()
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	p.CallerPane = s.PaneID()
	placed, err := Place(context.Background(), c, *p)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	recs, err := l.AddAll(placed.Records("r1", s.SocketPath()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestartCold(); err != nil {
		t.Fatal(err)
	}
	return s, c, l, placed, recs
}

// splitAfterLook is a Herdr in which the person splits a pane right after
// herdr-pi's look at its pane found it gone: a Herdr started afresh gives
// the person's pane the id herdr-pi's had.
type splitAfterLook struct {
	Herdr
	t     *testing.T
	mine  herdr.PaneInfo
	split bool
}

func (h *splitAfterLook) PaneGet(ctx context.Context, id string) (herdr.PaneInfo, error) {
	info, err := h.Herdr.PaneGet(ctx, id)
	if err != nil && !h.split {
		h.split = true
		if h.mine, err = h.Herdr.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"}); err != nil {
			h.t.Fatal(err)
		}
		if h.mine.PaneID != id {
			h.t.Fatalf("the person's pane is %s, not %s: the test proves nothing", h.mine.PaneID, id)
		}
		return herdr.PaneInfo{}, &herdr.Error{Method: "pane.get", Code: "pane_not_found", Message: "no such pane"}
	}
	return info, err
}

// A pane herdr-pi opened that is gone is not closed: there is nothing to
// close, and a close sent after the look found it gone could meet the
// pane a Herdr started afresh has just given its id to. Neither an undo
// nor herdr-pi close sends one, and close says the pane is gone.
func TestAPaneFoundGoneIsNotClosedAfterTheLook(t *testing.T) {
	for _, how := range []string{"undo", "close"} {
		t.Run(how, func(t *testing.T) {
			s, c, l, placed, recs := placedThenRestartedCold(t, &Placement{Mode: ModeSplit, Direction: "right"})
			ctx := context.Background()
			h := &splitAfterLook{Herdr: c, t: t}
			switch how {
			case "undo":
				failed := errors.New("pane ended before it started its command")
				o := Opened{Placed: placed}
				if err := o.CloseAfter(h, failed); !errors.Is(err, failed) || strings.Contains(err.Error(), "closing") {
					t.Fatalf("the undo said %v", err)
				}
			case "close":
				closed, failures := CloseRun(ctx, l, func(string) Herdr { return h }, recs, time.Second)
				if failures != nil || len(closed) != 1 || closed[0].How != "gone" {
					t.Fatalf("close: closed %+v, failed %+v; want the pane gone", closed, failures)
				}
			}
			if !h.split {
				t.Fatal("nothing looked at the pane before closing it")
			}
			if slices.Contains(s.Methods(), "pane.close") || !s.Pane(h.mine.PaneID).Exists {
				t.Fatalf("the %s closed the person's pane %s (calls %q)", how, h.mine.PaneID, s.Methods())
			}
		})
	}
}

// Herdr was quit and started again the usual way: it restored its layout,
// the run's pane and workspace among it, with new shells in new
// terminals. herdr-pi cannot tell that from ids a Herdr started afresh
// gave to someone else, so close leaves them; what it says must not claim
// Herdr started afresh, and must give the person the way to close what
// is the run's: the exact Herdr command.
func TestCloseRunAfterHerdrRestoredItsLayoutSaysHowToCloseIt(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	split, err := Place(ctx, c, Placement{Mode: ModeSplit, CallerPane: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Place(ctx, c, Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	recs, err := l.AddAll(append(split.Records("r1", s.SocketPath()), ws.Records("r1", s.SocketPath())...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestartRestored(); err != nil {
		t.Fatal(err)
	}
	if !s.Pane(split.PaneID).Exists || !s.Pane(ws.PaneID).Exists {
		t.Fatal("the restart restored nothing: the test proves nothing")
	}
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	want := map[string]string{"pane " + split.PaneID: "herdr pane close " + split.PaneID, "workspace " + ws.WorkspaceID: "herdr workspace close " + ws.WorkspaceID,
		"tab " + ws.TabID: "herdr tab close " + ws.TabID}
	for _, x := range closed {
		how := x.How
		if !strings.HasPrefix(how, "left open: ") || strings.Contains(how, "started afresh and gave") ||
			!strings.Contains(how, "restored") || !strings.Contains(how, want[x.Kind+" "+x.ID]) {
			t.Errorf("%s %s: %q, want it left open, saying Herdr may have restored it and how to close it (%s)", x.Kind, x.ID, how, want[x.Kind+" "+x.ID])
		}
	}
	if len(closed) != 3 {
		t.Errorf("closed %+v, want the pane, the workspace and its tab, each left open", closed)
	}
}
