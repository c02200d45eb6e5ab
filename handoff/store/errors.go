package store

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The errors below are typed so cmd can choose the exit code and wording
// with errors.As; each message names the object and the way out. None
// carries the "open:" prefix: that is the command's.

// NoRunError: no run has this id or id prefix.
type NoRunError struct {
	Ref      string
	Root     string   // …/.pi/workflows/projects
	Projects []string // storage keys searched, the caller's project first
	// Unreadable are the directories that could not be searched: the run
	// may be in one of them.
	Unreadable []UnreadableDir
	// Near are the runs whose ids the ref nearly starts, one slip away
	// (a typo): "<ref> (<workflow>)", most recent first.
	Near []string
}

func (e *NoRunError) Error() string {
	if len(e.Projects) == 0 {
		return fmt.Sprintf("no workflow run %q: no runs under %s yet; list runs with `herdr-pi open --list`", e.Ref, e.Root)
	}
	msg := fmt.Sprintf("no workflow run %q under %s (searched %d project(s): %s)", e.Ref, e.Root, len(e.Projects), listed(e.Projects, 3))
	for _, d := range e.Unreadable {
		// The problem names the directory only when something else stands
		// in its place (permission denied does not): then the path goes first.
		problem := d.Problem
		if !strings.HasPrefix(problem, d.Path+" ") {
			problem = d.Path + ": " + problem
		}
		msg += "; not searched, and the run may be there: " + problem
	}
	if len(e.Near) > 0 {
		return msg + "; did you mean " + strings.Join(e.Near, " or ") + "? list runs with `herdr-pi open --list`"
	}
	return msg + "; list runs with `herdr-pi open --list`"
}

// BadRunIDError: the ref cannot be a run id at all (empty, a path, . or
// ..), so no store was searched for it.
type BadRunIDError struct {
	Ref string
}

func (e *BadRunIDError) Error() string {
	return fmt.Sprintf("%q is not a run id: a run id is the engine's id of a run, such as 8d443e51-8bad-4dd5-a3f1-b88332072948, or a unique prefix of one; it has no \"/\" and is not . or ..; list runs with `herdr-pi open --list`", e.Ref)
}

// listed joins names, at most max of them, each as [shown].
func listed(names []string, max int) string {
	more := ""
	if len(names) > max {
		names, more = names[:max], fmt.Sprintf(" and %d more", len(names)-max)
	}
	each := make([]string, len(names))
	for i, n := range names {
		each[i] = shown(n)
	}
	return strings.Join(each, ", ") + more
}

// shown is a name from the store (an agent, a run directory, a workflow) as
// an error lists it: as it is when every character prints, else quoted with
// Go's escapes, as the selector already is. Whatever wrote the store chose
// these names; a control character in one reads as \x1b in the message
// instead of acting on the terminal that prints it.
func shown(name string) string {
	for _, r := range name {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// AmbiguousRunError: an id prefix matches more than one run.
type AmbiguousRunError struct {
	Ref        string
	Candidates []*Run // most recent first
	Now        time.Time
	// Note, when set, says why the prefix is not settled as a command
	// usually settles it (close: by the caller's project).
	Note string
}

func (e *AmbiguousRunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run id prefix %q matches %d runs: ", e.Ref, len(e.Candidates))
	var each []string
	for _, r := range e.Candidates {
		workflow := r.Workflow()
		if r.Record == nil {
			workflow = "unreadable"
		}
		each = append(each, fmt.Sprintf("%s (%s, %s)", shown(r.ID), shown(workflow), Age(e.Now, r.Updated)))
	}
	b.WriteString(listed(each, maxListed))
	b.WriteString("; give more of the id")
	if e.Note != "" {
		b.WriteString(" (" + e.Note + ")")
	}
	return b.String()
}

// maxListed bounds how many candidates an error names.
const maxListed = 10

// NoAttemptError: the run has no attempt matching the selector.
type NoAttemptError struct {
	Run      string // short run id
	Selector Selector
	// Agent is set when the agent exists but lacks the attempt (the
	// number asked for, or any attempt when it is still queued).
	Agent string
	// Attempts are all attempts of the run as name#n.
	Attempts []string
}

func (e *NoAttemptError) Error() string {
	have := "the run has no attempts yet"
	switch n := len(e.Attempts); {
	case n > maxListed:
		have = fmt.Sprintf("attempts: %s; see `herdr-pi open --list %s`", listed(e.Attempts, maxListed), e.Run)
	case n > 0:
		have = "attempts: " + listed(e.Attempts, n)
	}
	switch {
	case e.Agent != "" && e.Selector.N != 0:
		return fmt.Sprintf("run %s: agent %q has no attempt #%d (%s)", e.Run, e.Agent, e.Selector.N, have)
	case e.Agent != "":
		return fmt.Sprintf("run %s: agent %q has not started an attempt yet (%s)", e.Run, e.Agent, have)
	}
	return fmt.Sprintf("run %s: no attempt named %q (%s)", e.Run, e.Selector.Agent, have)
}

// AmbiguousAgentError: the selector's name or label fits several agents.
type AmbiguousAgentError struct {
	Run      string
	Selector Selector
	Agents   []string // their ids
}

func (e *AmbiguousAgentError) Error() string {
	return fmt.Sprintf("run %s: %q names %d agents (%s); pick one by its id or number", e.Run, e.Selector.Agent, len(e.Agents), listed(e.Agents, maxListed))
}

// SelectorError: the attempt selector is malformed (a usage error).
type SelectorError struct {
	Text    string
	Problem string
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("attempt %q: %s; write an agent's name, label, number or id, optionally followed by #<attempt>", e.Text, e.Problem)
}

// SessionFileError: the attempt's session transcript cannot be used.
type SessionFileError struct {
	Run     string // short run id
	Attempt string // name#n
	Path    string // "" when the record names none
	Problem string
}

func (e *SessionFileError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("run %s: attempt %s records no session file (%s); pick another attempt from `herdr-pi open --list %s`", e.Run, e.Attempt, e.Problem, e.Run)
	}
	return fmt.Sprintf("run %s: attempt %s: session file %s %s; pick another attempt from `herdr-pi open --list %s`", e.Run, e.Attempt, e.Path, e.Problem, e.Run)
}

// Short is the problem without the run and the way to another attempt,
// and the file by its base name: for the owner's /workflow menu, whose
// person chose this attempt there and reads the answer in a notice area
// of a line or two, which a transcript's full path (Pi's sessions
// directory and more) would fill before the problem is said.
func (e *SessionFileError) Short() string {
	if e.Path == "" {
		return "no session file recorded (" + e.Problem + ")"
	}
	return "session file " + filepath.Base(e.Path) + " " + e.Problem
}

// NoCwdError: neither the attempt's cwd nor the run's cwd exists.
type NoCwdError struct {
	Run     string
	Attempt string
	Tried   []string
}

func (e *NoCwdError) Error() string {
	return fmt.Sprintf("run %s: attempt %s: no working directory left (tried %s); restore one of them to open it", e.Run, e.Attempt, strings.Join(e.Tried, ", "))
}

// FileError: a store file could not be read or is corrupt.
type FileError struct {
	Path    string
	Problem string
	Err     error // the underlying error, when there is one
}

func (e *FileError) Error() string {
	return fmt.Sprintf("%s: %s", e.Path, e.Problem)
}

func (e *FileError) Unwrap() error { return e.Err }

// Age says how long ago t was, coarsely ("12s ago", "5m ago", "3h ago",
// "4d ago"); "in the future" guards a clock that went back.
func Age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "age unknown"
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
