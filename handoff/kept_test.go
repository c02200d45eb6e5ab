package handoff

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// paneWrapper answers the control socket of the wrapper a test starts.
type paneWrapper struct{}

func (paneWrapper) ProbeEvent(control.Event)       {}
func (paneWrapper) Wait(control.WaitRequest) error { return nil }
func (paneWrapper) Status() control.Status         { return control.Status{State: "idle"} }

// recordFiles are the ledger's record and pending files, by name.
func recordFiles(t *testing.T, l Ledger) []string {
	t.Helper()
	var names []string
	for _, pattern := range []string{"rec-*.json", "pending-*.json"} {
		m, _ := filepath.Glob(filepath.Join(l.Dir, pattern))
		for _, f := range m {
			names = append(names, filepath.Base(f))
		}
	}
	sort.Strings(names)
	return names
}

// A pane herdr-pi opened stays open 11 days with no XDG_RUNTIME_DIR, so
// its ledger sits under /tmp, and systemd-tmpfiles ages /tmp: the records
// of what the pane's wrapper (and the wrapper of a live handoff) holds
// open stay, so close and the run's next open still find them — the
// workspace among them — while the record of a pane whose wrapper has
// ended (its pid now ours, its run directory gone) is not kept young by
// anyone and goes, as it would have without herdr-pi's freshening.
func TestSystemdTmpfilesAgingSparesTheRecordsOfAnOpenPane(t *testing.T) {
	short, err := os.MkdirTemp("/tmp", "hpk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	base := filepath.Join(short, "rt")
	const sock = "/tmp/h.sock"
	ledger := LedgerAt(base)
	// The inspection's pane: herdr-pi wrap in pane w2:p1 (tab w2:t1 of
	// the run's workspace w2), keeping what the wrap command keeps.
	run, err := control.Start(control.RunConfig{RuntimeBase: base, PaneID: "w2:p1", HerdrSocket: sock,
		Events: paneWrapper{}, Requests: paneWrapper{}, Keep: ledger.KeptByThisProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	// As open records an inspection it placed in a new workspace.
	placed := Placed{PaneID: "w2:p1", TabID: "w2:t1", WorkspaceID: "w2", Created: []string{"workspace w2", "tab w2:t1"}}
	recs := placed.Records("r1", sock)
	recs[1].PaneWrapperPID, recs[1].RunDir = os.Getpid(), run.Dir
	// A live handoff this wrapper runs elsewhere, its run directory held,
	// and one it has ordered and not placed yet.
	handoffDir, err := control.NewRunDir(control.SocketBase(base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { handoffDir.Remove() })
	recs = append(recs, Record{Run: "r2", Kind: "pane", ID: "w1:p5", HerdrSocket: sock, WrapperPID: os.Getpid(), RunDir: handoffDir.Path, Handoff: "h1"})
	// A pane whose wrapper has ended: its pid is ours now, its run
	// directory is gone.
	dead := Record{Run: "r3", Kind: "pane", ID: "w3:p1", HerdrSocket: sock, PaneWrapperPID: os.Getpid(), RunDir: filepath.Join(control.SocketBase(base), "run-1-gone")}
	recs = append(recs, dead)
	written, err := ledger.AddAll(recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.AddPending(Pending{Run: "r4", Handoff: "h2", WrapperPID: os.Getpid(), RunDir: run.Dir}); err != nil {
		t.Fatal(err)
	}
	all := recordFiles(t, ledger)
	deadName := filepath.Base(written[len(written)-1].File)
	var want []string
	for _, n := range all {
		if n != deadName {
			want = append(want, n)
		}
	}

	testenv.AgeAll(t, base, 11*24*time.Hour)
	run.Freshen() // the wrapper's hourly pass
	testenv.SystemdTmpfilesClean(t, short, 10*24*time.Hour)

	if got := recordFiles(t, ledger); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after 11 days and systemd-tmpfiles' aging the ledger holds\n  %s\nwant (all but the dead pane's record %s)\n  %s", strings.Join(got, "\n  "), deadName, strings.Join(want, "\n  "))
	}
	if ws := ledger.Workspace("r1", sock); ws != "w2" {
		t.Fatalf("the run's next open finds workspace %q, want w2", ws)
	}
}
