package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/settings"
)

// openListFormat names the shape of `open --list --json` (docs/open.md).
const openListFormat = "herdr-pi.open-list/1"

// What open can do with an attempt (docs/open.md). The listing decides it
// with the checks open makes, in the same order of importance.
const (
	// actionOpen: open inspects it, a read-only fork of its transcript.
	actionOpen = "open"
	// actionLive: its owner Pi still runs it; open refuses it, and
	// --inspect forks what is there so far.
	actionLive = "live"
	// actionGone: it never finished because its owner Pi is gone; open
	// inspects what it left.
	actionGone = "gone"
	// actionNone: nothing can be opened (no session file yet, no
	// directory left, an unreadable owner lease); problem says why.
	actionNone = "none"
)

// openListing is `open --list --json`: the runs looked at, most recent
// first, each with its agents and their attempts.
type openListing struct {
	Format string `json:"format"`
	// Store is the directory searched; Project the caller's project key.
	Store   string      `json:"store"`
	Project string      `json:"project"`
	Runs    []listedRun `json:"runs"`
	paths   settings.Paths
	now     time.Time
}

type listedRun struct {
	ID       string `json:"id"`
	Short    string `json:"short"`
	Workflow string `json:"workflow,omitempty"`
	State    string `json:"state,omitempty"`
	// Updated is state.json's modification time: the run's last change.
	Updated string `json:"updated,omitempty"`
	Project string `json:"project"`
	Here    bool   `json:"here"`
	Cwd     string `json:"cwd,omitempty"`
	Dir     string `json:"dir"`
	// Owner is the lease of the Pi session that owns the run; absent when
	// there is none (that Pi exited cleanly).
	Owner *listedOwner `json:"owner,omitempty"`
	// Error is the engine's own error for the run; Problem why herdr-pi
	// could not read the run at all.
	Error   *listedError  `json:"error,omitempty"`
	Problem string        `json:"problem,omitempty"`
	Agents  []listedAgent `json:"agents"`

	updated time.Time
	note    string // Problem, short, for tables
}

type listedOwner struct {
	PID     int    `json:"pid,omitempty"`
	Alive   bool   `json:"alive"`
	Problem string `json:"problem,omitempty"`
}

type listedError struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

type listedAgent struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Label    string          `json:"label,omitempty"`
	State    string          `json:"state,omitempty"`
	Attempts []listedAttempt `json:"attempts"`
}

type listedAttempt struct {
	N    int    `json:"n"`
	Name string `json:"name"`
	// Selector is what to give open for this attempt: name#n, or the
	// agent's id#n when the name does not single the agent out.
	Selector    string       `json:"selector"`
	State       string       `json:"state"`
	Model       string       `json:"model,omitempty"`
	Settled     bool         `json:"settled"`
	Live        bool         `json:"live"`
	OwnerGone   bool         `json:"owner_gone"`
	SessionFile string       `json:"session_file,omitempty"`
	Cwd         string       `json:"cwd,omitempty"`
	Action      string       `json:"action"`
	Problem     string       `json:"problem,omitempty"`
	Error       *listedError `json:"error,omitempty"`

	ownerPID int
	note     string // Problem, short, for tables
}

// openListRun is `open --list [<run>]`.
func openListRun(f *Factory, st *store.Store, opts *openOptions) error {
	listing, err := listRuns(st, f.Paths(), opts.Run)
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
			listing.paths.Pretty(listing.Store)), 0) + "\n"
	default:
		out = renderRunTable(listing, l)
	}
	_, err = io.WriteString(f.IO.Out, out)
	return err
}

// listRuns reads every run of the store, or the one ref names.
func listRuns(st *store.Store, paths settings.Paths, ref string) (*openListing, error) {
	now := time.Now()
	if st.Now != nil {
		now = st.Now()
	}
	listing := &openListing{Format: openListFormat, Store: st.Root, Project: st.Project, Runs: []listedRun{}, paths: paths, now: now}
	if ref != "" {
		r, err := st.FindRun(ref)
		if err != nil {
			return nil, err
		}
		listing.Runs = append(listing.Runs, listRun(st, paths, r, nil))
		return listing, nil
	}
	runs, err := st.Runs()
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		listing.Runs = append(listing.Runs, listRun(st, paths, r.Run, r.Err))
	}
	return listing, nil
}

