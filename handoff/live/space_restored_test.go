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

// Herdr was quit and started again the usual way while a fully
// inspectable run worked (its owner's wrapper outlived it: a tmux inside
// the pane, say): Herdr restored the run's workspace, same id and labels,
// new shells. At the run's end herdr-pi cannot tell that workspace from
// the same id given to someone else, so it leaves it open — and the
// person, who sees it stay, hears so where they look, in the owner's
// notice area, with the command that closes it; not only in the log.
func TestRunEndTellsTheOwnerWhyItsRestoredWorkspaceStays(t *testing.T) {
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
	placed, err := handoff.Place(ctx, c, handoff.Placement{Mode: handoff.ModeWorkspace, CallerPane: s.PaneID(), Dedicated: true,
		WorkspaceLabel: "workflow review", TabLabel: "#1 finder"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.AddAll(placed.Records("3f0c9a2e-77aa-4b1c-9d7e-0123456789ab", s.SocketPath()))
	if err != nil {
		t.Fatal(err)
	}
	owner := &fakeOwner{pid: 42, done: make(chan struct{})}
	sp := &space{run: "3f0c9a2e-77aa-4b1c-9d7e-0123456789ab", socket: s.SocketPath(), workspaceID: placed.WorkspaceID, record: recs[0], link: owner}
	if err := s.RestartRestored(); err != nil {
		t.Fatal(err)
	}
	s.ClearRecords()
	svc.closeSpace(sp)
	if m := s.Methods(); slices.Contains(m, "workspace.close") {
		t.Fatalf("closed workspace %s, which herdr-pi cannot tell is the run's (calls %q)", sp.workspaceID, m)
	}
	owner.mu.Lock()
	told := strings.Join(owner.refused, "\n")
	owner.mu.Unlock()
	want := "herdr workspace close " + placed.WorkspaceID
	if !strings.Contains(told, want) || !strings.Contains(told, "Herdr restarted") || !strings.Contains(told, "3f0c9a2e") {
		mu.Lock()
		t.Fatalf("the owner was told %q, want why the workspace stays and %q; the log:\n%s", told, want, strings.Join(logged, "\n"))
	}
	for _, line := range owner.refused {
		if _, msg, _ := strings.Cut(line, ": "); len([]rune(msg)) > 240 {
			t.Errorf("the notice is longer than the owner's notice area shows (%d characters): %q", len([]rune(msg)), msg)
		}
	}

	// An owner that has gone hears nothing (its link is closed).
	close(owner.done)
	owner.refused = nil
	sp = &space{run: sp.run, socket: sp.socket, workspaceID: sp.workspaceID, record: recs[0], link: owner}
	svc.closeSpace(sp)
	if len(owner.refused) != 0 {
		t.Errorf("a gone owner was told %q", owner.refused)
	}
}
