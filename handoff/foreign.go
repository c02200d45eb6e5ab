package handoff

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// Foreign says why the pane or tab id names something herdr-pi did not
// open, or "" when it is still what herdr-pi opened or that cannot be
// told. pane is the pane herdr-pi opened (in the tab, for a tab) and
// terminal its terminal_id then. A Herdr started afresh counts its ids
// from the start again (herdr-socket-api.md §4.4: a pane's terminal_id is
// its terminal's, which a new Herdr does not have), so the id kept since
// may name another person's pane, which must not be closed for ours. A
// Herdr that cannot answer leaves the close as it was: closing then
// fails the same way.
func Foreign(ctx context.Context, h Herdr, kind, id, pane, terminal string) string {
	if pane == "" || terminal == "" || (kind != "pane" && kind != "tab") {
		return "" // a record from before herdr-pi kept the terminal
	}
	info, err := h.PaneGet(ctx, pane)
	var he *herdr.Error
	switch {
	case errors.As(err, &he) && strings.HasSuffix(he.Code, "_not_found"):
		if kind == "tab" {
			return fmt.Sprintf("the pane herdr-pi opened in it (%s) is gone, so whatever the tab holds now is not herdr-pi's", pane)
		}
		return ""
	case err != nil:
		return ""
	case info.TerminalID != terminal:
		what := "pane " + pane
		if kind == "tab" {
			what = "the pane herdr-pi opened in it (" + pane + ")"
		}
		return fmt.Sprintf("%s is another terminal now (%s, not %s): Herdr was started afresh and gave the id to a pane herdr-pi did not open", what, info.TerminalID, terminal)
	case kind == "tab" && info.TabID != id:
		return fmt.Sprintf("the pane herdr-pi opened in it (%s) is in tab %s now", pane, info.TabID)
	}
	return ""
}
