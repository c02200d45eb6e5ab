package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// ProjectName is the run's project as a person knows it: its directory
// (home as ~), else the storage key without its hash.
func ProjectName(o *handoff.Listing, r *handoff.ListedRun) string {
	name := ""
	if r.ProjectDir != "" {
		name = o.Paths.Pretty(r.ProjectDir)
	} else {
		name = projectHash().ReplaceAllString(r.Project, "")
	}
	if r.Here {
		name += " (here)"
	}
	return Clean(name)
}

// drawRunState is the run's state, or why it has none.
func RunState(r *handoff.ListedRun) string {
	switch {
	case r.Problem != "":
		return "unreadable"
	case r.State == "":
		return "unknown"
	}
	return Clean(r.State)
}

// drawAttemptTag is an attempt as the runs table shows it: name#n, with the
// drawAction when it is not a plain open.
func drawAttemptTag(l Look, at *handoff.ListedAttempt) string {
	name := Clean(at.Name)
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

// RunTable is `open --list`: a run a row, most recent first, with
// its attempts. On a terminal the table fits the width (the widest cells
// wrap); elsewhere a row stays one line, for grep.
func RunTable(o *handoff.Listing, l Look) string {
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
			cell = l.Render(l.Fail, Clean(r.Note))
		case cell == "":
			cell = l.Render(l.Faint, "no attempt yet")
		}
		rows = append(rows, []string{Clean(r.Ref), Clean(r.Workflow), drawRunState(l, r), AgeOf(o.Now, r.UpdatedAt),
			ProjectName(o, r), cell})
	}
	var b strings.Builder
	b.WriteString(l.Table([]Column{{Header: "RUN"}, {Header: "WORKFLOW"}, {Header: "STATE"}, {Header: "UPDATED"},
		{Header: "PROJECT", Flex: true, Spare: true}, {Header: "ATTEMPTS", Flex: true}}, rows))
	b.WriteString("\n" + l.Hang(fmt.Sprintf("%s in %s, most recent first. herdr-pi open --list <run> shows what open can do with each attempt.",
		Plural(len(o.Runs), "run"), o.Paths.Pretty(o.Store)), 0) + "\n")
	return b.String()
}

// RunDetail is `open --list <run>`: the run, then every attempt of
// its agents with what open can do with it.
func RunDetail(o *handoff.Listing, r *handoff.ListedRun, l Look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", Pad(l.Render(l.Bold, label), 8), l.Hang(value, 10))
	}
	line("run", Clean(r.ID))
	line("workflow", Clean(r.Workflow))
	line("state", fmt.Sprintf("%s, updated %s", drawRunState(l, r), AgeOf(o.Now, r.UpdatedAt)))
	line("project", ProjectName(o, r))
	line("owner", ownerLine(r, l))
	if r.Error != nil {
		line("error", Clean(strings.TrimPrefix(r.Error.Code+": "+r.Error.Message, ": ")))
	}
	var rows [][]string
	seen := map[string]bool{}
	for _, ag := range r.Agents {
		if len(ag.Attempts) == 0 {
			rows = append(rows, []string{Clean(ag.Name), Clean(ag.State), "", "", l.Render(l.Faint, handoff.ActionNone), "no attempt yet"})
		}
		for j := range ag.Attempts {
			at := &ag.Attempts[j]
			seen[at.Action] = true
			rows = append(rows, []string{attemptCell(r, &ag, at), Clean(at.State), Clean(at.Model), AttemptStatus(at), drawAction(l, at.Action), Clean(at.Note)})
		}
	}
	if len(rows) == 0 {
		b.WriteString("\nNo agent has started in this run yet.\n")
		return b.String()
	}
	b.WriteString("\n" + l.Table([]Column{{Header: "ATTEMPT"}, {Header: "STATE"}, {Header: "MODEL", Flex: true, Spare: true},
		{Header: "STATUS"}, {Header: "ACTION"}, {Header: "NOTE", Flex: true}}, rows) + "\n")
	// Each action once, with a command for its first attempt.
	example := map[string]string{}
	for _, ag := range r.Agents {
		for _, at := range ag.Attempts {
			if _, ok := example[at.Action]; !ok {
				example[at.Action] = shellword.Word(Clean(r.Ref)) + " " + hintSelector(r, &ag, &at)
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
			text = "its owner Pi ended before the attempt did; herdr-pi open " + example[act] + " forks what it left"
		case handoff.ActionLive:
			text = "a running Pi owns it: herdr-pi open " + example[act] + " hands it off to a pane and back when that Pi runs under herdr-pi wrap (else says so); herdr-pi open --inspect " + example[act] + " forks what is there so far"
		case handoff.ActionNone:
			text = "nothing to open (NOTE says why)"
		}
		fmt.Fprintf(&b, "%s  %s\n", Pad(drawAction(l, act), 4), l.Hang(text, 6))
	}
	return b.String()
}

