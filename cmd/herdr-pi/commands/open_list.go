package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

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
	l := lookFor(f.IO)
	var out string
	switch {
	case opts.Run != "":
		out = renderRunDetail(listing, &listing.Runs[0], l)
	case len(listing.Runs) == 0:
		out = l.Hang(fmt.Sprintf("No workflow runs under %s yet: the workflow engine keeps them there once a Pi session runs a workflow.",
			listing.Paths.Pretty(listing.Store)), 0) + "\n"
	default:
		out = renderRunTable(listing, l)
	}
	_, err = io.WriteString(f.IO.Out, out)
	return err
}

// projectName is the run's project as a person knows it: its directory
// (home as ~), else the storage key without its hash.
func projectName(o *handoff.Listing, r *handoff.ListedRun) string {
	name := ""
	if r.Cwd != "" {
		name = o.Paths.Pretty(r.Cwd)
	} else {
		name = projectHash.ReplaceAllString(r.Project, "")
	}
	if r.Here {
		name += " (here)"
	}
	return clean(name)
}

// projectHash is the "-<12 hex digits>" a project key ends with.
var projectHash = regexp.MustCompile(`-[0-9a-f]{12}$`)

// drawRunState is the run's state, or why it has none.
func runState(r *handoff.ListedRun) string {
	switch {
	case r.Problem != "":
		return "unreadable"
	case r.State == "":
		return "unknown"
	}
	return clean(r.State)
}

// drawAttemptTag is an attempt as the runs table shows it: name#n, with the
// drawAction when it is not a plain open.
func drawAttemptTag(l look, at *handoff.ListedAttempt) string {
	name := clean(at.Name)
	// On a terminal, where cells wrap, a no-break space keeps the action
	// with its attempt; elsewhere a plain one keeps the output greppable.
	sp := " "
	if l.Width > 0 {
		sp = "\u00a0"
	}
	switch at.Action {
	case handoff.ActionLive:
		return l.Render(l.Warn, name+sp+"(live)")
	case handoff.ActionGone:
		return name + sp + "(gone)"
	case handoff.ActionNone:
		return l.Render(l.Faint, name+sp+"(none)")
	}
	return name
}

// renderRunTable is `open --list`: a run a row, most recent first, with
// its attempts. On a terminal the table fits the width (the widest cells
// wrap); elsewhere a row stays one line, for grep.
func renderRunTable(o *handoff.Listing, l look) string {
	rows := make([][]string, 0, len(o.Runs))
	for i := range o.Runs {
		r := &o.Runs[i]
		var attempts []string
		for _, ag := range r.Agents {
			for j := range ag.Attempts {
				attempts = append(attempts, drawAttemptTag(l, &ag.Attempts[j]))
			}
		}
		cell := strings.Join(attempts, " ")
		switch {
		case r.Problem != "":
			cell = l.Render(l.Fail, clean(r.Note))
		case cell == "":
			cell = l.Render(l.Faint, "no attempt yet")
		}
		rows = append(rows, []string{clean(r.Short), clean(r.Workflow), drawRunState(l, r), ageOf(o.Now, r.UpdatedAt),
			projectName(o, r), cell})
	}
	var b strings.Builder
	b.WriteString(l.Table([]render.Column{{Header: "RUN"}, {Header: "WORKFLOW"}, {Header: "STATE"}, {Header: "UPDATED"},
		{Header: "PROJECT", Flex: true, Spare: true}, {Header: "ATTEMPTS", Flex: true}}, rows))
	b.WriteString("\n" + l.Hang(fmt.Sprintf("%s in %s, most recent first. herdr-pi open --list <run> shows what open can do with each attempt.",
		plural(len(o.Runs), "run"), o.Paths.Pretty(o.Store)), 0) + "\n")
	return b.String()
}

// renderRunDetail is `open --list <run>`: the run, then every attempt of
// its agents with what open can do with it.
func renderRunDetail(o *handoff.Listing, r *handoff.ListedRun, l look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", render.Pad(l.Render(l.Bold, label), 8), l.Hang(value, 10))
	}
	line("run", clean(r.ID))
	line("workflow", clean(r.Workflow))
	line("state", fmt.Sprintf("%s, updated %s", drawRunState(l, r), ageOf(o.Now, r.UpdatedAt)))
	line("project", projectName(o, r))
	line("owner", ownerLine(r, l))
	if r.Error != nil {
		line("error", clean(strings.TrimPrefix(r.Error.Code+": "+r.Error.Message, ": ")))
	}
	var rows [][]string
	seen := map[string]bool{}
	for _, ag := range r.Agents {
		if len(ag.Attempts) == 0 {
			rows = append(rows, []string{clean(ag.Name), clean(ag.State), "", "", l.Render(l.Faint, handoff.ActionNone), "no attempt yet"})
		}
		for j := range ag.Attempts {
			at := &ag.Attempts[j]
			seen[at.Action] = true
			rows = append(rows, []string{clean(at.Name), clean(at.State), clean(at.Model), statusOf(at), drawAction(l, at.Action), clean(at.Note)})
		}
	}
	if len(rows) == 0 {
		b.WriteString("\nNo agent has started in this run yet.\n")
		return b.String()
	}
	b.WriteString("\n" + l.Table([]render.Column{{Header: "ATTEMPT"}, {Header: "STATE"}, {Header: "MODEL", Flex: true, Spare: true},
		{Header: "STATUS"}, {Header: "ACTION"}, {Header: "NOTE", Flex: true}}, rows) + "\n")
	// Each action once, with a command for its first attempt.
	example := map[string]string{}
	for _, ag := range r.Agents {
		for _, at := range ag.Attempts {
			if _, ok := example[at.Action]; !ok {
				example[at.Action] = clean(r.Short + " " + at.Selector)
			}
		}
	}
	for _, act := range []string{handoff.ActionOpen, handoff.ActionGone, handoff.ActionLive, handoff.ActionNone} {
		if !seen[act] {
			continue
		}
		var text string
		switch act {
		case handoff.ActionOpen:
			text = "herdr-pi open " + example[act] + " opens a read-only fork of it in a new pane"
		case handoff.ActionGone:
			text = "its owner Pi was killed mid-attempt; herdr-pi open " + example[act] + " forks what it left"
		case handoff.ActionLive:
			text = "a running Pi owns it: open refuses it, herdr-pi open --inspect " + example[act] + " forks what is there so far"
		case handoff.ActionNone:
			text = "nothing to open (NOTE says why)"
		}
		fmt.Fprintf(&b, "%s  %s\n", render.Pad(drawAction(l, act), 4), l.Hang(text, 6))
	}
	return b.String()
}

