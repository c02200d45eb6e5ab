package handoff

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Once the pane's wrapper is gone, Herdr decides how the pane ended: one
// that does not answer went away with its panes (closed, at once); one
// that answers gets the grace for its events to tell, then its read-back
// does.
func TestEndedAfterWrapper(t *testing.T) {
	gone := &herdr.TransportError{Kind: herdr.FailNoSocket, Socket: "/h.sock", Method: "pane.get"}
	notFound := &herdr.Error{Code: "pane_not_found", Message: "no pane"}
	for _, c := range []struct {
		name        string
		before      error // what pane.get answers at first
		after       error // and after the grace
		eventsFirst bool  // Herdr's events end the watch within the grace
		want        Ended
		ok          bool
	}{
		{"Herdr gone", gone, gone, false, PaneClosed, true},
		{"the events tell", nil, nil, true, "", false},
		{"the pane is still there", nil, nil, false, PaneExited, true},
		{"the pane is gone", nil, notFound, false, PaneClosed, true},
		{"Herdr went away meanwhile", nil, gone, false, PaneClosed, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				asked := 0
				look := func(context.Context, string) (herdr.PaneInfo, error) {
					asked++
					if asked == 1 {
						return herdr.PaneInfo{}, c.before
					}
					return herdr.PaneInfo{}, c.after
				}
				watched := make(chan struct{})
				if c.eventsFirst {
					close(watched)
				}
				how, ok := EndedAfterWrapper(t.Context(), look, "w1:p2", watched, WrapperEndGrace)
				if how != c.want || ok != c.ok {
					t.Fatalf("got %q %v, want %q %v", how, ok, c.want, c.ok)
				}
			})
		})
	}
}
