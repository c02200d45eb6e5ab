package handoff

import (
	"os"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// A pane herdr-pi opened can stay open for weeks, and its ledger record
// with it: without XDG_RUNTIME_DIR the ledger sits under /tmp, where
// age-based cleaners (systemd-tmpfiles' 10 days, tmpreaper, tmpwatch)
// remove a file nobody touched for that long. A record gone, `herdr-pi
// close` leaves the pane open, the run's next open makes a second
// workspace beside the first, and close no longer asks a handoff's wrapper
// to hand back. The ledger's directory is shared by every herdr-pi, so no
// one process can lock it against the cleaners as a wrapper locks its run
// directory; instead each record is kept young by the process whose life
// it follows, in that process's hourly freshening of its own run
// (control.RunConfig.Keep):
//
//   - an inspection's pane (or tab) record by the herdr-pi wrap in that
//     pane (PaneWrapperPID), whose end is the pane's end;
//   - a live handoff's record, and the note of one still pending, by the
//     wrapper that runs the handoff (WrapperPID);
//   - a workspace record by whichever of those lies in it.
//
// Whether the process is still the one a record names is told by the
// test close uses to call a wrapper gone (control.WrapperAlive): a record
// is never kept young past the end of its pane's wrapper, so the records
// of dead panes age for the cleaners, and close removes them, as before.

// KeptByThisProcess lists the ledger's files this process keeps young:
// the records and pending handoffs that name it as their wrapper, the
// workspace records those lie in, and the ledger's directory when any.
func (l Ledger) KeptByThisProcess() []string { return l.keptBy(os.Getpid()) }

func (l Ledger) keptBy(pid int) []string {
	var kept []string
	recs, _ := l.List()     // an unreadable record follows no one: it ages
	in := map[string]bool{} // socket + workspace of the records kept
	for _, r := range recs {
		if (r.WrapperPID == pid || r.PaneWrapperPID == pid) && control.WrapperAlive(r.RunDir, pid) {
			kept = append(kept, r.File)
			in[r.HerdrSocket+"\x00"+workspaceOf(r.ID)] = true
		}
	}
	for _, r := range recs {
		if r.Kind == "workspace" && in[r.HerdrSocket+"\x00"+r.ID] {
			kept = append(kept, r.File)
		}
	}
	pending, _ := l.Pendings()
	for _, p := range pending {
		if p.WrapperPID == pid && control.WrapperAlive(p.RunDir, pid) {
			kept = append(kept, p.File)
		}
	}
	if len(kept) > 0 {
		kept = append(kept, l.Dir)
	}
	return kept
}
