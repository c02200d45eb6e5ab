package handoff

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// A fresh placement (a live handoff's) opens its own tab even where the
// attempt's tab is open already; and a run whose known workspace is gone
// gets a new one rather than another run's of the same label (every run
// of a workflow is labelled alike).
func TestWorkspacePlacementFreshAndGoneWorkspace(t *testing.T) {
	s := herdrtest.Start(t)
	o := opener(t, s)
	place := Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer", Cwd: "/repo"}
	first, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place)
	if err != nil {
		t.Fatal(err)
	}

	s.ClearRecords()
	fresh := place
	fresh.WorkspaceID, fresh.Fresh = first.WorkspaceID, true
	again, err := o.Open(t.Context(), o.InspectLaunch(inspection()), fresh)
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.list tab.list tab.create pane.send_input" ||
		again.Reused || again.WorkspaceID != first.WorkspaceID || again.TabID == first.TabID {
		t.Fatalf("fresh open beside the attempt's tab: %q %+v (first %+v)", m, again, first)
	}

	s.ClearRecords()
	gone := place
	gone.WorkspaceID, gone.Dedicated = "w404", true
	other, err := o.Open(t.Context(), o.InspectLaunch(inspection()), gone)
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.list workspace.create tab.rename tab.create pane.send_input" ||
		other.WorkspaceID == first.WorkspaceID || other.Reused {
		t.Fatalf("a gone workspace id found %q by its label: %q %+v", first.WorkspaceID, m, other)
	}
}

// Labels and titles come from the workflow store (a workflow's or an
// agent's name) and Herdr draws them in its sidebar, a terminal: what
// reaches it is cleaned (no escape sequence, no bidi override), and a run's
// workspace is found again by its cleaned label.
func TestPlacementCleansWhatHerdrDraws(t *testing.T) {
	s := herdrtest.Start(t)
	o := opener(t, s)
	place := Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow re\x1b]0;pwn\x07view",
		TabLabel: "#1 revi\u202eewer", Cwd: "/repo"}
	place.Label("re\x1b[2Jview", "3f0c", "revi\u202eewer", 1, 1, true)
	first, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Requests() {
		if strings.ContainsAny(string(r.Params), "\u202e") || strings.Contains(string(r.Params), `\u001b`) {
			t.Errorf("%s sent %s", r.Method, r.Params)
		}
	}
	s.ClearRecords()
	place.TabLabel = "#2 other"
	again, err := o.Open(t.Context(), o.InspectLaunch(inspection()), place)
	if err != nil {
		t.Fatal(err)
	}
	if again.WorkspaceID != first.WorkspaceID {
		t.Fatalf("the run's workspace %s was not found again by its label: opened %s (%q)", first.WorkspaceID, again.WorkspaceID, s.Methods())
	}
}

// A placement cancelled halfway (open's Ctrl-C, a handoff given up, the
// owner's wrapper quitting) still closes what it had made: the undo is
// not sent on the cancelled context, where it could never reach Herdr and
// would leave the new workspace behind, unrecorded.
func TestAPlacementCancelledHalfwayClosesWhatItMade(t *testing.T) {
	s := herdrtest.Start(t)
	o := opener(t, s)
	// tab.create never answers: the placement is cancelled while it waits.
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"tab.create"}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for !slices.Contains(s.Methods(), "tab.create") {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	place := Placement{Mode: ModeWorkspace, CallerPane: s.PaneID(), WorkspaceLabel: "workflow review", TabLabel: "#1 reviewer", Cwd: "/repo", Dedicated: true}
	if _, err := o.Open(ctx, o.InspectLaunch(inspection()), place); err == nil {
		t.Fatal("a cancelled placement succeeded")
	}
	if m := s.Methods(); !slices.Contains(m, "workspace.close") {
		t.Fatalf("calls %q: the workspace made before the cancel was never closed", m)
	}
}