func drawRunState(l look, r *handoff.ListedRun) string {
	s := runState(r)
	if s == "unreadable" {
		return l.Render(l.Fail, s)
	}
	return s
}

func drawAction(l look, a string) string {
	switch a {
	case handoff.ActionOpen:
		return l.Render(l.OK, a)
	case handoff.ActionLive:
		return l.Render(l.Warn, a)
	case handoff.ActionNone:
		return l.Render(l.Faint, a)
	}
	return a
}

// statusOf says whether anything still runs in the attempt.
func statusOf(at *handoff.ListedAttempt) string {
	switch {
	case at.Settled:
		return "settled"
	case at.Live:
		return fmt.Sprintf("live (pid %d)", at.OwnerPID)
	case at.OwnerGone && at.OwnerPID > 0:
		return fmt.Sprintf("owner gone (pid %d)", at.OwnerPID)
	case at.OwnerGone:
		return "owner gone"
	}
	return "unknown"
}

func ownerLine(r *handoff.ListedRun, l look) string {
	switch {
	case r.Owner == nil:
		return "none: the Pi session that ran it has exited"
	case r.Owner.Problem != "":
		return l.Render(l.Fail, clean(r.Owner.Problem))
	case r.Owner.Alive:
		return fmt.Sprintf("pid %d, running", r.Owner.PID)
	}
	return fmt.Sprintf("pid %d, gone (killed or crashed: its lease is left)", r.Owner.PID)
}

func ageOf(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return store.Age(now, t)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
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
		return "", "", fmt.Errorf("open: nothing to open: no workflow runs under %s yet", listing.Paths.Pretty(listing.Store))
	}
	groups, picks := pickerGroups(listing)
	if len(picks) == 0 {
		return "", "", fmt.Errorf("open: no attempt can be opened yet; herdr-pi open --list shows why")
	}
	choice, err := picker.Run(ctx, picker.Options{
		In: f.IO.In, Out: f.IO.Out, Env: f.IO.Env, Color: f.IO.color(), Groups: groups,
		Title: fmt.Sprintf("Open a workflow attempt (%s in %s, most recent first)", plural(len(listing.Runs), "run"), listing.Paths.Pretty(listing.Store)),
	})
	if errors.Is(err, picker.ErrCancelled) {
		fmt.Fprintln(f.IO.Err, "herdr-pi open: cancelled; nothing opened")
		return "", "", silentExit(exitInterrupted)
	}
	if err != nil {
		return "", "", fmt.Errorf("open: %w", err)
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
		for k, s := range []string{clean(r.Short), clean(r.Workflow), runState(r), ageOf(o.Now, r.UpdatedAt)} {
			headW[k] = max(headW[k], ansi.StringWidth(s))
		}
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				for k, s := range []string{clean(at.Name), clean(at.State), clean(at.Model)} {
					itemW[k] = max(itemW[k], ansi.StringWidth(s))
				}
			}
		}
	}
	groups := make([]picker.Group, len(o.Runs))
	picks := map[picker.Choice]pick{}
	for i := range o.Runs {
		r := &o.Runs[i]
		title := fmt.Sprintf("%s  %s  %s  %s  %s", render.Pad(clean(r.Short), headW[0]), render.Pad(clean(r.Workflow), headW[1]),
			render.Pad(runState(r), headW[2]), render.Pad(ageOf(o.Now, r.UpdatedAt), headW[3]), projectName(o, r))
		if r.Problem != "" {
			title += "  " + clean(r.Note)
		}
		groups[i].Title = title
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				text := fmt.Sprintf("%s  %s  %s  %s", render.Pad(clean(at.Name), itemW[0]), render.Pad(clean(at.State), itemW[1]),
					render.Pad(clean(at.Model), itemW[2]), at.Action)
				it := picker.Item{Text: text, Hint: pickHint(&at)}
				if at.Action == handoff.ActionNone {
					it.Disabled = true
					it.Text += ": " + clean(at.Note)
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
		return "live: a running Pi owns it; only --inspect opens it (a fork of what is there so far)"
	case handoff.ActionGone:
		return "gone: its owner Pi was killed mid-attempt; opens a fork of what it left"
	}
	return "opens a read-only fork of its session"
}
