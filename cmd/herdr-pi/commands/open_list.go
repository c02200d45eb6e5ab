package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker"
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
		out = l.hang(fmt.Sprintf("No workflow runs under %s yet: the workflow engine keeps them there once a Pi session runs a workflow.",
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

// runState is the run's state, or why it has none.
func runState(r *handoff.ListedRun) string {
	switch {
	case r.Problem != "":
		return "unreadable"
	case r.State == "":
		return "unknown"
	}
	return clean(r.State)
}

// attemptTag is an attempt as the runs table shows it: name#n, with the
// action when it is not a plain open.
func (l look) attemptTag(at *handoff.ListedAttempt) string {
	name := clean(at.Name)
	// On a terminal, where cells wrap, a no-break space keeps the action
	// with its attempt; elsewhere a plain one keeps the output greppable.
	sp := " "
	if l.width > 0 {
		sp = "\u00a0"
	}
	switch at.Action {
	case handoff.ActionLive:
		return l.render(l.warn, name+sp+"(live)")
	case handoff.ActionGone:
		return name + sp + "(gone)"
	case handoff.ActionNone:
		return l.render(l.faint, name+sp+"(none)")
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
				attempts = append(attempts, l.attemptTag(&ag.Attempts[j]))
			}
		}
		cell := strings.Join(attempts, " ")
		switch {
		case r.Problem != "":
			cell = l.render(l.fail, clean(r.Note))
		case cell == "":
			cell = l.render(l.faint, "no attempt yet")
		}
		rows = append(rows, []string{clean(r.Short), clean(r.Workflow), l.runState(r), ageOf(o.Now, r.UpdatedAt),
			projectName(o, r), cell})
	}
	var b strings.Builder
	b.WriteString(l.table([]column{{header: "RUN"}, {header: "WORKFLOW"}, {header: "STATE"}, {header: "UPDATED"},
		{header: "PROJECT", flex: true, spare: true}, {header: "ATTEMPTS", flex: true}}, rows))
	b.WriteString("\n" + l.hang(fmt.Sprintf("%s in %s, most recent first. herdr-pi open --list <run> shows what open can do with each attempt.",
		plural(len(o.Runs), "run"), o.Paths.Pretty(o.Store)), 0) + "\n")
	return b.String()
}

// renderRunDetail is `open --list <run>`: the run, then every attempt of
// its agents with what open can do with it.
func renderRunDetail(o *handoff.Listing, r *handoff.ListedRun, l look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", pad(l.render(l.bold, label), 8), l.hang(value, 10))
	}
	line("run", clean(r.ID))
	line("workflow", clean(r.Workflow))
	line("state", fmt.Sprintf("%s, updated %s", l.runState(r), ageOf(o.Now, r.UpdatedAt)))
	line("project", projectName(o, r))
	line("owner", ownerLine(r, l))
	if r.Error != nil {
		line("error", clean(strings.TrimPrefix(r.Error.Code+": "+r.Error.Message, ": ")))
	}
	var rows [][]string
	seen := map[string]bool{}
	for _, ag := range r.Agents {
		if len(ag.Attempts) == 0 {
			rows = append(rows, []string{clean(ag.Name), clean(ag.State), "", "", l.render(l.faint, handoff.ActionNone), "no attempt yet"})
		}
		for j := range ag.Attempts {
			at := &ag.Attempts[j]
			seen[at.Action] = true
			rows = append(rows, []string{clean(at.Name), clean(at.State), clean(at.Model), statusOf(at), l.action(at.Action), clean(at.Note)})
		}
	}
	if len(rows) == 0 {
		b.WriteString("\nNo agent has started in this run yet.\n")
		return b.String()
	}
	b.WriteString("\n" + l.table([]column{{header: "ATTEMPT"}, {header: "STATE"}, {header: "MODEL", flex: true, spare: true},
		{header: "STATUS"}, {header: "ACTION"}, {header: "NOTE", flex: true}}, rows) + "\n")
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
		fmt.Fprintf(&b, "%s  %s\n", pad(l.action(act), 4), l.hang(text, 6))
	}
	return b.String()
}

func (l look) runState(r *handoff.ListedRun) string {
	s := runState(r)
	if s == "unreadable" {
		return l.render(l.fail, s)
	}
	return s
}

