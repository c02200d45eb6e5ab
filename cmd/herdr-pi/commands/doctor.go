package commands

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/settings"
)

// doctorBudget bounds the whole doctor run; every check that talks to
// something or runs a program has its own, shorter deadline.
const doctorBudget = 8 * time.Second

type doctorOptions struct {
	JSON bool
	// Sections limits the run to these section ids; empty means all.
	Sections []string
}

func doctorCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check the environment: Herdr, Pi, settings, notifications, runtime files",
		ArgsUsage: "[SECTION…]",
		Description: "Checks what herdr-pi depends on and says, for anything wrong, how to fix it:\n" +
			"Herdr's variables, socket, protocol and pane; Pi and Node on PATH and their\n" +
			"versions; that the probe loads (no model call); herdr-pi's config files; the\n" +
			"notification channel and tmux passthrough; the private runtime directory and\n" +
			"the pane registry; Herdr's own Pi integration. Each check has a deadline.\n\n" +
			"SECTION limits the run to some of: herdr, pi, config, notify, runtime.\n" +
			"It exits 1 when something is broken (a row marked fail), 0 otherwise.\n" +
			"--json prints the same findings in the format of docs/doctor.md.\n" +
			"Colour only on a terminal, never with NO_COLOR set.\n\n" +
			"Examples:\n" +
			"  herdr-pi doctor\n" +
			"  herdr-pi doctor pi config\n" +
			"  herdr-pi doctor --json | jq '.checks[] | select(.status != \"ok\")'",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON (format: docs/doctor.md)"}},
		BashComplete: func(c *cli.Context) {
			completer(c.Command, func(*cli.Context, []string) []string { return doctor.SectionIDs() })(c)
		},
		Action: func(c *cli.Context) error {
			opts := &doctorOptions{JSON: c.Bool("json"), Sections: c.Args().Slice()}
			for _, id := range opts.Sections {
				if strings.HasPrefix(id, "-") {
					return usagef("doctor", "flags go before the sections: herdr-pi doctor %s %s", id, strings.Join(slices.DeleteFunc(slices.Clone(opts.Sections), func(s string) bool { return s == id }), " "))
				}
				if !slices.Contains(doctor.SectionIDs(), id) {
					return usagef("doctor", "no section %q (sections: %s)", id, strings.Join(doctor.SectionIDs(), ", "))
				}
			}
			return doctorRun(c.Context, f, opts)
		},
	}
}

func doctorRun(ctx context.Context, f *Factory, opts *doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, doctorBudget)
	defer cancel()
	rows := doctor.Run(ctx, doctorInput(f), doctor.Pick(opts.Sections))
	var err error
	if opts.JSON {
		err = writeJSON(f.IO.Out, doctor.NewReport(rows))
	} else {
		err = writeDoctorText(f.IO.Out, rows, lookFor(f.IO))
	}
	if err != nil {
		return err
	}
	if doctor.Count(rows)[doctor.Fail] > 0 {
		return silentExit(exitError)
	}
	return nil
}

// doctorInput is what the checks look at: this process's environment,
// paths and configuration, and notifications set up as wrap would set
// them up here.
func doctorInput(f *Factory) doctor.Input {
	env := f.IO.env()
	paths := f.Paths()
	cfg, cfgErr := f.Config()
	ncfg, _ := notifyConfig(cfg, paths)
	_, inHerdr := settings.HerdrEnv(env)
	n := notify.DoctorInput{Config: ncfg, Getenv: env.Get, InHerdr: inHerdr}
	if env.Get("TMUX") != "" {
		n.Tmux = tmux.Probe{Run: tmux.Exec{}}
	}
	return doctor.Input{Env: env, Paths: paths, Config: cfg, ConfigErr: cfgErr, Notify: n, ProgramTimeout: doctor.ProgramTimeout}
}

// writeDoctorText prints rows grouped by section, one line each, with the
// fix on the line below: plain text for pipes and files, coloured status
// words and bold section titles on a terminal, where long lines also wrap
// under their own column.
func writeDoctorText(w io.Writer, rows []doctor.Row, l look) error {
	var b strings.Builder
	for i, sec := range groupBySection(rows) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l.Render(l.Header, doctor.Title(sec[0].Section)) + "\n")
		width := 0
		for _, r := range sec {
			width = max(width, ansi.StringWidth(r.Name))
		}
		indent := 2 + 4 + 2 + width + 2
		for _, r := range sec {
			fmt.Fprintf(&b, "  %s  %s  %s\n", render.Pad(drawStatus(l, r.Status), 4), render.Pad(r.Name, width), l.Hang(r.Detail, indent))
			if r.Fix != "" {
				fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat(" ", indent), l.Render(l.FixLabel, "fix:"), l.Hang(r.Fix, indent+5))
			}
		}
	}
	c := doctor.Count(rows)
	fmt.Fprintf(&b, "\n%s, %s.\n", drawCount(l, c[doctor.Warn], "warning", l.Warn), drawCount(l, c[doctor.Fail], "failure", l.Fail))
	_, err := io.WriteString(w, b.String())
	return err
}

// groupBySection splits rows (already in section order) into runs of one
// section each.
func groupBySection(rows []doctor.Row) [][]doctor.Row {
	var groups [][]doctor.Row
	for i, r := range rows {
		if i == 0 || r.Section != rows[i-1].Section {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	return groups
}

// drawStatus colours a row status word.
func drawStatus(l look, s string) string {
	switch s {
	case doctor.OK:
		return l.Render(l.OK, s)
	case doctor.Warn:
		return l.Render(l.Warn, s)
	}
	return l.Render(l.Fail, s)
}

// drawCount says "n words", coloured when there is at least one.
func drawCount(l look, n int, word string, st lipgloss.Style) string {
	text := doctor.Plural(n, word)
	if n == 0 {
		return text
	}
	return l.Render(st, text)
}
