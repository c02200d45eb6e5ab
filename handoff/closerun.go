package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Closed is one thing `herdr-pi close` closed (or found closed).
type Closed struct {
	// Kind is pane, tab, workspace or bridge; ID the Herdr id, or the
	// bridge's socket.
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// How: "closed"; "gone" (closed before, by someone else); "with
	// workspace w2" (closed with what held it); "left open: <why>" (its id
	// names a pane or workspace herdr-pi did not open now, see [Foreign]).
	// A bridge is "closed" by
	// the wrapper whose handoff it served, or its leftover files "removed"
	// when that wrapper was dead.
	How string `json:"how"`
}

// Failed is one thing `herdr-pi close` could not close, or could not tell
// was closed. Its record stays in the ledger (File), so the next close
// tries again.
type Failed struct {
	// Kind is pane, tab or workspace (Herdr did not close it); handoff
	// (its pane closed, but its wrapper did not hand the attempt back in
	// time; ID is the handoff's id); or record (a ledger record that
	// cannot be read or removed; ID is its file).
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Code names what went wrong, for scripts (a Fail constant;
	// docs/open.md).
	Code string `json:"code"`
	// Why says what went wrong and what to do.
	Why string `json:"why"`
	// File is the ledger record that still names it ("" for a record).
	File string `json:"record,omitempty"`
}

// What went wrong with something close could not close (Failed.Code).
const (
	FailHerdr         = "herdr"           // Herdr did not close it, or could not be reached
	FailNotHandedBack = "not_handed_back" // its pane closed, but its wrapper did not hand the attempt back in time
	FailNotGivenUp    = "not_given_up"    // a handoff not placed yet: its wrapper could not be asked to give it up, or did not in time
	FailLedger        = "ledger"          // a ledger record could not be read, removed or forgotten
)

func (f Failed) String() string {
	if f.Kind == "record" {
		return "ledger record " + f.ID + ": " + f.Why
	}
	return f.Kind + " " + f.ID + ": " + f.Why
}

// FailedError is a close that left things open or unknown.
type FailedError struct{ Failed []Failed }

func (e *FailedError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// CloseRun closes what records name, each once: workspaces first, then
// tabs and panes outside them (a workspace takes its tabs and panes along,
// and closing them again would close something else or fail). A record
// with a live handoff's wrapper is then waited for, up to wait: the
// wrapper sees its pane close, hands the attempt back, closes the bridge
// and removes the record. Records of dead wrappers have their leftover
// bridge files removed. Every record handled is removed from the ledger;
// the record of a thing Herdr did not close stays, for the next close,
// and the thing is in failed.
func CloseRun(ctx context.Context, ledger Ledger, herdrAt func(socket string) Herdr, records []Record, wait time.Duration) (out []Closed, failures []Failed) {
	type key struct{ socket, thing string }
	done := map[key]string{} // what was closed → how
	workspaces := map[string]string{}
	// terminals are those of the panes herdr-pi opened in each workspace
	// (its root pane's first): one still there tells it is ours.
	terminals := map[string][]string{}
	for _, r := range records {
		if r.Kind == "workspace" {
			workspaces[r.HerdrSocket+"\x00"+r.ID] = r.ID
			if r.Terminal != "" {
				terminals[r.HerdrSocket+"\x00"+r.ID] = append([]string{r.Terminal}, terminals[r.HerdrSocket+"\x00"+r.ID]...)
			}
		}
	}
	for _, r := range records {
		if k := r.HerdrSocket + "\x00" + workspaceOf(r.ID); r.Kind != "workspace" && r.Terminal != "" && len(terminals[k]) > 0 {
			terminals[k] = append(terminals[k], r.Terminal)
		}
	}
	order := func(kind string) int { return map[string]int{"workspace": 0, "tab": 1, "pane": 2}[kind] }
	sorted := append([]Record(nil), records...)
	// Stable: records keep their age within a kind.
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && order(sorted[j].Kind) < order(sorted[j-1].Kind); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	// failed are the things Herdr did not close: their records stay, so
	// a later close still knows of them.
	failed := map[key]bool{}
	for _, r := range sorted {
		k := key{r.HerdrSocket, r.Thing()}
		if _, seen := done[k]; seen || failed[k] {
			continue
		}
		how := "closed"
		ws, inWorkspace := workspaces[r.HerdrSocket+"\x00"+workspaceOf(r.ID)]
		if inWorkspace && r.Kind != "workspace" {
			// Only a workspace that did close took this along (workspaces
			// come first); one left open took nothing.
			wsHow, closed := done[key{r.HerdrSocket, "workspace " + ws}]
			inWorkspace = closed && !strings.HasPrefix(wsHow, "left open: ")
		}
		if inWorkspace && r.Kind != "workspace" {
			how = "with workspace " + ws
		} else if r.PaneWrapperPID > 0 && !control.WrapperAlive(r.RunDir, r.PaneWrapperPID) {
			// The inspection ended and its pane with it; whatever has the
			// id now is not ours to close.
			how = "gone"
		} else if why, gone := foreign(ctx, herdrAt(r.HerdrSocket), r, terminals[r.HerdrSocket+"\x00"+r.ID]); why != "" {
			how = "left open: " + why
		} else if gone {
			how = "gone"
		} else if err := closeThing(ctx, herdrAt(r.HerdrSocket), r.Kind, r.ID); err != nil {
			var he *herdr.Error
			if errors.As(err, &he) && strings.HasSuffix(he.Code, "_not_found") {
				how = "gone"
			} else {
				failures = append(failures, Failed{Kind: r.Kind, ID: r.ID, Code: FailHerdr, Why: "Herdr did not close it (" + err.Error() + "); its record stays: close again once Herdr answers", File: r.File})
				failed[k] = true
				continue
			}
		}
		done[k] = how
		out = append(out, Closed{Kind: r.Kind, ID: r.ID, How: how})
	}
	deadline := time.Now().Add(wait)
	for _, r := range records {
		if failed[key{r.HerdrSocket, r.Thing()}] {
			// Still open: no wrapper hands back a pane that did not close.
			continue
		}
		if _, err := os.Lstat(r.File); r.WrapperPID > 0 && errors.Is(err, fs.ErrNotExist) {
			// Its wrapper handed back before this looked (its run
			// directory went with the handoff): it removed the record and
			// closed the bridge itself. A killed wrapper removes nothing.
			if r.Bridge != "" {
				out = append(out, Closed{Kind: "bridge", ID: r.Bridge, How: "closed"})
			}
			continue
		}
		if r.WrapperPID > 0 && control.WrapperAlive(r.RunDir, r.WrapperPID) {
			if !waitGone(ctx, r.File, deadline) {
				id := r.Handoff
				if id == "" {
					id = r.Thing()
				}
				failures = append(failures, Failed{Kind: "handoff", ID: id, File: r.File, Code: FailNotHandedBack,
					Why: fmt.Sprintf("its wrapper (pid %d) did not hand the attempt back within %v after its %s closed", r.WrapperPID, wait, r.Thing())})
				continue
			}
			if r.Bridge != "" {
				out = append(out, Closed{Kind: "bridge", ID: r.Bridge, How: "closed"})
			}
			continue
		}
		if r.Bridge != "" {
			os.Remove(r.Bridge)
			os.Remove(strings.TrimSuffix(r.Bridge, ".sock") + ".mjs")
			out = append(out, Closed{Kind: "bridge", ID: r.Bridge, How: "removed"})
		}
		if err := ledger.Remove(r); err != nil {
			failures = append(failures, Failed{Kind: "record", ID: r.File, Code: FailLedger, Why: fmt.Sprintf("%s was closed, but its record could not be removed (%v): remove the file", r.Thing(), err)})
		}
	}
	return out, failures
}

// foreign is ForeignOrGone for r; a workspace is told by any of the
// terminals herdr-pi opened in it.
func foreign(ctx context.Context, h Herdr, r Record, terminals []string) (why string, gone bool) {
	if r.Kind == "workspace" {
		return ForeignWorkspace(ctx, h, r.ID, r.Pane, terminals), false
	}
	return ForeignOrGone(ctx, h, r.Kind, r.ID, r.Pane, r.Terminal)
}

func closeThing(ctx context.Context, h Herdr, kind, id string) error {
	switch kind {
	case "workspace":
		return h.WorkspaceClose(ctx, id)
	case "tab":
		return h.TabClose(ctx, id)
	}
	return h.PaneClose(ctx, id)
}

// waitGone waits until file no longer exists, or the deadline.
func waitGone(ctx context.Context, file string, deadline time.Time) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
