package live

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// A handoff's pane outlived its Herdr: Herdr was quit and started afresh,
// and the person's first split got the handoff pane's old id. Handing
// back, the wrapper leaves that pane open and says why in its log; the
// pane it did open it still closes.
func TestHandbackLeavesAPaneWhoseIdHerdrGaveAnother(t *testing.T) {
	for _, mode := range []handoff.Mode{handoff.ModeSplit, handoff.ModeTab} {
		t.Run(string(mode), func(t *testing.T) {
			s := herdrtest.Start(t)
			c := Client{herdr.NewClient(s.SocketPath())}
			ctx := context.Background()
			var mu sync.Mutex
			var logged []string
			svc := &Service{cfg: Config{Logf: func(f string, a ...any) {
				mu.Lock()
				logged = append(logged, fmt.Sprintf(f, a...))
				mu.Unlock()
			}}}
			p := handoff.Placement{Mode: mode, CallerPane: s.PaneID(), Direction: "right"}
			placed, err := handoff.Place(ctx, c, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RestartCold(); err != nil {
				t.Fatal(err)
			}
			again, err := handoff.Place(ctx, c, p) // the person's, in the new Herdr
			if err != nil {
				t.Fatal(err)
			}
			if again.PaneID != placed.PaneID {
				t.Fatalf("the new Herdr did not reuse pane id %s (gave %s): the test proves nothing", placed.PaneID, again.PaneID)
			}
			s.ClearRecords()
			o := &handoff.Opened{Placed: placed}
			if _, err := svc.closeRemote(c, o, true, "quit"); err != nil {
				t.Fatal(err)
			}
			if m := s.Methods(); slices.Contains(m, "pane.close") || slices.Contains(m, "tab.close") {
				t.Fatalf("the handback closed the person's pane %s (calls %q)", again.PaneID, m)
			}
			if st := s.Pane(again.PaneID); !st.Exists {
				t.Fatalf("the person's pane %s is gone", again.PaneID)
			}
			mu.Lock()
			said := strings.Join(logged, "\n")
			mu.Unlock()
			if !strings.Contains(said, "leaving ") || !strings.Contains(said, "Herdr has restarted since") {
				t.Fatalf("the log does not say the pane was left open, and why:\n%s", said)
			}
			// The person's pane, which is the one opened now, closes.
			if _, err := svc.closeRemote(c, &handoff.Opened{Placed: again}, true, "quit"); err != nil {
				t.Fatal(err)
			}
			if st := s.Pane(again.PaneID); st.Exists {
				t.Fatalf("a pane the wrapper did open was not closed")
			}
		})
	}
}

// A fully inspectable run's workspace outlived its Herdr: Herdr was
// started afresh and the person's first workspace got the run's
// workspace id. The run's end leaves that workspace open, says why in the
// log, and drops the record; the run's own workspace it still closes.
func TestRunEndLeavesAWorkspaceWhoseIdHerdrGaveAnother(t *testing.T) {
	s := herdrtest.Start(t)
	c := Client{herdr.NewClient(s.SocketPath())}
	ctx := context.Background()
	var mu sync.Mutex
	var logged []string
	l := handoff.LedgerAt(filepath.Join(t.TempDir(), "rt"))
	svc := &Service{cfg: Config{Ledger: l, Herdr: func(string) Herdr { return c }, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}}}
	p := handoff.Placement{Mode: handoff.ModeWorkspace, CallerPane: s.PaneID(), Dedicated: true, WorkspaceLabel: "workflow review", TabLabel: "#1 finder"}
	space := func() *space {
		placed, err := handoff.Place(ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := l.AddAll(placed.Records("r1", s.SocketPath()))
		if err != nil {
			t.Fatal(err)
		}
		// The turn gave its attempt back and closed its tab.
		if err := c.TabClose(ctx, placed.TabID); err != nil {
			t.Fatal(err)
		}
		if err := l.Remove(recs[1]); err != nil {
			t.Fatal(err)
		}
		return &space{run: "r1", socket: s.SocketPath(), workspaceID: placed.WorkspaceID, record: recs[0]}
	}
	sp := space()
	if err := s.RestartCold(); err != nil {
		t.Fatal(err)
	}
	mine, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if mine.Workspace.WorkspaceID != sp.workspaceID {
		t.Fatalf("the new Herdr did not reuse workspace id %s (gave %s): the test proves nothing", sp.workspaceID, mine.Workspace.WorkspaceID)
	}
	s.ClearRecords()
	svc.closeSpace(sp)
	if m := s.Methods(); slices.Contains(m, "workspace.close") {
		t.Fatalf("the run's end closed the person's workspace %s (calls %q)", sp.workspaceID, m)
	}
	mu.Lock()
	said := strings.Join(logged, "\n")
	mu.Unlock()
	if !strings.Contains(said, "leaving workspace "+sp.workspaceID+" open") || !strings.Contains(said, "Herdr has restarted since") {
		t.Fatalf("the log does not say the workspace was left open, and why:\n%s", said)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("the record of a workspace that is not herdr-pi's stays: %+v", rs)
	}
	// The run's own workspace, opened now, closes.
	p.WorkspaceLabel = "workflow again"
	sp = space()
	svc.closeSpace(sp)
	if ws, err := c.WorkspaceList(ctx); err != nil || slices.ContainsFunc(ws, func(w herdr.WorkspaceInfo) bool { return w.WorkspaceID == sp.workspaceID }) {
		t.Fatalf("the run's own workspace %s was not closed (%+v, %v)", sp.workspaceID, ws, err)
	}
}
