package handoff

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// A placement given up while Herdr is still making its pane (herdr-pi
// close giving a live handoff up as its pane was being split) closes that
// pane once Herdr has made it. Cut off, the request lost Herdr's answer,
// the pane's id, and the pane stayed open with nothing to close it.
func TestAPlacementGivenUpWhileHerdrMakesItsPaneClosesIt(t *testing.T) {
	for _, mode := range []Mode{ModeSplit, ModeTab, ModeWorkspace} {
		t.Run(string(mode), func(t *testing.T) {
			s := herdrtest.Start(t)
			creates := []string{"pane.split", "tab.create", "workspace.create"}
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 3 * time.Second, Methods: creates, Count: 1})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				// Given up once Herdr has the request, before it answers.
				s.Await(10*time.Second, func() bool {
					return slices.ContainsFunc(s.Requests(), func(r herdrtest.Request) bool { return slices.Contains(creates, r.Method) })
				})
				cancel()
			}()
			_, err := Place(ctx, herdr.NewClient(s.SocketPath()), Placement{Mode: mode, CallerPane: s.PaneID(), Direction: "right",
				WorkspaceLabel: "run", TabLabel: "agent", Fresh: true})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("placement given up: %v, want the cancel", err)
			}
			made := ""
			for _, r := range s.Requests() {
				if slices.Contains(creates, r.Method) {
					if r.Reply == "" || r.Lost {
						t.Fatalf("%s: answer %q (lost %v): the request was cut off", r.Method, r.Reply, r.Lost)
					}
					made = r.Method
				}
			}
			closes := map[string]string{"pane.split": "pane.close", "tab.create": "tab.close", "workspace.create": "workspace.close"}
			if !slices.Contains(s.Methods(), closes[made]) {
				t.Fatalf("%s was answered but nothing closed what it made: %q", made, s.Methods())
			}
		})
	}
}
