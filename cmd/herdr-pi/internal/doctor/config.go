package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/settings"
)

// configChecks is the doctor's configuration section: herdr-pi's
// config.toml, the user's detection manifests, and the seed extension's
// terminal-notification config that herdr-pi also honours. Every problem
// is named by file and line. A bad file never stops herdr-pi (it falls
// back to the defaults), so problems are warnings.
func configChecks(_ context.Context, d Input) []Row {
	rows := []Row{configFileRow(d), manifestsRow(d)}
	if r, ok := seedConfigRow(d); ok {
		rows = append(rows, r)
	}
	return rows
}

const configDocs = "docs/configuration.md lists every key"

func configFileRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "config.toml", Status: status, Detail: detail, Fix: fix}
	}
	shown := d.Paths.Pretty(d.Paths.ConfigFile)
	if d.ConfigErr != nil {
		return row(Warn, problemList(d.ConfigErr)+": herdr-pi runs with the built-in defaults until this is fixed", configFix(d.ConfigErr, d.Paths))
	}
	if _, err := os.Stat(d.Paths.ConfigFile); errors.Is(err, fs.ErrNotExist) {
		return row(OK, fmt.Sprintf("%s does not exist: the built-in defaults apply (%s)", shown, configDocs), "")
	}
	if settings.IsNullDevice(d.Paths.ConfigFile) {
		// Read as empty, on purpose: it is how people say "no config".
		if d.Paths.ConfigNamed {
			shown = "HERDR_PI_CONFIG=" + d.Paths.ConfigFile
		}
		return row(OK, fmt.Sprintf("%s: no config, the built-in defaults apply (%s)", shown, configDocs), "")
	}
	return row(OK, shown+" is valid", "")
}

// configFix is the way out of a config file's problems. Only mistakes on
// its lines are fixed by editing it; a file that could not be read at all
// (not there though HERDR_PI_CONFIG names it, a directory, a FIFO, a file
// where its directory should be) has no line to fix.
func configFix(err error, paths settings.Paths) string {
	shown := paths.Pretty(paths.ConfigFile)
	var ce *settings.ConfigError
	onLines := errors.As(err, &ce) && slices.ContainsFunc(ce.Problems, func(p settings.Problem) bool { return p.Err == nil || p.Line > 0 })
	switch {
	case onLines:
		return fmt.Sprintf("fix the mistake(s) named in %s (%s)", shown, configDocs)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("create %s, or point HERDR_PI_CONFIG at your config file (or unset it)", shown)
	}
	return unreadableFix(err, paths, paths.ConfigFile, "TOML", configChosenBy(paths))
}

// problemList joins the lines of a multi-problem error into one detail.
func problemList(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

func manifestsRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "manifests", Status: status, Detail: detail, Fix: fix}
	}
	dir := d.Paths.ManifestDir
	shown := d.Paths.Pretty(dir)
	_, problems := detect.Load(dir)
	var me *detect.ManifestError
	if len(problems) == 1 && errors.As(problems[0], &me) && me.File == dir {
		// The directory itself, not a file in it.
		fix := fmt.Sprintf("move %s away, and make a directory there for your manifests", shown)
		if link, target := settings.BrokenLink(dir); link != "" {
			fix = fmt.Sprintf("point the symlink %s at your manifests directory (it leads to %s, which does not exist), or remove it", d.Paths.Pretty(link), target)
		}
		return row(Warn, problemList(prettyManifestError(problems[0], d.Paths))+"; the built-in manifests apply", fix)
	}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = problemList(prettyManifestError(p, d.Paths))
		}
		return row(Warn, strings.Join(msgs, "; ")+": "+manifestsIgnored(len(problems), ManifestsWithoutBuiltIn(problems)),
			"fix the file(s), then check one with 'herdr-pi detect --manifest FILE SCREEN.txt'")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	if len(files) == 0 {
		return row(OK, fmt.Sprintf("no user detection manifests in %s: the built-in ones apply", shown), "")
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return row(OK, fmt.Sprintf("%s in %s: %s (each replaces the built-in manifest of the same name)",
		Plural(len(files), "user manifest"), shown, strings.Join(names, ", ")), "")
}

