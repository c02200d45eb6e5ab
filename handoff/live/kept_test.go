package live

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A fully inspectable run rests 11 days between two turns (its owner
// waits on a person), with its workspace open and its ledger under /tmp:
// systemd-tmpfiles' aging leaves the workspace's record, which nothing
// but the owner's wrapper follows then (no turn runs in it), so herdr-pi
// close and the run's opens still find the workspace.
func TestSystemdTmpfilesAgingSparesTheWorkspaceOfARunBetweenTurns(t *testing.T) {
	r := newRig(t)
	r.o.launch.TUIIndex = 1
	_, w := r.turn("r1", "s1")
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
	r.waitFor("the turn's handback", func() bool { return len(r.o.handbacksSoFar()) == 1 })
	ledger := r.svc.cfg.Ledger
	var kinds []string
	r.waitFor("the turn's record to go", func() bool {
		recs, _ := ledger.List()
		kinds = kinds[:0]
		for _, rec := range recs {
			kinds = append(kinds, rec.Kind)
		}
		return strings.Join(kinds, " ") == "workspace"
	})
	ws := ledger.Workspace("r1", r.s.SocketPath())
	if ws == "" {
		t.Fatal("no workspace in the ledger after the turn")
	}

	testenv.AgeAll(t, r.runtime, 11*24*time.Hour)
	r.own.Freshen() // the owner's wrapper's hourly pass
	testenv.SystemdTmpfilesClean(t, r.runtime, 10*24*time.Hour)

	if got := ledger.Workspace("r1", r.s.SocketPath()); got != ws {
		t.Fatalf("after 11 days and systemd-tmpfiles' aging the ledger names workspace %q for run r1, want %s", got, ws)
	}
}
