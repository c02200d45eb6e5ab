package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
)

// Selector picks an attempt: an agent (its name, label, number or full id)
// and an attempt number (0 = the latest).
type Selector struct {
	Agent string
	N     int
}

// String is the selector as typed: agent, or agent#n.
func (s Selector) String() string {
	if s.N == 0 {
		return s.Agent
	}
	return s.Agent + "#" + strconv.Itoa(s.N)
}

// maxAttemptNumber bounds #n: no run retries this often, and it keeps n an
// int everywhere.
const maxAttemptNumber = 1 << 20

// ParseSelector reads "<agent>" or "<agent>#<n>". Only a trailing #digits
// is an attempt number, so a label that contains "#" elsewhere still
// works; "api#x" is a name, not an error. A trailing "#", or "#-digits",
// is an attempt number gone wrong, as "#0" is: said as such, not looked
// for as a name no agent has.
func ParseSelector(text string) (Selector, error) {
	if strings.TrimSpace(text) == "" {
		return Selector{}, &SelectorError{Text: text, Problem: "empty"}
	}
	i := strings.LastIndexByte(text, '#')
	if i > 0 {
		switch after := text[i+1:]; {
		case after == "":
			return Selector{}, &SelectorError{Text: text, Problem: "no attempt number after #"}
		case len(after) > 1 && after[0] == '-' && strings.Trim(after[1:], "0123456789") == "":
			return Selector{}, &SelectorError{Text: text, Problem: "attempt numbers start at 1"}
		}
	}
	if i < 0 || i == len(text)-1 || strings.Trim(text[i+1:], "0123456789") != "" {
		return Selector{Agent: text}, nil
	}
	agent, digits := text[:i], text[i+1:]
	if agent == "" {
		return Selector{}, &SelectorError{Text: text, Problem: "no agent before #" + digits}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n > maxAttemptNumber {
		return Selector{}, &SelectorError{Text: text, Problem: "attempt number #" + digits + " is too large"}
	}
	if n == 0 {
		return Selector{}, &SelectorError{Text: text, Problem: "attempt numbers start at 1"}
	}
	return Selector{Agent: agent, N: n}, nil
}

// Attempt is one attempt of one agent of a run.
type Attempt struct {
	Run    *Run
	Agent  *AgentRecord
	Record *AttemptRecord
}

// Name is the attempt as lists show it and Pick accepts it: name#n.
func (a *Attempt) Name() string {
	return a.Agent.DisplayName() + "#" + strconv.Itoa(a.Record.N)
}

// Model is the attempt's setup model as Pi's --model takes it
// (provider/model[:thinking]), falling back to the agent's model when the
// setup names none; "" when neither does.
func (a *Attempt) Model() string {
	if m := a.Record.Setup.Model.String(); m != "" {
		return m
	}
	return a.Agent.Model.String()
}

// Cwd is the first existing directory of the attempt's own cwd (a worktree,
// which may have been removed since) and the run's cwd.
func (a *Attempt) Cwd() (string, error) {
	var tried []string
	for _, dir := range []string{a.Record.Setup.Cwd, a.Run.Record.Cwd} {
		if dir == "" || (len(tried) > 0 && tried[len(tried)-1] == dir) {
			continue
		}
		tried = append(tried, dir)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	if len(tried) == 0 {
		tried = []string{"no cwd recorded"}
	}
	return "", &NoCwdError{Run: a.Run.Short(), Attempt: a.Name(), Tried: tried}
}

// SessionPath is the session file the record names ("" when none); it may
// not exist. Never compute it: agent transcripts do not live where Pi puts
// interactive sessions (reference, "Measured on a real store").
func (a *Attempt) SessionPath() string {
	if s := a.Record.Session; s != nil && s.Locator != nil {
		return s.Locator.SessionFile
	}
	return ""
}

// SessionFile is the attempt's session transcript, checked to be a
// readable regular file that Pi can fork.
func (a *Attempt) SessionFile() (string, error) {
	return a.SessionFileAt(a.SessionPath())
}

// SessionFileAt is [Attempt.SessionFile] for the transcript at path, one
// the engine names for the attempt itself (the /workflow menu passes the
// file its session holds): it is checked as the record's is, so no pane
// opens for a Pi that would only fail in it.
func (a *Attempt) SessionFileAt(path string) (string, error) {
	e := &SessionFileError{Run: a.Run.Short(), Attempt: a.Name(), Path: path}
	switch {
	case path == "" && a.Record.Session == nil:
		e.Problem = "it never started a session"
		return "", e
	case path == "":
		e.Problem = "the engine wrote none for it"
		return "", e
	case !filepath.IsAbs(path):
		e.Problem = "is not an absolute path, so it cannot be found"
		return "", e
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) && a.Settled():
		// An ended attempt almost always had a reply, so its file was
		// written: waiting for one would be the wrong advice.
		e.Problem = "does not exist any more: the attempt has ended, so it was moved or removed since (unless it ended before its first reply)"
		return "", e
	case errors.Is(err, fs.ErrNotExist):
		e.Problem = "does not exist: Pi writes it only after the agent's first reply"
		if gone, lerr := a.OwnerGone(); lerr == nil && gone {
			// No Pi runs it to have that reply: waiting would be the
			// wrong advice here too. A lease that cannot be read tells
			// nothing either way.
			e.Problem += ", and nothing runs the attempt now (its owner Pi is gone, or its run is interrupted)"
		}
		return "", e
	case err != nil:
		e.Problem = "cannot be read: " + accessProblem(path, err)
		return "", e
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		e.Problem = "is not a regular file"
		return "", e
	}
	if problem := forkHeaderProblem(f); problem != "" {
		e.Problem = problem
		return "", e
	}
	return path, nil
}

// headerScanLimit bounds how much of a transcript forkHeaderProblem reads
// before it leaves the judgement to Pi: a header is one short line.
const headerScanLimit = 1 << 20

// forkHeaderProblem says why Pi would refuse to fork the transcript r, or
// "" when it would not. Checked here so that open says it before Herdr
// hears anything: Pi says it only in the pane open made for it, which is
// then left for the person to close. The first entry must be the session
// header, type "session" with a string id; what counts as the first entry
// differs between the Pis herdr-pi runs with (checked with both, their
// SessionManager.forkFrom), and only what neither forks is refused:
//   - Pi 1.6.0 takes each line that parses as JSON and is not falsy
//     (null, false, 0, ""); blank and garbled lines are skipped.
//   - Pi 0.73.1 trims the whole text first (a byte order mark or other
//     leading Unicode space before the header goes) and takes every line
//     that parses, falsy ones too (null first fails the fork).
func forkHeaderProblem(r io.Reader) string {
	lr := &io.LimitedReader{R: r, N: headerScanLimit}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), headerScanLimit)
	// The verdicts of each Pi on the first entry it takes: 0 until taken.
	const (
		undecided = iota
		forks
		refuses
	)
	pi16, pi073 := undecided, undecided
	atStart := true // no character but space read yet: 0.73.1 trims it
	for (pi16 == undecided || pi073 == undecided) && sc.Scan() {
		line := sc.Bytes()
		v, parsed := parseEntry(line)
		if pi16 == undecided && parsed && !falsy(v) {
			pi16 = verdict(isSessionHeader(v), forks, refuses)
		}
		if atStart {
			line = bytes.TrimLeftFunc(line, jsSpace)
			if len(line) == 0 {
				continue
			}
			atStart = false
			v, parsed = parseEntry(line)
		}
		if pi073 == undecided && parsed {
			pi073 = verdict(isSessionHeader(v), forks, refuses)
		}
	}
	switch {
	case pi16 == forks || pi073 == forks:
		return ""
	case sc.Err() != nil || lr.N == 0:
		return "" // unreadable now, or more than the limit read: Pi decides
	case pi16 == refuses:
		return `does not start with Pi's session header (a line {"type":"session","id":…}), so Pi cannot fork it`
	}
	return "is empty or holds no JSON line, so Pi cannot fork it (a transcript cut short, or not Pi's)"
}

