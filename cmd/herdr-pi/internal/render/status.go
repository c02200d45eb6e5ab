package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// Status is the human form: a column of labelled lines, then the
// open reasons as a small table. Labels and keys come from other programs
// (extensions, hooks): control characters are made harmless before they
// reach the terminal. self is the asking command's build: a wrapper that
// runs another (herdr-pi was upgraded under it) is named with both and
// the way to the new one; "" compares nothing.
func Status(st control.Status, self string, now time.Time, l Look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", Pad(l.Render(l.Bold, label), 7), l.Hang(value, 9))
	}
	line("state", stateLine(st, now, l))
	agent := Clean(st.Agent)
	if agent == "" {
		agent = l.Render(l.Faint, "unnamed")
	}
	if st.ChildPID > 0 {
		agent += fmt.Sprintf(" (pid %d)", st.ChildPID)
	}
	if st.Label != "" {
		// What notifications from this pane say, `herdr-pi notify`'s too.
		agent += fmt.Sprintf(", label %q", Clean(st.Label))
	}
	line("agent", agent)
	if st.ProbeConnected {
		line("probe", "connected: Pi's own events arrive")
	} else {
		line("probe", "not connected: screen, session file and Pi's status reports decide")
	}
	session := l.Render(l.Faint, "none yet")
	if st.SessionFile != "" {
		session = Clean(st.SessionFile)
	}
	line("session", session)
	line("wrapper", wrapperLine(st, self, l))
	if st.Herdr != "" {
		line("herdr", Clean(st.Herdr))
	}
	for i, c := range st.Notifications {
		label := ""
		if i == 0 {
			label = "notify"
		}
		line(label, notifyLine(c, l))
	}
	if len(st.Reasons) == 0 {
		line("reasons", "none open")
		return b.String()
	}
	line("reasons", fmt.Sprintf("%d open", len(st.Reasons)))
	b.WriteString(reasonTable(st.Reasons, now, l))
	return b.String()
}

// wrapperLine is the wrapper's pid, and when it runs another build than
// self, both builds in yellow and what to do.
func wrapperLine(st control.Status, self string, l Look) string {
	s := fmt.Sprintf("pid %d", st.WrapperPID)
	if self == "" || st.Build == self {
		return s
	}
	runs := "an older herdr-pi (from before status named builds)"
	if st.Build != "" {
		runs = "herdr-pi " + Clean(st.Build)
	}
	return s + ", " + l.Render(l.Warn, fmt.Sprintf("%s, not this herdr-pi %s", runs, Clean(self))) +
		": quit the agent and start it again under herdr-pi wrap to run this one"
}

// notifyLine is one notification channel: "ntfy: failing, 0 sent, 2
// failed, last http 401: unauthorized (what to change)". A channel that
// fails now is marked red, one whose latest notification was not shown
// for another reason (Herdr's toasts off) yellow.
func notifyLine(c control.NotifyChannel, l Look) string {
	name := Clean(c.Channel)
	if c.Sent == 0 && c.Failed == 0 {
		return name + ": nothing sent yet"
	}
	out := name + ": "
	switch {
	case c.Failing:
		out += l.Render(l.Fail, "failing") + ", "
	case c.Hint != "":
		out += l.Render(l.Warn, "not shown") + ", "
	}
	out += fmt.Sprintf("%d sent", c.Sent)
	if c.Failed > 0 {
		out += fmt.Sprintf(", %d failed", c.Failed)
	}
	if last := Clean(c.Last); last != "" {
		out += ", last " + last
	}
	if hint := Clean(c.Hint); hint != "" {
		out += " (" + hint + ")"
	}
	return out
}

// stateLine is "blocked for 2m13s (since 14:02:11): approve deploy", the
// state coloured the way Herdr shows it, then the message it is reported
// with (blocked: the label of the reason the report names).
func stateLine(st control.Status, now time.Time, l Look) string {
	state := Clean(st.State)
	out := l.Render(stateStyle(state, l), state)
	if !st.Since.IsZero() {
		out = fmt.Sprintf("%s for %s %s", out, Age(now.Sub(st.Since)), l.Render(l.Faint, "(since "+Clock(st.Since, now)+")"))
	}
	if msg := Clean(st.Message); msg != "" {
		out += ": " + msg
	}
	return out
}

func stateStyle(state string, l Look) lipgloss.Style {
	switch state {
	case "idle":
		return l.OK
	case "working":
		return l.Warn
	case "blocked":
		return l.Fail
	}
	return l.Faint
}

// reasonTable lists open reasons: kind, label, key when it says more than
// the label, how long it has been open, and the process holding a wait
// that has one (`waiting start --pid`).
func reasonTable(reasons []control.Reason, now time.Time, l Look) string {
	type cells struct{ kind, label, key, age string }
	rows := make([]cells, len(reasons))
	var wKind, wLabel, wKey int
	for i, r := range reasons {
		c := cells{kind: Clean(r.Kind), label: Clean(r.Label), key: Clean(r.Key)}
		if c.label == "" {
			c.label = c.key
		}
		if c.key == c.label {
			c.key = ""
		}
		if !r.Since.IsZero() {
			c.age = "for " + Age(now.Sub(r.Since))
		}
		if r.HolderPID > 0 {
			c.age = strings.TrimPrefix(c.age+fmt.Sprintf(", held by pid %d", r.HolderPID), ", ")
		}
		rows[i] = c
		wKind, wLabel, wKey = max(wKind, ansi.StringWidth(c.kind)), max(wLabel, ansi.StringWidth(c.label)), max(wKey, ansi.StringWidth(c.key))
	}
	var b strings.Builder
	for _, c := range rows {
		cols := []string{Pad(c.kind, wKind), Pad(c.label, wLabel)}
		if wKey > 0 {
			cols = append(cols, Pad(l.Render(l.Faint, c.key), wKey))
		}
		cols = append(cols, c.age)
		b.WriteString(strings.TrimRight("  "+strings.Join(cols, "  "), " ") + "\n")
	}
	return b.String()
}
