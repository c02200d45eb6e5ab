package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/settings"
)

// doctorFormat names the shape of `doctor --json`, documented in
// docs/doctor.md and docs/doctor.schema.json. It changes only when a
// field's meaning changes.
const doctorFormat = "herdr-pi.doctor/1"

// doctorBudget bounds the whole doctor run; every check that talks to
// something or runs a program has its own, shorter deadline.
const doctorBudget = 8 * time.Second

// programTimeout bounds each program doctor runs (pi --version, node).
// Pi 0.73.1 needs about 1.6 s to print its version on a quiet machine.
const programTimeout = 5 * time.Second

// Row statuses. A fail makes doctor exit 1; a warn is worth reading but
// herdr-pi still works.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
)

// checkRow is one finding of the doctor.
type checkRow struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix"`
}

// doctorEnv is what checks may look at: the environment, the resolved
// paths and the configuration, all as the command was given them.
type doctorEnv struct {
	Env    settings.Env
	Paths  settings.Paths
	Config settings.Config
	// ConfigErr lists the problems of herdr-pi's config.toml (Config is
	// then the defaults).
	ConfigErr error
	// ProgramTimeout bounds each program a check runs.
	ProgramTimeout time.Duration
}

// doctorCheck inspects one area and returns its findings in a fixed order.
type doctorCheck func(ctx context.Context, d doctorEnv) []checkRow

// doctorSection is one area of the doctor: its stable id (the rows'
// section field, and what `herdr-pi doctor SECTION` picks), its title and
// its check.
type doctorSection struct {
	ID, Title string
	Check     doctorCheck
}

// doctorSections in the order they are shown (docs/doctor.md documents
// each row).
var doctorSections = []doctorSection{
	{"herdr", "Herdr", herdrChecks},
	{"pi", "Pi", piChecks},
	{"config", "Configuration", configChecks},
	{"notify", "Notifications", notifyChecks},
	{"runtime", "Runtime", runtimeChecks},
}

type doctorOptions struct {
	JSON bool
	// Sections limits the run to these section ids; empty means all.
	Sections []string
}

func doctorCommand(io IO) *cli.Command {
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
		Action: func(c *cli.Context) error {
			opts := &doctorOptions{JSON: c.Bool("json"), Sections: c.Args().Slice()}
			for _, id := range opts.Sections {
				if strings.HasPrefix(id, "-") {
					return usagef("doctor", "flags go before the sections: herdr-pi doctor %s %s", id, strings.Join(slices.DeleteFunc(slices.Clone(opts.Sections), func(s string) bool { return s == id }), " "))
				}
				if !slices.ContainsFunc(doctorSections, func(s doctorSection) bool { return s.ID == id }) {
					return usagef("doctor", "no section %q (sections: %s)", id, strings.Join(sectionIDs(), ", "))
				}
			}
			return doctorRun(c.Context, io, opts)
		},
	}
}

func sectionIDs() []string {
	ids := make([]string, len(doctorSections))
	for i, s := range doctorSections {
		ids[i] = s.ID
	}
	return ids
}

func doctorRun(ctx context.Context, io IO, opts *doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, doctorBudget)
	defer cancel()
	env := io.env()
	paths := settings.Resolve(env)
	cfg, cfgErr := settings.LoadConfig(paths.ConfigFile, paths.Pretty(paths.ConfigFile))
	d := doctorEnv{Env: env, Paths: paths, Config: cfg, ConfigErr: cfgErr, ProgramTimeout: programTimeout}
	rows := runSections(ctx, d, pickSections(opts.Sections))
	var err error
	if opts.JSON {
		err = writeDoctorJSON(io.Out, rows)
	} else {
		err = writeDoctorText(io.Out, rows, lookFor(io))
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Status == statusFail {
			return silentExit(exitError)
		}
	}
	return nil
}

func pickSections(ids []string) []doctorSection {
	if len(ids) == 0 {
		return doctorSections
	}
	var out []doctorSection
	for _, s := range doctorSections {
		if slices.Contains(ids, s.ID) {
			out = append(out, s)
		}
	}
	return out
}

// runSections runs the sections side by side (the slow ones run programs
// and wait on sockets) and returns their rows in section order. It owns
// one goroutine per section and waits for all of them; each check honours
// ctx, so the wait is bounded by the doctor's budget.
func runSections(ctx context.Context, d doctorEnv, secs []doctorSection) []checkRow {
	results := make([][]checkRow, len(secs))
	var wg sync.WaitGroup
	for i, s := range secs {
		wg.Go(func() {
			rows := s.Check(ctx, d)
			for j := range rows {
				rows[j].Section = s.ID
			}
			results[i] = rows
		})
	}
	wg.Wait()
	var rows []checkRow
	for _, r := range results {
		rows = append(rows, r...)
	}
	return rows
}

type doctorReport struct {
	Format string         `json:"format"`
	OK     bool           `json:"ok"`
	Counts map[string]int `json:"counts"`
	Checks []checkRow     `json:"checks"`
}

func countRows(rows []checkRow) map[string]int {
	c := map[string]int{statusOK: 0, statusWarn: 0, statusFail: 0}
	for _, r := range rows {
		c[r.Status]++
	}
	return c
}

func writeDoctorJSON(w io.Writer, rows []checkRow) error {
	if rows == nil {
		rows = []checkRow{}
	}
	counts := countRows(rows)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doctorReport{Format: doctorFormat, OK: counts[statusFail] == 0, Counts: counts, Checks: rows})
}

// writeDoctorText prints rows grouped by section, one line each, with the
// fix on the line below: plain text for pipes and files, coloured status
// words and bold section titles on a terminal, where long lines also wrap
// under their own column.
func writeDoctorText(w io.Writer, rows []checkRow, l look) error {
	var b strings.Builder
	for i, sec := range groupBySection(rows) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l.render(l.header, sectionTitle(sec[0].Section)) + "\n")
		width := 0
		for _, r := range sec {
			width = max(width, ansi.StringWidth(r.Name))
		}
		indent := 2 + 4 + 2 + width + 2
		for _, r := range sec {
			fmt.Fprintf(&b, "  %s  %s  %s\n", pad(l.status(r.Status), 4), pad(r.Name, width), l.hang(r.Detail, indent))
			if r.Fix != "" {
				fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat(" ", indent), l.render(l.fixLabel, "fix:"), l.hang(r.Fix, indent+5))
			}
		}
	}
	c := countRows(rows)
	fmt.Fprintf(&b, "\n%s, %s.\n", l.count(c[statusWarn], "warning", l.warn), l.count(c[statusFail], "failure", l.fail))
	_, err := io.WriteString(w, b.String())
	return err
}

// groupBySection splits rows (already in section order) into runs of one
// section each.
func groupBySection(rows []checkRow) [][]checkRow {
	var groups [][]checkRow
	for i, r := range rows {
		if i == 0 || r.Section != rows[i-1].Section {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	return groups
}

// status colours a row status word.
func (l look) status(s string) string {
	switch s {
	case statusOK:
		return l.render(l.ok, s)
	case statusWarn:
		return l.render(l.warn, s)
	}
	return l.render(l.fail, s)
}

// count says "n words", coloured when there is at least one.
func (l look) count(n int, word string, st lipgloss.Style) string {
	text := plural(n, word)
	if n == 0 {
		return text
	}
	return l.render(st, text)
}

func sectionTitle(id string) string {
	for _, s := range doctorSections {
		if s.ID == id {
			return s.Title
		}
	}
	return id
}

func plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y"):
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}
