package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
)

// statusFormat names the shape of `status --json` (docs/status.md,
// docs/status.schema.json). It changes only when a field's meaning changes.
const statusFormat = "herdr-pi.status/1"

type statusOptions struct {
	JSON bool
	// Now is the clock ages are measured with.
	Now func() time.Time
}

func statusCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the wrapped agent's state and open reasons in this pane",
		Description: "Asks the herdr-pi wrapper of this pane (or of the agent running this command)\n" +
			"what it knows: the state (idle, working, blocked or unknown) and for how long, the\n" +
			"agent, every open reason it is blocked (kind, label, key, age), the session file\n" +
			"and whether the Pi probe is connected. Exits 1, saying how to start one, when no\n" +
			"wrapper runs here.\n" +
			"--json prints one object in the format of docs/status.md. Colour only on a\n" +
			"terminal, never with NO_COLOR set.\n\n" +
			"Examples:\n" +
			"  herdr-pi status\n" +
			"  herdr-pi status --json | jq -r .state",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON (format: docs/status.md)"}},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("status", "unexpected argument %q", c.Args().First())
			}
			return statusRun(c.Context, f, &statusOptions{JSON: c.Bool("json"), Now: time.Now})
		},
	}
}

// statusReport is `status --json`: the wrapper's answer under a format tag.
type statusReport struct {
	Format string `json:"format"`
	control.Status
}

// statusFailure is `status --json` when no wrapper answered: the same
// format tag and an error object instead of the state, so a script reading
// stdout always gets JSON.
type statusFailure struct {
	Format string `json:"format"`
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func statusRun(ctx context.Context, f *Factory, opts *statusOptions) error {
	io := f.IO
	st, err := askStatus(ctx, f)
	if err != nil {
		if !opts.JSON {
			return fmt.Errorf("status: %w", err)
		}
		fail := statusFailure{Format: statusFormat}
		fail.Error.Code, fail.Error.Message = unreachable, err.Error()
		var we *wrapperError
		if errors.As(err, &we) {
			fail.Error.Code = we.Code
		}
		if err := writeJSON(io.Out, fail); err != nil {
			return err
		}
		return silentExit(exitError)
	}
	if opts.JSON {
		return writeJSON(io.Out, statusReport{Format: statusFormat, Status: st})
	}
	_, err = fmt.Fprint(io.Out, renderStatus(st, opts.Now(), lookFor(io)))
	return err
}

// askStatus asks the wrapper of this pane for its status.
func askStatus(ctx context.Context, f *Factory) (control.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := dialWrapper(ctx, f)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return control.Status{}, err
	}
	if st.Reasons == nil {
		st.Reasons = []control.Reason{}
	}
	if st.State == "" {
		st.State = "unknown"
	}
	return st, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// renderStatus is the human form: a column of labelled lines, then the
// open reasons as a small table. Labels and keys come from other programs
// (extensions, hooks): control characters are made harmless before they
// reach the terminal.
func renderStatus(st control.Status, now time.Time, l look) string {
	var b strings.Builder
	line := func(label, value string) {
		fmt.Fprintf(&b, "%s  %s\n", render.Pad(l.Render(l.Bold, label), 7), l.Hang(value, 9))
	}
	line("state", stateLine(st, now, l))
	agent := clean(st.Agent)
	if agent == "" {
		agent = l.Render(l.Faint, "unnamed")
	}
	if st.ChildPID > 0 {
		agent += fmt.Sprintf(" (pid %d)", st.ChildPID)
	}
	line("agent", agent)
	if st.ProbeConnected {
		line("probe", "connected: Pi's own events arrive")
	} else {
		line("probe", "not connected: the state comes from the screen and the session file")
	}
	session := l.Render(l.Faint, "none yet")
	if st.SessionFile != "" {
		session = clean(st.SessionFile)
	}
	line("session", session)
	line("wrapper", fmt.Sprintf("pid %d", st.WrapperPID))
	if st.Herdr != "" {
		line("herdr", clean(st.Herdr))
	}
	if len(st.Reasons) == 0 {
		line("reasons", "none open")
		return b.String()
	}
	line("reasons", fmt.Sprintf("%d open", len(st.Reasons)))
	b.WriteString(reasonTable(st.Reasons, now, l))
	return b.String()
}

// stateLine is "blocked for 2m13s (since 14:02:11)", the state coloured
// the way Herdr shows it.
func stateLine(st control.Status, now time.Time, l look) string {
	state := clean(st.State)
	styled := l.Render(stateStyle(state, l), state)
	if st.Since.IsZero() {
		return styled
	}
	return fmt.Sprintf("%s for %s %s", styled, age(now.Sub(st.Since)), l.Render(l.Faint, "(since "+clock(st.Since, now)+")"))
}

func stateStyle(state string, l look) lipgloss.Style {
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
// the label, and how long it has been open.
func reasonTable(reasons []control.Reason, now time.Time, l look) string {
	type cells struct{ kind, label, key, age string }
	rows := make([]cells, len(reasons))
	var wKind, wLabel, wKey int
	for i, r := range reasons {
		c := cells{kind: clean(r.Kind), label: clean(r.Label), key: clean(r.Key)}
		if c.label == "" {
			c.label = c.key
		}
		if c.key == c.label {
			c.key = ""
		}
		if !r.Since.IsZero() {
			c.age = "for " + age(now.Sub(r.Since))
		}
		rows[i] = c
		wKind, wLabel, wKey = max(wKind, ansi.StringWidth(c.kind)), max(wLabel, ansi.StringWidth(c.label)), max(wKey, ansi.StringWidth(c.key))
	}
	var b strings.Builder
	for _, c := range rows {
		cols := []string{render.Pad(c.kind, wKind), render.Pad(c.label, wLabel)}
		if wKey > 0 {
			cols = append(cols, render.Pad(l.Render(l.Faint, c.key), wKey))
		}
		cols = append(cols, c.age)
		b.WriteString(strings.TrimRight("  "+strings.Join(cols, "  "), " ") + "\n")
	}
	return b.String()
}

// age says a duration the way people read it: 45s, 2m13s, 1h02m, 3d4h.
func age(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// clock is the wall time of t in now's zone, with the date once it is not
// today.
func clock(t, now time.Time) string {
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// clean replaces control characters (ESC, BEL, C1, newlines) with spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
}