// parseEntry parses a line as JavaScript's JSON.parse would. Numbers stay
// text: JSON.parse takes 1e400 (as Infinity), which a float64 refuses.
func parseEntry(line []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false // more after the value
	}
	return v, true
}

func isSessionHeader(v any) bool {
	h, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, id := h["id"].(string)
	return id && h["type"] == "session"
}

func verdict(ok bool, yes, no int) int {
	if ok {
		return yes
	}
	return no
}

// jsSpace is what JavaScript's String.prototype.trim removes: Unicode's
// white space but U+0085, and the byte order mark.
func jsSpace(r rune) bool {
	return r == '\ufeff' || (unicode.IsSpace(r) && r != '\u0085')
}

// falsy is JavaScript's falsiness of a parsed JSON value: Pi 1.6.0 drops
// such entries (null, false, 0, "") as it drops lines that do not parse.
func falsy(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64) // ±Inf past the range
		return f == 0
	case string:
		return v == ""
	}
	return false
}

// settledStates are the agent states after which nothing runs: the engine's
// inspection action accepts exactly these (reference §4).
var settledStates = map[string]bool{"completed": true, "failed": true, "cancelled": true, "stopped": true}

// hardTerminal are the run states nothing resumes from (reference §2.1).
var hardTerminal = map[string]bool{"completed": true, "failed": true, "stopped": true}

// Settled is true when nothing runs in this attempt any more: its agent is
// settled, or the attempt ended with an error, or a later attempt of the
// agent exists (a retry starts only after the previous attempt ended), or
// the whole run is over.
func (a *Attempt) Settled() bool {
	if settledStates[a.Agent.State] || a.Record.Error != nil || hardTerminal[a.Run.State()] {
		return true
	}
	return a.Agent.Latest().N > a.Record.N
}

