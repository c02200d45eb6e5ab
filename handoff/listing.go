package handoff

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/settings"
)

// ListFormat names the shape of `open --list --json` (docs/open.md).
const ListFormat = "herdr-pi.open-list/1"

// What open can do with an attempt (docs/open.md). The listing decides it
// with the checks open makes, in the same order of importance.
const (
	// ActionOpen: open inspects it, a read-only fork of its transcript.
	ActionOpen = "open"
	// ActionLive: its owner Pi still runs it; open hands it off to a pane
	// and back when that Pi runs under herdr-pi wrap (and says so, exit 1,
	// when it does not), and --inspect forks what is there so far.
	ActionLive = "live"
	// ActionGone: it never finished because its owner Pi is gone; open
	// inspects what it left.
	ActionGone = "gone"
	// ActionNone: nothing can be opened (no session file yet, no
	// directory left, an unreadable owner lease); problem says why.
	ActionNone = "none"
)

// Listing is `open --list --json`: the runs looked at, most recent
// first, each with its agents and their attempts.
type Listing struct {
	Format string `json:"format"`
	// Store is the directory searched; Project the caller's project key.
	Store   string `json:"store"`
	Project string `json:"project"`
	// PrefixAlsoMatches are the runs of other projects the run named (a
	// prefix) passed over for the caller's project's run.
	PrefixAlsoMatches []OtherMatch `json:"prefix_also_matches,omitempty"`
	Runs              []ListedRun  `json:"runs"`
	// Unreadable are the store's sessions and runs directories that could
	// not be listed (whole listings only): their runs are missing from
	// Runs, and this says why and what to do.
	Unreadable []store.UnreadableDir `json:"unreadable_dirs,omitempty"`
	// Paths and Now are what the listing was made with (for showing it).
	Paths settings.Paths `json:"-"`
	Now   time.Time      `json:"-"`
}

