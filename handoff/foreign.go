package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// Foreign says why the pane, tab or workspace id names something
// herdr-pi did not open, or "" when it is still what herdr-pi opened or
// that cannot be told. pane is the pane herdr-pi opened (in the tab, for
// a tab; the workspace's root pane, for a workspace) and terminal its
// terminal_id then. A restarted Herdr has new terminals
// (herdr-socket-api.md §4.4: a pane's terminal_id is its terminal's; §9.2:
// no process survives a restart), and one started afresh counts its ids
// from the start again, so the id kept since may name another person's
// pane, which must not be closed for ours ([restarted]). A Herdr
// that cannot answer leaves the close as it was: closing then fails the
// same way.
func Foreign(ctx context.Context, h Herdr, kind, id, pane, terminal string) string {
	why, _ := ForeignOrGone(ctx, h, kind, id, pane, terminal)
	return why
}

// ForeignOrGone is Foreign, and also says when the pane herdr-pi opened
// (kind "pane") is gone: then there is nothing to close, and a close sent
// all the same could meet a pane a Herdr started afresh has given that id
// since the look (the person's first split, say), so the caller sends
// none.
func ForeignOrGone(ctx context.Context, h Herdr, kind, id, pane, terminal string) (why string, gone bool) {
	if pane == "" || terminal == "" {
		return "", false // a record from before herdr-pi kept the terminal
	}
	if kind == "workspace" {
		return ForeignWorkspace(ctx, h, id, pane, []string{terminal}), false
	}
	if kind != "pane" && kind != "tab" {
		return "", false
	}
	info, err := h.PaneGet(ctx, pane)
	var he *herdr.Error
	switch {
	case errors.As(err, &he) && strings.HasSuffix(he.Code, "_not_found"):
		if kind == "tab" {
			return fmt.Sprintf("the pane herdr-pi opened in it (%s) is gone, so whatever the tab holds now is not herdr-pi's", pane), false
		}
		return "", pane == id
	case err != nil:
		return "", false
	case info.TerminalID != terminal:
		what := "pane " + pane
		if kind == "tab" {
			what = "the pane herdr-pi opened in it (" + pane + ")"
		}
		return restarted(what, info.TerminalID, terminal, kind, id), false
	case kind == "tab" && info.TabID != id:
		return fmt.Sprintf("the pane herdr-pi opened in it (%s) is in tab %s now", pane, info.TabID), false
	}
	return "", false
}

// ForeignWorkspace is Foreign for workspace id: WorkspaceInfo has nothing
// a fresh Herdr could not give a namesake (its number and label come
// again), so the workspace is told by its panes. terminals are those of
// panes herdr-pi opened in it, the root pane (pane) first: one of them
// still there makes it ours. With none there, the workspace holds only
// what someone else opened (its root pane closed by the person, say), and
// closing it would close that: it is left, as a tab whose pane went is.
func ForeignWorkspace(ctx context.Context, h Herdr, id, pane string, terminals []string) string {
	if len(terminals) == 0 {
		return "" // a record from before herdr-pi kept the terminal
	}
	panes, err := h.PaneList(ctx, id)
	if err != nil {
		// workspace_not_found: close says it is gone; anything else
		// fails the close the same way.
		return ""
	}
	for _, pn := range panes {
		if slices.Contains(terminals, pn.TerminalID) {
			return ""
		}
	}
	for _, pn := range panes {
		if pn.PaneID == pane {
			return restarted("its first pane "+pane, pn.TerminalID, terminals[0], "workspace", id)
		}
	}
	return fmt.Sprintf("no pane herdr-pi opened in it is there any more (its first, %s, is gone), so what it holds now is not herdr-pi's", pane)
}

// restarted says why a kind id whose pane (what) is another terminal now
// is left open. Herdr has restarted since herdr-pi opened it: a usual
// restart restores the layout, ids and labels and all, with a new shell in
// each pane (herdr-socket-api.md §9.2), so it may well be the run's; a
// Herdr started afresh counts its ids from the start again and may have
// given this one to the person. Nothing Herdr says tells the two apart,
// so herdr-pi leaves it, and says how to close it should it be the run's.
func restarted(what, now, was, kind, id string) string {
	return fmt.Sprintf("%s is another terminal now (%s, not %s): %s, "+
		"and either restored it with a new shell (it is the run's then) or gave its id to something herdr-pi did not open; "+
		"herdr-pi cannot tell which, so it leaves it. If it is the run's, close it with: %s",
		what, now, was, restartedSince, CloseCommand(kind, id))
}

// restartedSince is the part of Foreign's answer that says Herdr
// restarted since herdr-pi opened the thing (see Restarted).
const restartedSince = "Herdr has restarted since herdr-pi opened it"

// Restarted says whether why, an answer of Foreign, leaves the thing open
// because Herdr restarted since herdr-pi opened it: it may be the run's,
// restored, and the person should hear how to close it.
func Restarted(why string) bool { return strings.Contains(why, restartedSince) }

// CloseCommand is the Herdr command that closes kind id, as a person
// pastes it into any shell.
func CloseCommand(kind, id string) string {
	return "herdr " + kind + " close " + shellword.Word(id)
}