// Live is true when the attempt may still be running in its owner: it is
// not settled, its run is not interrupted, and the owner lease of its
// session is alive. A non-settled
// attempt whose owner is gone (a killed Pi) is not live: nothing will
// change it again. The lease is returned when there is one.
func (a *Attempt) Live() (bool, *Lease, error) {
	lease, err := a.Run.Owner()
	if a.Settled() {
		// Whatever the lease says, nothing runs here: a broken lease must
		// not keep a finished attempt from being opened.
		return false, lease, nil
	}
	if a.Run.State() == "interrupted" {
		// The engine marks a run interrupted when its owner goes, or when
		// the next Pi of the same session starts and finds it unfinished:
		// that Pi holds the lease then, yet runs none of the run's agents
		// until the run is resumed (running again). The lease says nothing
		// of this attempt.
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return lease.Alive(), lease, nil
}

// OwnerGone is true for an attempt that is not settled although no live
// owner holds it: its Pi was killed or crashed mid-attempt.
func (a *Attempt) OwnerGone() (bool, error) {
	if a.Settled() {
		return false, nil
	}
	live, _, err := a.Live()
	return !live, err
}

// Attempts lists every attempt of the run, agents in record order, each
// agent's attempts by number.
func (r *Run) Attempts() []*Attempt {
	if r.Record == nil {
		return nil
	}
	var out []*Attempt
	for i := range r.Record.Agents {
		ag := &r.Record.Agents[i]
		for _, n := range attemptOrder(ag) {
			out = append(out, &Attempt{Run: r, Agent: ag, Record: &ag.Attempts[n]})
		}
	}
	return out
}

// attemptOrder is the indexes of ag.Attempts sorted by attempt number.
func attemptOrder(ag *AgentRecord) []int {
	idx := make([]int, len(ag.Attempts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return ag.Attempts[a].N - ag.Attempts[b].N })
	return idx
}

// Pick finds the attempt the selector names. The agent is matched by, in
// this order: full id; name; label; number (the n of "<runId>:n"). A name
// or label that fits several agents is ambiguous rather than a guess.
func (r *Run) Pick(sel Selector) (*Attempt, error) {
	if r.Record == nil {
		return nil, &FileError{Path: r.Dir, Problem: "run state not read"}
	}
	agents := r.Record.Agents
	var found []*AgentRecord
	match := func(f func(*AgentRecord) bool) {
		if len(found) > 0 {
			return
		}
		for i := range agents {
			if f(&agents[i]) {
				found = append(found, &agents[i])
			}
		}
	}
	match(func(a *AgentRecord) bool { return a.ID != "" && a.ID == sel.Agent })
	match(func(a *AgentRecord) bool { return a.Name != "" && a.Name == sel.Agent })
	match(func(a *AgentRecord) bool { return a.Label != "" && a.Label == sel.Agent })
	if n, err := strconv.Atoi(sel.Agent); err == nil && n > 0 && strconv.Itoa(n) == sel.Agent {
		match(func(a *AgentRecord) bool { return a.Number() == n })
	}
	switch {
	case len(found) == 0:
		return nil, &NoAttemptError{Run: r.Short(), Selector: sel, Attempts: r.attemptNames()}
	case len(found) > 1:
		e := &AmbiguousAgentError{Run: r.Short(), Selector: sel}
		for _, a := range found {
			e.Agents = append(e.Agents, a.ID)
		}
		return nil, e
	}
	ag := found[0]
	var rec *AttemptRecord
	if sel.N == 0 {
		rec = ag.Latest()
	} else {
		for i := range ag.Attempts {
			if ag.Attempts[i].N == sel.N {
				rec = &ag.Attempts[i]
				break
			}
		}
	}
	if rec == nil {
		return nil, &NoAttemptError{Run: r.Short(), Selector: sel, Agent: ag.DisplayName(), Attempts: r.attemptNames()}
	}
	return &Attempt{Run: r, Agent: ag, Record: rec}, nil
}

// PickText parses the selector and picks the attempt.
func (r *Run) PickText(text string) (*Attempt, error) {
	sel, err := ParseSelector(text)
	if err != nil {
		return nil, err
	}
	return r.Pick(sel)
}

// attemptNames is every attempt as name#n, sorted by name and number so
// a message reads the same whatever order parallel agents were recorded in.
func (r *Run) attemptNames() []string {
	type key struct {
		name string
		n    int
	}
	var keys []key
	for _, a := range r.Attempts() {
		keys = append(keys, key{a.Agent.DisplayName(), a.Record.N})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return a.n - b.n
	})
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name + "#" + strconv.Itoa(k.n)
	}
	return names
}

// String names the attempt for messages: run short id and name#n.
func (a *Attempt) String() string { return fmt.Sprintf("run %s attempt %s", a.Run.Short(), a.Name()) }

// Find is FindRun then PickText: the attempt `herdr-pi open <run>
// <attempt>` names.
func (s *Store) Find(runRef, attempt string) (*Attempt, error) {
	sel, err := ParseSelector(attempt)
	if err != nil {
		return nil, err
	}
	r, err := s.FindRun(runRef)
	if err != nil {
		return nil, err
	}
	return r.Pick(sel)
}
