package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/settings"
)

// doctorFormat names the shape of `doctor --json`, documented in
// docs/doctor.md. It changes only when a field's meaning changes.
const doctorFormat = "herdr-pi.doctor/1"

// doctorBudget bounds the whole doctor run; every check that talks to
// something has its own, shorter deadline.
const doctorBudget = 10 * time.Second

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
}

// doctorCheck inspects one area and returns its findings in a fixed order.
// A section is one check function; new sections (Pi, config,
// notifications, tmux, …) are added to doctorChecks.
type doctorCheck func(ctx context.Context, d doctorEnv) []checkRow

var doctorChecks = []doctorCheck{herdrChecks}

type doctorOptions struct {
	JSON bool
}

func doctorCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the environment: Herdr, Pi, settings, notifications",
		Description: "Checks what herdr-pi depends on and says, for anything wrong, how to fix it.\n" +
			"It exits 1 when something is broken (a row marked fail), 0 otherwise.\n" +
			"--json prints the same findings in the format described in docs/doctor.md.\n\n" +
			"Examples:\n" +
			"  herdr-pi doctor\n" +
			"  herdr-pi doctor --json",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON (format: docs/doctor.md)"}},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("doctor", "takes no arguments (got %q)", c.Args().First())
			}
			return doctorRun(c.Context, io, &doctorOptions{JSON: c.Bool("json")})
		},
	}
}

func doctorRun(ctx context.Context, io IO, opts *doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, doctorBudget)
	defer cancel()
	env := io.env()
	paths := settings.Resolve(env)
	cfg, _ := settings.LoadConfig(paths.ConfigFile, paths.Pretty(paths.ConfigFile))
	d := doctorEnv{Env: env, Paths: paths, Config: cfg}
	var rows []checkRow
	for _, check := range doctorChecks {
		rows = append(rows, check(ctx, d)...)
	}
	var err error
	if opts.JSON {
		err = writeDoctorJSON(io.Out, rows)
	} else {
		err = writeDoctorText(io.Out, rows)
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
// fix on the line below. Plain text: styling comes with lipgloss later.
func writeDoctorText(w io.Writer, rows []checkRow) error {
	var b strings.Builder
	width := 0
	for _, r := range rows {
		width = max(width, len(r.Name))
	}
	section := ""
	for _, r := range rows {
		if r.Section != section {
			if section != "" {
				b.WriteString("\n")
			}
			section = r.Section
			b.WriteString(sectionTitle(section) + "\n")
		}
		fmt.Fprintf(&b, "  %-4s  %-*s  %s\n", r.Status, width, r.Name, r.Detail)
		if r.Fix != "" {
			fmt.Fprintf(&b, "        %*s  fix: %s\n", width, "", r.Fix)
		}
	}
	c := countRows(rows)
	fmt.Fprintf(&b, "\n%s, %s.\n", plural(c[statusWarn], "warning"), plural(c[statusFail], "failure"))
	_, err := io.WriteString(w, b.String())
	return err
}

func sectionTitle(s string) string {
	switch s {
	case "herdr":
		return "Herdr"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
