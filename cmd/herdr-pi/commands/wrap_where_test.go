package commands

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Where a pane is, as a toast says it, comes from pane.get and tab.list,
// which both protocols the fake speaks (20, and Herdr 0.9's 22) have: the
// tab's own label when it was given one, else its number. A pane Herdr no
// longer knows, or a Herdr that does not answer, gives nothing, and no
// later than the caller's deadline: the toast goes without it.
func TestPaneWhereInBothProtocols(t *testing.T) {
	for _, proto := range []int{20, herdrtest.Protocol22} {
		t.Run("protocol"+strconv.Itoa(proto), func(t *testing.T) {
			s := herdrtest.Start(t, herdrtest.Options{Protocol: proto})
			c := herdr.NewClient(s.SocketPath())
			ctx := context.Background()
			tab, root, err := c.TabCreate(ctx, "w1", herdr.NewPlace{})
			if err != nil {
				t.Fatal(err)
			}
			if got := paneWhere(c, root.PaneID)(ctx); got != "tab 2" {
				t.Fatalf("the second tab's pane: %q, want %q", got, "tab 2")
			}
			if got := paneWhere(c, s.PaneID())(ctx); got != "tab 1" {
				t.Fatalf("the first tab's pane: %q, want %q", got, "tab 1")
			}
			if _, err := c.TabRename(ctx, tab.TabID, "review"); err != nil {
				t.Fatal(err)
			}
			if got := paneWhere(c, root.PaneID)(ctx); got != "tab review" {
				t.Fatalf("a labelled tab's pane: %q, want %q", got, "tab review")
			}
			if got := paneWhere(c, "w9:p9")(ctx); got != "" {
				t.Fatalf("a pane Herdr does not know: %q", got)
			}
			s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"pane.get"}})
			dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if got := paneWhere(c, root.PaneID)(dctx); got != "" {
				t.Fatalf("a Herdr that does not answer: %q", got)
			}
			if v := s.FatalViolations(); len(v) > 0 {
				t.Fatalf("outside Herdr's contract: %q", v)
			}
		})
	}
}