func listRun(st *store.Store, paths settings.Paths, r *store.Run, readErr error) listedRun {
	lr := listedRun{ID: r.ID, Short: r.Short(), Workflow: r.Workflow(), State: r.State(), Project: r.Project,
		Here: r.Project == st.Project, Dir: r.Dir, Agents: []listedAgent{}, updated: r.Updated}
	if !r.Updated.IsZero() {
		lr.Updated = r.Updated.UTC().Format(time.RFC3339Nano)
	}
	if readErr != nil {
		lr.Problem, lr.note = readErr.Error(), shortProblem(readErr, paths)
	}
	if r.Record == nil {
		return lr
	}
	lr.Cwd = r.Record.Cwd
	lr.Error = engineError(r.Record.Error)
	lease, err := r.Owner()
	switch {
	case err != nil:
		lr.Owner = &listedOwner{Problem: err.Error()}
	case lease != nil:
		lr.Owner = &listedOwner{PID: lease.PID, Alive: lease.Alive()}
	}
	byAgent := map[*store.AgentRecord]int{}
	for i := range r.Record.Agents {
		ag := &r.Record.Agents[i]
		byAgent[ag] = len(lr.Agents)
		lr.Agents = append(lr.Agents, listedAgent{ID: ag.ID, Name: ag.DisplayName(), Label: ag.Label, State: ag.State, Attempts: []listedAttempt{}})
	}
	for _, a := range r.Attempts() {
		la := &lr.Agents[byAgent[a.Agent]]
		la.Attempts = append(la.Attempts, listAttempt(a, paths))
	}
	return lr
}

// listAttempt describes an attempt and decides its action with the checks
// open makes before it opens anything (open.go: Live, SessionFile, Cwd).
func listAttempt(a *store.Attempt, paths settings.Paths) listedAttempt {
	at := listedAttempt{N: a.Record.N, Name: a.Name(), Selector: selectorOf(a), State: attemptState(a), Model: a.Model(),
		Settled: a.Settled(), SessionFile: a.SessionPath(), Error: engineError(a.Record.Error)}
	live, lease, leaseErr := a.Live()
	if lease != nil {
		at.ownerPID = lease.PID
	}
	at.Live = live
	at.OwnerGone = leaseErr == nil && !at.Settled && !live
	dir, cwdErr := a.Cwd()
	at.Cwd = dir
	if at.Cwd == "" {
		at.Cwd = a.Record.Setup.Cwd
	}
	_, sessionErr := a.SessionFile()
	switch err := firstError(leaseErr, sessionErr, cwdErr); {
	case err != nil:
		at.Action, at.Problem, at.note = actionNone, err.Error(), shortProblem(err, paths)
	case live:
		at.Action = actionLive
	case at.OwnerGone:
		at.Action = actionGone
	default:
		at.Action = actionOpen
	}
	return at
}