func drawRunState(l Look, r *handoff.ListedRun) string {
	s := RunState(r)
	if s == "unreadable" {
		return l.Render(l.Fail, s)
	}
	return s
}

func drawAction(l Look, a string) string {
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

// AttemptStatus says whether anything still runs in the attempt.
func AttemptStatus(at *handoff.ListedAttempt) string {
	switch {
	case at.Settled:
		return "settled"
	case at.Live:
		return fmt.Sprintf("live (pid %d)", at.OwnerPID)
	case at.Interrupted:
		// Its owner went; a Pi of the session that runs now (the owner
		// line) runs none of it until the run is resumed.
		return "run interrupted"
	case at.OwnerGone && at.OwnerPID > 0:
		// Its lease is left: the owner was killed or crashed.
		return fmt.Sprintf("owner gone (pid %d)", at.OwnerPID)
	case at.OwnerGone:
		// No lease: the owner exited (removing it) without the attempt
		// being settled; "gone" would say it was killed.
		return "owner exited"
	}
	return "unknown"
}

func ownerLine(r *handoff.ListedRun, l Look) string {
	switch {
	case r.Owner == nil:
		return "none: the Pi session that ran it has exited"
	case r.Owner.Problem != "":
		return l.Render(l.Fail, Clean(r.Owner.Problem))
	case r.Owner.Alive:
		return fmt.Sprintf("pid %d, running", r.Owner.PID)
	}
	return fmt.Sprintf("pid %d, gone (killed or crashed: its lease is left)", r.Owner.PID)
}

func AgeOf(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return store.Age(now, t)
}

func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// projectHash is the "-<12 hex digits>" a project key ends with.
var projectHash = lazyre.New(`-[0-9a-f]{12}$`)

// hintSelector is an attempt's selector as a hint's command gives it, one
// word to paste into a shell. An agent's name is whatever the workflow
// gave it: one with a space splits, one with $(…) or ; runs, so it is
// quoted; one with characters the terminal must not get (shown as
// spaces, which open would not find) gives way to the agent's id, which
// the engine makes and open takes as well.
func hintSelector(r *handoff.ListedRun, ag *handoff.ListedAgent, at *handoff.ListedAttempt) string {
	sel := shortSelector(r, ag, at)
	if Clean(sel) != sel && ag.ID != "" {
		sel = fmt.Sprintf("%s#%d", ag.ID, at.N)
	}
	return shellword.Word(Clean(sel))
}

// attemptCell is an attempt's ATTEMPT cell: its name#n, or, when two
// agents of the run share that name (so both rows would read api#1), the
// selector open takes for it, with the name after it: "2#1 (api)".
func attemptCell(r *handoff.ListedRun, ag *handoff.ListedAgent, at *handoff.ListedAttempt) string {
	if !byID(ag, at) {
		return Clean(at.Name)
	}
	return Clean(shortSelector(r, ag, at)) + " (" + Clean(ag.Name) + ")"
}

// byID says whether the listing's selector for at names its agent by id
// (id#n): the agent's name does not single it out in its run.
func byID(ag *handoff.ListedAgent, at *handoff.ListedAttempt) bool {
	return ag.ID != "" && at.Selector == fmt.Sprintf("%s#%d", ag.ID, at.N)
}

// shortSelector is the listing's selector for at, but for one that names
// the agent by its id (a run id and more, some fifty characters): the
// agent's number#n instead, which open takes as well (the n of the id
// "<runId>:n"), when nothing else in the run would take that number
// first — open tries an agent's id, name and label before its number.
func shortSelector(r *handoff.ListedRun, ag *handoff.ListedAgent, at *handoff.ListedAttempt) string {
	if !byID(ag, at) {
		return at.Selector
	}
	n := (&store.AgentRecord{ID: ag.ID}).Number()
	if n == 0 {
		return at.Selector
	}
	num := strconv.Itoa(n)
	for i := range r.Agents {
		other := &r.Agents[i]
		if other.ID == num || other.Name == num || other.Label == num ||
			(other.ID != ag.ID && (&store.AgentRecord{ID: other.ID}).Number() == n) {
			return at.Selector
		}
	}
	return fmt.Sprintf("%s#%d", num, at.N)
}