// prettyManifestError shortens the file names detect puts in its errors
// to ~/… like every other path doctor shows.
func prettyManifestError(err error, paths settings.Paths) error {
	var me *detect.ManifestError
	if errors.As(err, &me) {
		c := *me
		c.File = paths.Pretty(c.File)
		return &c
	}
	return err
}

// seedConfigRow checks the config.json of the seed extension
// pi-terminal-notifications, whose protocol table herdr-pi reads under its
// own config.toml. It is left out when the file does not exist.
func seedConfigRow(d Input) (Row, bool) {
	path := d.Paths.TerminalNotificationsFile()
	shown := d.Paths.Pretty(path)
	row := Row{Name: "pi-terminal-notifications", Status: OK,
		Detail: shown + " is valid; herdr-pi uses its protocol table under [notify] of its own config.toml"}
	_, err := settings.LoadTerminalNotifications(path, shown)
	if err == nil {
		// Asked after the read: a symlink that leads nowhere is not
		// there for os.Stat, but is a mistake the read reported.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return Row{}, false
		}
		return row, true
	}
	const instead = "set [notify] term_programs in herdr-pi's config.toml instead"
	row.Status = Warn
	var ce *settings.ConfigError
	errors.As(err, &ce)
	switch {
	case ce != nil && slices.ContainsFunc(ce.Problems, func(p settings.Problem) bool { return p.Key != "" }):
		row.Detail = problemList(err) + ": the entries named are ignored and the built-in terminal table applies to them"
		row.Fix = "fix the entries named in " + shown + ", or " + instead
	case ce == nil || slices.ContainsFunc(ce.Problems, func(p settings.Problem) bool { return p.Err != nil }):
		// Not read at all (each message already says the built-in table
		// applies); nothing in it is to blame yet.
		row.Detail = problemList(err)
		row.Fix = unreadableFix(err, d.Paths, path, "JSON", piDirChosenBy(d.Paths)) + "; or " + instead
	default:
		// Read, but not a JSON object ({, [], null): there are no entries.
		row.Detail = problemList(err)
		row.Fix = fmt.Sprintf(`make %s a JSON object, such as {"termPrograms": {"MyTerminal": "osc777"}}, or remove it; or %s`, shown, instead)
	}
	return row, true
}

// ManifestsWithoutBuiltIn are the names of the user manifests with
// problems that no built-in manifest stands in for: a broken pi.toml gives
// way to the built-in pi, a broken claude.toml to nothing (wrap then reads
// the agent as pi). A user manifest's name is its file's (detect.Load).
func ManifestsWithoutBuiltIn(problems []error) []string {
	var names []string
	for _, p := range problems {
		var me *detect.ManifestError
		if !errors.As(p, &me) {
			continue
		}
		name, isFile := strings.CutSuffix(filepath.Base(me.File), ".toml")
		if _, builtIn := detect.Embedded().Lookup(name); isFile && !builtIn && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// manifestsIgnored says what takes the place of n user manifests with
// problems, of which those named in lacking have no built-in manifest.
func manifestsIgnored(n int, lacking []string) string {
	switch {
	case len(lacking) == 0:
		return "each of these files is ignored and the built-in manifest of the same name is used"
	case n == 1:
		return "this file is ignored, and no manifest is built in as " + lacking[0] + ": wrap reads that agent as pi"
	case len(lacking) == n:
		return "each of these files is ignored, and no manifest is built in as " + strings.Join(lacking, " or ") + ": wrap reads those agents as pi"
	}
	agents := "that agent"
	if len(lacking) > 1 {
		agents = "those agents"
	}
	return "each of these files is ignored and the built-in manifest of the same name is used, but none is built in as " +
		strings.Join(lacking, " or ") + ": wrap reads " + agents + " as pi"
}
