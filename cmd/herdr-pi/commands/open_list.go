package commands

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// openListRun is `open --list [<run>]`.
func openListRun(f *Factory, st *store.Store, opts *openOptions) error {
	listing, err := handoff.List(st, f.Paths(), opts.Run)
	if err != nil {
		return openError(err)
	}
	if opts.JSON {
		return writeJSON(f.IO.Out, listing)
	}
	if others := listing.PrefixAlsoMatches; len(others) > 0 {
		taken := &listing.Runs[0]
		tell(f.IO.Err, "herdr-pi open: %s\n", prefixNote(f.Paths(), opts.Run, taken.Ref, taken.Workflow, others))
	}
	l := lookFor(f.IO)
	var out string
	switch {
	case opts.Run != "":
		out = render.RunDetail(listing, &listing.Runs[0], l)
	case len(listing.Runs) == 0:
		out = l.Hang(fmt.Sprintf("No workflow runs under %s yet: the workflow engine keeps them there once a Pi session runs a workflow.",
			listing.Paths.Pretty(listing.Store)), 0) + "\n"
	default:
		out = render.RunTable(listing, l)
	}
	_, err = io.WriteString(f.IO.Out, out)
	tellUnreadable(f, listing)
	return err
}

// tellUnreadable says, one line each on stderr, which of the store's
// directories a listing could not look into: their runs are missing from
// it, and a shorter list without a word would look complete.
func tellUnreadable(f *Factory, listing *handoff.Listing) {
	for _, u := range listing.Unreadable {
		tell(f.IO.Err, "herdr-pi open: the runs in %s are not listed: %s\n", listing.Paths.Pretty(u.Path), u.Problem)
	}
}

// openPick asks the person, on a terminal, which attempt to open: the
// runs most recent first, a heading each, their attempts under it.
// Cancelling exits 130 after saying so, as fzf does: a script running
// `herdr-pi open && …` must not go on as if something had opened.
func openPick(ctx context.Context, f *Factory, st *store.Store) (run, attempt string, err error) {
	if tty, _, _ := f.IO.stdoutTerminal(); !tty {
		return "", "", usagef("open", "name a run and an attempt (herdr-pi open --list shows them)")
	}
	listing, err := handoff.List(st, f.Paths(), "")
	if err != nil {
		return "", "", openError(err)
	}
	if len(listing.Runs) == 0 {
		return "", "", fmt.Errorf("nothing to open: no workflow runs under %s yet", listing.Paths.Pretty(listing.Store))
	}
	tellUnreadable(f, listing)
	groups, picks := pickerGroups(listing)
	if len(picks) == 0 {
		return "", "", fmt.Errorf("no attempt can be opened yet; herdr-pi open --list shows why")
	}
	choice, err := picker.Run(ctx, picker.Options{
		In: f.IO.In, Out: f.IO.Out, Env: f.IO.Env, Color: f.IO.color(), Groups: groups,
		Title: fmt.Sprintf("Open a workflow attempt (%s in %s, most recent first)", render.Plural(len(listing.Runs), "run"), listing.Paths.Pretty(listing.Store)),
	})
	if errors.Is(err, picker.ErrCancelled) {
		tell(f.IO.Err, "herdr-pi open: cancelled; nothing opened\n")
		return "", "", silentExit(exitInterrupted)
	}
	if err != nil {
		return "", "", err
	}
	p := picks[choice]
	return p.run, p.selector, nil
}

type pick struct{ run, selector string }

// pickerGroups makes a group per run and an item per attempt, columns
// aligned across the whole list. Attempts open cannot open are shown
// but cannot be chosen.
func pickerGroups(o *handoff.Listing) ([]picker.Group, map[picker.Choice]pick) {
	var headW [4]int
	var itemW [3]int
	for i := range o.Runs {
		r := &o.Runs[i]
		for k, s := range []string{render.Clean(r.Ref), render.Clean(r.Workflow), render.RunState(r), render.AgeOf(o.Now, r.UpdatedAt)} {
			headW[k] = max(headW[k], ansi.StringWidth(s))
		}
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				for k, s := range []string{render.Clean(at.Name), render.Clean(at.State), render.Clean(at.Model)} {
					itemW[k] = max(itemW[k], ansi.StringWidth(s))
				}
			}
		}
	}
	groups := make([]picker.Group, len(o.Runs))
	picks := map[picker.Choice]pick{}
	for i := range o.Runs {
		r := &o.Runs[i]
		title := fmt.Sprintf("%s  %s  %s  %s  %s", render.Pad(render.Clean(r.Ref), headW[0]), render.Pad(render.Clean(r.Workflow), headW[1]),
			render.Pad(render.RunState(r), headW[2]), render.Pad(render.AgeOf(o.Now, r.UpdatedAt), headW[3]), render.ProjectName(o, r))
		if r.Problem != "" {
			title += "  " + render.Clean(r.Note)
		}
		groups[i].Title = title
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				text := fmt.Sprintf("%s  %s  %s  %s", render.Pad(render.Clean(at.Name), itemW[0]), render.Pad(render.Clean(at.State), itemW[1]),
					render.Pad(render.Clean(at.Model), itemW[2]), at.Action)
				it := picker.Item{Text: text, Hint: pickHint(&at)}
				if at.Action == handoff.ActionNone {
					it.Disabled = true
					it.Text += ": " + render.Clean(at.Note)
				} else {
					picks[picker.Choice{Group: i, Item: len(groups[i].Items)}] = pick{run: r.ID, selector: at.Selector}
				}
				groups[i].Items = append(groups[i].Items, it)
			}
		}
	}
	return groups, picks
}

func pickHint(at *handoff.ListedAttempt) string {
	switch at.Action {
	case handoff.ActionLive:
		return "live: a running Pi owns it; open hands it off to a pane and back (when that Pi runs under herdr-pi wrap); --inspect forks what is there so far"
	case handoff.ActionGone:
		return "gone: its owner Pi ended before the attempt did; opens a fork of what it left"
	}
	return "opens a read-only fork of its session"
}
