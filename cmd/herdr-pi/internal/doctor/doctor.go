// Package doctor holds the checks of `herdr-pi doctor`: what herdr-pi
// depends on (Herdr, Pi and Node, its files, the notification channel, the
// runtime directory), each finding with the way to fix it. It only looks:
// it changes nothing on the machine (what a check writes to try it, the
// probe or a file in the runtime directory, it removes), and every check
// has a deadline. How the findings are printed is the command's business,
// not this package's.
package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Format names the shape of `doctor --json`, documented in docs/doctor.md
// and docs/doctor.schema.json. It changes only when a field's meaning
// changes.
const Format = "herdr-pi.doctor/1"

// ProgramTimeout bounds each program doctor runs (pi --version, node).
// Pi 0.73.1 needs about 1.6 s to print its version on a quiet machine.
const ProgramTimeout = 5 * time.Second

// Row statuses. A fail makes doctor exit 1; a warn is worth reading but
// herdr-pi still works.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Row is one finding.
type Row struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix"`
}

// Input is what checks may look at: the environment, the resolved paths
// and the configuration, all as the command was given them.
type Input struct {
	Env    settings.Env
	Paths  settings.Paths
	Config settings.Config
	// ConfigErr lists the problems of herdr-pi's config.toml (Config is
	// then the defaults).
	ConfigErr error
	// Notify is how notifications are set up here (the merged
	// notification config, the environment, tmux), for the notify section.
	Notify notify.DoctorInput
	// ProgramTimeout bounds each program a check runs.
	ProgramTimeout time.Duration
	// Room says whether a directory can take a wrapper's files
	// (control.CheckRoom when nil; tests make a filesystem look full).
	Room func(dir string, write bool) error
	// Dir is the directory doctor runs in: a project whose .pi directory
	// Pi reads too (its settings.json and extensions). "" looks at the
	// agent directory alone.
	Dir string
}

// room is d.Room, or the real check.
func (d Input) room(dir string, write bool) error {
	if d.Room != nil {
		return d.Room(dir, write)
	}
	return control.CheckRoom(dir, write)
}

// Section is one area of the doctor: its stable id (the rows' section
// field, and what `herdr-pi doctor SECTION` picks), its title and its
// check, which returns its findings in a fixed order.
type Section struct {
	ID, Title string
	Check     func(ctx context.Context, d Input) []Row
}

// Sections in the order they are shown (docs/doctor.md documents each row).
var Sections = []Section{
	{"herdr", "Herdr", herdrChecks},
	{"pi", "Pi", piChecks},
	{"config", "Configuration", configChecks},
	{"notify", "Notifications", notifyChecks},
	{"runtime", "Runtime", runtimeChecks},
}

// SectionIDs are the ids of Sections, in order.
func SectionIDs() []string {
	ids := make([]string, len(Sections))
	for i, s := range Sections {
		ids[i] = s.ID
	}
	return ids
}

// Title is the title of the section with this id (the id itself when
// there is none).
func Title(id string) string {
	for _, s := range Sections {
		if s.ID == id {
			return s.Title
		}
	}
	return id
}

// Pick is the sections with these ids, in their usual order; all of them
// when ids is empty.
func Pick(ids []string) []Section {
	if len(ids) == 0 {
		return Sections
	}
	var out []Section
	for _, s := range Sections {
		if slices.Contains(ids, s.ID) {
			out = append(out, s)
		}
	}
	return out
}

// Run runs the sections side by side (the slow ones run programs and wait
// on sockets) and returns their rows in section order. It owns one
// goroutine per section and waits for all of them; each check honours
// ctx, so the wait is bounded by the caller's deadline.
func Run(ctx context.Context, in Input, secs []Section) []Row {
	results := make([][]Row, len(secs))
	var wg sync.WaitGroup
	for i, s := range secs {
		wg.Go(func() {
			rows := s.Check(ctx, in)
			for j := range rows {
				rows[j].Section = s.ID
			}
			results[i] = rows
		})
	}
	wg.Wait()
	var rows []Row
	for _, r := range results {
		rows = append(rows, r...)
	}
	return rows
}

// Report is `doctor --json`.
type Report struct {
	Format string         `json:"format"`
	OK     bool           `json:"ok"`
	Counts map[string]int `json:"counts"`
	Checks []Row          `json:"checks"`
}

// NewReport sums rows up.
func NewReport(rows []Row) Report {
	if rows == nil {
		rows = []Row{}
	}
	counts := Count(rows)
	return Report{Format: Format, OK: counts[Fail] == 0, Counts: counts, Checks: rows}
}

// Count is the number of rows of each status.
func Count(rows []Row) map[string]int {
	c := map[string]int{OK: 0, Warn: 0, Fail: 0}
	for _, r := range rows {
		c[r.Status]++
	}
	return c
}

// notifyChecks is the notification section. notify grades a row "info"
// when it only says how things are; doctor's rows are ok, warn or fail,
// and such a row is ok.
func notifyChecks(ctx context.Context, d Input) []Row {
	// tmux answers in milliseconds; a hung server must not hold doctor for
	// its whole budget.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	in := d.Notify
	in.ConfigFile = d.Paths.Pretty(d.Paths.ConfigFile)
	if d.ConfigErr != nil {
		in.Rejected = d.Paths.Pretty(d.Paths.ConfigFile)
	}
	checks := notify.Doctor(ctx, in)
	rows := make([]Row, len(checks))
	for i, c := range checks {
		status := string(c.Status)
		if c.Status == notify.CheckInfo {
			status = OK
		}
		rows[i] = Row{Name: c.Name, Status: status, Detail: c.Detail, Fix: c.Fix}
	}
	return rows
}

// Plural says "n words" ("1 entry", "2 entries").
func Plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y"):
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}
