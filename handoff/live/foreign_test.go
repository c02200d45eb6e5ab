package live

import (
	"context"
	"fmt"
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
			if !strings.Contains(said, "leaving ") || !strings.Contains(said, "Herdr was started afresh") {
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