func (l look) action(a string) string {
	switch a {
	case handoff.ActionOpen:
		return l.render(l.ok, a)
	case handoff.ActionLive:
		return l.render(l.warn, a)
	case handoff.ActionNone:
		return l.render(l.faint, a)
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
		return l.render(l.fail, clean(r.Owner.Problem))
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

// column is a column of a table.
type column struct {
	header string
	// flex columns shrink on a narrow terminal, their cells wrapping;
	// the others keep their width.
	flex bool
	// spare columns are left out when the terminal is too narrow for
	// the table even with its flexible columns wrapped.
	spare bool
}

// minFlex is the narrowest a flexible column gets: wrapping into
// narrower columns reads worse than the terminal's own line wrap.
const minFlex = 12

// table lays rows out under bold headers, two spaces between columns, no
// borders. On a terminal narrower than the table the flexible columns
// shrink and wrap, and spare columns go when that is not enough; it is
// never stretched wider than it needs, and elsewhere (width 0) never
// wrapped, so a row stays one line for grep.
func (l look) table(cols []column, rows [][]string) string {
	keep := func(column) bool { return true }
	fits, wrap := l.fit(only(cols, rows, keep))
	if !fits && !wrap {
		narrow := func(c column) bool { return !c.spare }
		if f, w := l.fit(only(cols, rows, narrow)); f || w {
			keep, wrap = narrow, w
		}
	}
	cols, rows = only(cols, rows, keep)
	headers := make([]string, len(cols))
	for c, col := range cols {
		headers[c] = col.header
	}
	natural := naturalWidths(cols, rows)
	last := len(cols) - 1
	t := table.New().Border(lipgloss.HiddenBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(false).BorderColumn(false).BorderRow(false).
		BorderStyle(l.r.NewStyle()).
		Headers(headers...).Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			s := l.r.NewStyle()
			if col != last {
				s = s.PaddingRight(2)
			}
			if wrap && !cols[col].flex {
				s = s.Width(natural[col])
			}
			if row == table.HeaderRow {
				s = s.Inherit(l.header)
			}
			return s
		})
	if wrap {
		t = t.Width(l.width)
	}
	lines := strings.Split(t.String(), "\n")
	for i, s := range lines {
		lines[i] = strings.TrimRight(s, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// only is the columns keep keeps, and the rows' cells in them.
func only(cols []column, rows [][]string, keep func(column) bool) ([]column, [][]string) {
	var kept []column
	var idx []int
	for c, col := range cols {
		if keep(col) {
			kept, idx = append(kept, col), append(idx, c)
		}
	}
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(idx))
		for j, c := range idx {
			out[i][j] = row[c]
		}
	}
	return kept, out
}

// fit says whether the columns fit the terminal as they are, and if not
// whether they would with the flexible ones wrapped.
func (l look) fit(cols []column, rows [][]string) (fits, wrap bool) {
	if l.width <= 0 {
		return true, false
	}
	total, rigid, nflex := 0, 0, 0
	for c, w := range naturalWidths(cols, rows) {
		total += w
		if cols[c].flex {
			nflex++
		} else {
			rigid += w
		}
	}
	if total <= l.width {
		return true, false
	}
	return false, nflex > 0 && l.width-rigid >= minFlex*nflex
}

// naturalWidths is each column's width unwrapped, with the two spaces
// that follow every column but the last.
func naturalWidths(cols []column, rows [][]string) []int {
	w := make([]int, len(cols))
	for c, col := range cols {
		w[c] = lipgloss.Width(col.header)
	}
	for _, row := range rows {
		for c, cell := range row {
			w[c] = max(w[c], lipgloss.Width(cell))
		}
	}
	for c := range len(w) - 1 {
		w[c] += 2
	}
	return w
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
		title := fmt.Sprintf("%s  %s  %s  %s  %s", pad(clean(r.Short), headW[0]), pad(clean(r.Workflow), headW[1]),
			pad(runState(r), headW[2]), pad(ageOf(o.Now, r.UpdatedAt), headW[3]), projectName(o, r))
		if r.Problem != "" {
			title += "  " + clean(r.Note)
		}
		groups[i].Title = title
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				text := fmt.Sprintf("%s  %s  %s  %s", pad(clean(at.Name), itemW[0]), pad(clean(at.State), itemW[1]),
					pad(clean(at.Model), itemW[2]), at.Action)
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
