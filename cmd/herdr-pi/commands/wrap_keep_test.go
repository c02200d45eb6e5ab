package commands

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/live"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/settings"
)

// A wrapper left running for eleven days with its runtime base under /tmp
// (no XDG_RUNTIME_DIR), then the real systemd-tmpfiles' aging: the run
// config wrap starts its control run with (runConfigWith) has the run's
// hourly freshening keep, besides the run's own files, the ledger's
// record of the inspection open in its pane and its presence and question
// on the toast board — with and without a Pi's live handoff service. The
// ledger's and the board's own tests hand their Kept to a run directly;
// this one fails if wrap stops passing them on.
func TestWrapsFresheningKeepsItsLedgerRecordAndToastBoard(t *testing.T) {
	for _, pi := range []bool{false, true} {
		name := "wrap bash"
		if pi {
			name = "wrap pi, with live handoffs"
		}
		t.Run(name, func(t *testing.T) {
			short, err := os.MkdirTemp("/tmp", "hpw")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(short) })
			base := filepath.Join(short, "rt")
			paths := settings.Paths{RuntimeBase: base}
			h := settings.Herdr{SocketPath: "/tmp/h.sock", PaneID: "w2:p1"}
			ledger := handoff.LedgerAt(base)

			b, err := openBoard(paths, h)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Present("api"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			asked := b.Hold("api")

			var handoffs *live.Service
			if pi {
				handoffs = live.New(live.Config{Self: "/nonexistent/herdr-pi", RunBase: control.SocketBase(base), RuntimeBase: base,
					HerdrSocket: h.SocketPath, OwnerPane: h.PaneID, Ledger: ledger, Logf: t.Logf})
				t.Cleanup(handoffs.Close)
			}
			w := &silentWrapper{}
			rc := control.RunConfig{RuntimeBase: base, PaneID: h.PaneID, HerdrSocket: h.SocketPath, Events: w, Requests: w, Logf: t.Logf}
			run, err := control.Start(runConfigWith(rc, handoffs, wrapNotifier{board: b}.boardKept()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { run.Close() })

			// As open records an inspection it placed in this pane, in a
			// new tab of a new workspace: the tab's record names this
			// wrapper, the workspace's follows it.
			placed := handoff.Placed{PaneID: "w2:p1", TabID: "w2:t1", WorkspaceID: "w2", Created: []string{"workspace w2", "tab w2:t1"}}
			recs := placed.Records("r1", h.SocketPath)
			for i := range recs {
				if recs[i].Kind == "tab" {
					recs[i].PaneWrapperPID, recs[i].RunDir = os.Getpid(), run.Dir
				}
			}
			written, err := ledger.AddAll(recs)
			if err != nil {
				t.Fatal(err)
			}

			testenv.AgeAll(t, short, 11*24*time.Hour)
			run.Freshen() // the hourly pass
			testenv.SystemdTmpfilesClean(t, short, 10*24*time.Hour)

			for _, r := range written {
				if _, err := os.Lstat(r.File); err != nil {
					t.Errorf("the ledger's %s record %s is gone after the aging: %v", r.Kind, r.ID, err)
				}
			}
			if ws := ledger.Workspace("r1", h.SocketPath); ws != "w2" {
				t.Errorf("the run's next open finds workspace %q, want w2", ws)
			}
			other, err := openBoard(paths, settings.Herdr{SocketPath: h.SocketPath, PaneID: "w2:p2"})
			if err != nil {
				t.Fatal(err)
			}
			if got := other.Others(); !slices.Equal(got, []board.Held{{Entry: asked, Place: "api"}}) {
				t.Errorf("another wrapper sees %+v on the board after the aging, want this one's question", got)
			}
		})
	}
}