// shortProblem says what is wrong in a table cell's few words: the
// store's errors also name the run and attempt, which the table shows
// already, and the way out, which the legend gives.
func shortProblem(err error, paths settings.Paths) string {
	var (
		sess *store.SessionFileError
		cwd  *store.NoCwdError
		file *store.FileError
	)
	switch {
	case errors.As(err, &sess) && sess.Path == "":
		return "no session file: " + sess.Problem
	case errors.As(err, &sess):
		return "session file " + paths.Pretty(sess.Path) + " " + sess.Problem
	case errors.As(err, &cwd):
		tried := make([]string, len(cwd.Tried))
		for i, d := range cwd.Tried {
			tried[i] = paths.Pretty(d)
		}
		return "no working directory left (tried " + strings.Join(tried, ", ") + ")"
	case errors.As(err, &file):
		problem := file.Problem
		if i := strings.Index(problem, " ("); i > 0 {
			problem = problem[:i]
		}
		return filepath.Base(file.Path) + ": " + strings.TrimSuffix(problem, ":")
	}
	return err.Error()
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// selectorOf is what open needs to find this attempt again: name#n when
// the name picks this agent, else the agent's full id#n (two agents of a
// run can share a label).
func selectorOf(a *store.Attempt) string {
	if got, err := a.Run.PickText(a.Name()); err == nil && got.Record == a.Record {
		return a.Name()
	}
	return fmt.Sprintf("%s#%d", a.Agent.ID, a.Record.N)
}

// attemptState is the agent's state for its latest attempt; an earlier
// attempt either failed or was followed by another.
func attemptState(a *store.Attempt) string {
	switch {
	case a.Agent.Latest() == a.Record:
		if a.Agent.State == "" {
			return "unknown"
		}
		return a.Agent.State
	case a.Record.Error != nil:
		return "failed"
	}
	return "retried"
}

func engineError(e *store.ErrorRecord) *listedError {
	if e == nil {
		return nil
	}
	return &listedError{Code: e.Code, Message: e.Message}
}

// projectName is the run's project as a person knows it: its directory
// (home as ~), else the storage key without its hash.
func (o *openListing) projectName(r *listedRun) string {
	name := ""
	if r.Cwd != "" {
		name = o.paths.Pretty(r.Cwd)
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
func runState(r *listedRun) string {
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
func (l look) attemptTag(at *listedAttempt) string {
	name := clean(at.Name)
	// On a terminal, where cells wrap, a no-break space keeps the action
	// with its attempt; elsewhere a plain one keeps the output greppable.
	sp := " "
	if l.width > 0 {
		sp = "\u00a0"
	}
	switch at.Action {
	case actionLive:
		return l.render(l.warn, name+sp+"(live)")
	case actionGone:
		return name + sp + "(gone)"
	case actionNone:
		return l.render(l.faint, name+sp+"(none)")
	}
	return name
}

// renderRunTable is `open --list`: a run a row, most recent first, with
// its attempts. On a terminal the table fits the width (the widest cells
// wrap); elsewhere a row stays one line, for grep.
func renderRunTable(o *openListing, l look) string {
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
			cell = l.render(l.fail, clean(r.note))
		case cell == "":
			cell = l.render(l.faint, "no attempt yet")
		}
		rows = append(rows, []string{clean(r.Short), clean(r.Workflow), l.runState(r), ageOf(o.now, r.updated),
			o.projectName(r), cell})
	}
	var b strings.Builder
	b.WriteString(l.table([]column{{header: "RUN"}, {header: "WORKFLOW"}, {header: "STATE"}, {header: "UPDATED"},
		{header: "PROJECT", flex: true, spare: true}, {header: "ATTEMPTS", flex: true}}, rows))
	b.WriteString("\n" + l.hang(fmt.Sprintf("%s in %s, most recent first. herdr-pi open --list <run> shows what open can do with each attempt.",
		plural(len(o.Runs), "run"), o.paths.Pretty(o.Store)), 0) + "\n")
	return b.String()
}

// renderRunDetail is `open --list <run>`: the run, then every attempt of
// its agents with what open can do with it.
func renderRunDetail(o *openListing, r *listedRun, l look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", pad(l.render(l.bold, label), 8), l.hang(value, 10))
	}
	line("run", clean(r.ID))
	line("workflow", clean(r.Workflow))
	line("state", fmt.Sprintf("%s, updated %s", l.runState(r), ageOf(o.now, r.updated)))
	line("project", o.projectName(r))
	line("owner", ownerLine(r, l))
	if r.Error != nil {
		line("error", clean(strings.TrimPrefix(r.Error.Code+": "+r.Error.Message, ": ")))
	}
	var rows [][]string
	seen := map[string]bool{}
	for _, ag := range r.Agents {
		if len(ag.Attempts) == 0 {
			rows = append(rows, []string{clean(ag.Name), clean(ag.State), "", "", l.render(l.faint, actionNone), "no attempt yet"})
		}
		for j := range ag.Attempts {
			at := &ag.Attempts[j]
			seen[at.Action] = true
			rows = append(rows, []string{clean(at.Name), clean(at.State), clean(at.Model), statusOf(at), l.action(at.Action), clean(at.note)})
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
	for _, act := range []string{actionOpen, actionGone, actionLive, actionNone} {
		if !seen[act] {
			continue
		}
		var text string
		switch act {
		case actionOpen:
			text = "herdr-pi open " + example[act] + " opens a read-only fork of it in a new pane"
		case actionGone:
			text = "its owner Pi was killed mid-attempt; herdr-pi open " + example[act] + " forks what it left"
		case actionLive:
			text = "a running Pi owns it: open refuses it, herdr-pi open --inspect " + example[act] + " forks what is there so far"
		case actionNone:
			text = "nothing to open (NOTE says why)"
		}
		fmt.Fprintf(&b, "%s  %s\n", pad(l.action(act), 4), l.hang(text, 6))
	}
	return b.String()
}

func (l look) runState(r *listedRun) string {
	s := runState(r)
	if s == "unreadable" {
		return l.render(l.fail, s)
	}
	return s
}

func (l look) action(a string) string {
	switch a {
	case actionOpen:
		return l.render(l.ok, a)
	case actionLive:
		return l.render(l.warn, a)
	case actionNone:
		return l.render(l.faint, a)
	}
	return a
}

// statusOf says whether anything still runs in the attempt.
func statusOf(at *listedAttempt) string {
	switch {
	case at.Settled:
		return "settled"
	case at.Live:
		return fmt.Sprintf("live (pid %d)", at.ownerPID)
	case at.OwnerGone && at.ownerPID > 0:
		return fmt.Sprintf("owner gone (pid %d)", at.ownerPID)
	case at.OwnerGone:
		return "owner gone"
	}
	return "unknown"
}

func ownerLine(r *listedRun, l look) string {
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
	listing, err := listRuns(st, f.Paths(), "")
	if err != nil {
		return "", "", openError(err)
	}
	if len(listing.Runs) == 0 {
		return "", "", fmt.Errorf("open: nothing to open: no workflow runs under %s yet", listing.paths.Pretty(listing.Store))
	}
	groups, picks := pickerGroups(listing)
	if len(picks) == 0 {
		return "", "", fmt.Errorf("open: no attempt can be opened yet; herdr-pi open --list shows why")
	}
	choice, err := picker.Run(ctx, picker.Options{
		In: f.IO.In, Out: f.IO.Out, Env: f.IO.Env, Color: f.IO.color(), Groups: groups,
		Title: fmt.Sprintf("Open a workflow attempt (%s in %s, most recent first)", plural(len(listing.Runs), "run"), listing.paths.Pretty(listing.Store)),
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
func pickerGroups(o *openListing) ([]picker.Group, map[picker.Choice]pick) {
	var headW [4]int
	var itemW [3]int
	for i := range o.Runs {
		r := &o.Runs[i]
		for k, s := range []string{clean(r.Short), clean(r.Workflow), runState(r), ageOf(o.now, r.updated)} {
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
			pad(runState(r), headW[2]), pad(ageOf(o.now, r.updated), headW[3]), o.projectName(r))
		if r.Problem != "" {
			title += "  " + clean(r.note)
		}
		groups[i].Title = title
		for _, ag := range r.Agents {
			for _, at := range ag.Attempts {
				text := fmt.Sprintf("%s  %s  %s  %s", pad(clean(at.Name), itemW[0]), pad(clean(at.State), itemW[1]),
					pad(clean(at.Model), itemW[2]), at.Action)
				it := picker.Item{Text: text, Hint: pickHint(&at)}
				if at.Action == actionNone {
					it.Disabled = true
					it.Text += ": " + clean(at.note)
				} else {
					picks[picker.Choice{Group: i, Item: len(groups[i].Items)}] = pick{run: r.ID, selector: at.Selector}
				}
				groups[i].Items = append(groups[i].Items, it)
			}
		}
	}
	return groups, picks
}

func pickHint(at *listedAttempt) string {
	switch at.Action {
	case actionLive:
		return "live: a running Pi owns it; only --inspect opens it (a fork of what is there so far)"
	case actionGone:
		return "gone: its owner Pi was killed mid-attempt; opens a fork of what it left"
	}
	return "opens a read-only fork of its session"
}