// OtherMatch is a run of another project whose id starts with the prefix
// given too, passed over for the caller's project's run (docs/open.md:
// your project's runs are searched first). Ref names it from anywhere.
type OtherMatch struct {
	ID       string `json:"id"`
	Ref      string `json:"ref"`
	Project  string `json:"project"`
	Workflow string `json:"workflow,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

// OtherMatches is what p passed over, as --json shows it (nil for nil).
func OtherMatches(p *store.PassedOver) []OtherMatch {
	if p == nil {
		return nil
	}
	out := make([]OtherMatch, 0, len(p.Others))
	for _, r := range p.Others {
		m := OtherMatch{ID: r.ID, Ref: p.Refs[r.ID], Project: r.Project, Workflow: r.Workflow()}
		if r.Record != nil {
			m.Cwd = r.Record.Cwd
		}
		out = append(out, m)
	}
	return out
}

type ListedRun struct {
	ID string `json:"id"`
	// Short is the id's first 8 characters; Ref the shortest prefix of at
	// least those that names this run alone in the store, which tables
	// show and hints give open (two runs' ids can share 8 characters).
	Short    string `json:"short"`
	Ref      string `json:"ref"`
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
	Owner *ListedOwner `json:"owner,omitempty"`
	// Error is the engine's own error for the run; Problem why herdr-pi
	// could not read the run at all.
	Error   *ListedError  `json:"error,omitempty"`
	Problem string        `json:"problem,omitempty"`
	Agents  []ListedAgent `json:"agents"`

	UpdatedAt time.Time `json:"-"`
	Note      string    `json:"-"` // Problem, short, for tables
	// ProjectDir is the project's directory for tables: the run's Cwd, or
	// for a run that cannot be read, the directory whose storage key its
	// project is, when another run or the caller's cwd tells it.
	ProjectDir string `json:"-"`
}

type ListedOwner struct {
	PID     int    `json:"pid,omitempty"`
	Alive   bool   `json:"alive"`
	Problem string `json:"problem,omitempty"`
}

type ListedError struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

type ListedAgent struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Label    string          `json:"label,omitempty"`
	State    string          `json:"state,omitempty"`
	Attempts []ListedAttempt `json:"attempts"`
}

type ListedAttempt struct {
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
	Error       *ListedError `json:"error,omitempty"`

	OwnerPID int    `json:"-"`
	Note     string `json:"-"` // Problem, short, for tables
	// Interrupted: not settled, in a run the engine marked interrupted
	// (its owner went): nothing runs it until the run is resumed.
	Interrupted bool `json:"-"`
}

// List reads every run of the store, or the one ref names, and what open
// can do with each attempt.
func List(st *store.Store, paths settings.Paths, ref string) (*Listing, error) {
	now := time.Now()
	if st.Now != nil {
		now = st.Now()
	}
	listing := &Listing{Format: ListFormat, Store: st.Root, Project: st.Project, Runs: []ListedRun{}, Paths: paths, Now: now}
	if ref != "" {
		r, passed, err := st.ResolveRun(ref)
		if err != nil {
			return nil, err
		}
		listing.PrefixAlsoMatches = OtherMatches(passed)
		listing.Runs = append(listing.Runs, listRun(st, paths, r, nil))
	} else {
		runs, unreadable, err := st.Runs()
		if err != nil {
			return nil, err
		}
		listing.Unreadable = unreadable
		for _, r := range runs {
			listing.Runs = append(listing.Runs, listRun(st, paths, r.Run, r.Err))
		}
	}
	projectDirs(st, listing.Runs)
	// Refs are unique in the whole store, not only among the runs
	// listed: a hint `herdr-pi open <ref> …` must name one run.
	refs, _ := st.ShortIDs()
	for i := range listing.Runs {
		lr := &listing.Runs[i]
		lr.Ref = lr.Short
		if ref, ok := refs[lr.ID]; ok {
			lr.Ref = ref
		}
	}
	return listing, nil
}

// projectDirs sets each run's ProjectDir. The storage key is a hash of
// the launch cwd, so a run that cannot be read shares the directory of
// any readable run of its project, or of the caller when it is theirs:
// a table shows it as it shows the others, not as a bare key.
func projectDirs(st *store.Store, runs []ListedRun) {
	dirs := map[string]string{st.Project: st.Cwd}
	for _, r := range runs {
		if r.Cwd != "" && store.ProjectKey(r.Cwd) == r.Project {
			dirs[r.Project] = r.Cwd
		}
	}
	for i := range runs {
		runs[i].ProjectDir = runs[i].Cwd
		if runs[i].ProjectDir == "" {
			runs[i].ProjectDir = dirs[runs[i].Project]
		}
	}
}

func listRun(st *store.Store, paths settings.Paths, r *store.Run, readErr error) ListedRun {
	lr := ListedRun{ID: r.ID, Short: r.Short(), Workflow: r.Workflow(), State: r.State(), Project: r.Project,
		Here: r.Project == st.Project, Dir: r.Dir, Agents: []ListedAgent{}, UpdatedAt: r.Updated}
	if !r.Updated.IsZero() {
		lr.Updated = r.Updated.UTC().Format(time.RFC3339Nano)
	}
	if readErr != nil {
		lr.Problem, lr.Note = readErr.Error(), shortProblem(readErr, paths)
	}
	if r.Record == nil {
		return lr
	}
	lr.Cwd = r.Record.Cwd
	lr.Error = engineError(r.Record.Error)
	lease, err := r.Owner()
	switch {
	case err != nil:
		lr.Owner = &ListedOwner{Problem: err.Error()}
	case lease != nil:
		lr.Owner = &ListedOwner{PID: lease.PID, Alive: lease.Alive()}
	}
	byAgent := map[*store.AgentRecord]int{}
	for i := range r.Record.Agents {
		ag := &r.Record.Agents[i]
		byAgent[ag] = len(lr.Agents)
		lr.Agents = append(lr.Agents, ListedAgent{ID: ag.ID, Name: ag.DisplayName(), Label: ag.Label, State: ag.State, Attempts: []ListedAttempt{}})
	}
	for _, a := range r.Attempts() {
		la := &lr.Agents[byAgent[a.Agent]]
		la.Attempts = append(la.Attempts, listAttempt(a, paths))
	}
	return lr
}

// listAttempt describes an attempt and decides its action with the checks
// open makes before it opens anything (open.go: Live, SessionFile, Cwd).
func listAttempt(a *store.Attempt, paths settings.Paths) ListedAttempt {
	at := ListedAttempt{N: a.Record.N, Name: a.Name(), Selector: selectorOf(a), State: attemptState(a), Model: a.Model(),
		Settled: a.Settled(), SessionFile: a.SessionPath(), Error: engineError(a.Record.Error)}
	live, lease, leaseErr := a.Live()
	if lease != nil {
		at.OwnerPID = lease.PID
	}
	at.Live = live
	at.OwnerGone = leaseErr == nil && !at.Settled && !live
	at.Interrupted = !at.Settled && a.Run.State() == "interrupted"
	dir, cwdErr := a.Cwd()
	at.Cwd = dir
	if at.Cwd == "" {
		at.Cwd = a.Record.Setup.Cwd
	}
	_, sessionErr := a.SessionFile()
	switch err := firstError(leaseErr, sessionErr, cwdErr); {
	case live:
		// open hands a live attempt off before it looks at the transcript
		// or the directory (the owner has both; Pi writes the transcript
		// after the first reply, before the turn ends). What is wrong with
		// them is only --inspect's problem, and said.
		at.Action = ActionLive
		if err != nil {
			at.Problem, at.Note = err.Error(), shortProblem(err, paths)
		}
	case err != nil:
		at.Action, at.Problem, at.Note = ActionNone, err.Error(), shortProblem(err, paths)
	case at.OwnerGone:
		at.Action = ActionGone
	default:
		at.Action = ActionOpen
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
		// The cause only: the fix, after " (" or "; ", is for the error.
		for _, sep := range []string{" (", "; "} {
			if i := strings.Index(problem, sep); i > 0 {
				problem = problem[:i]
			}
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

func engineError(e *store.ErrorRecord) *ListedError {
	if e == nil {
		return nil
	}
	return &ListedError{Code: e.Code, Message: e.Message}
}
