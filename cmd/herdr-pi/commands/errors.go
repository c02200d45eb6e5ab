package commands

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/demo"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
	"github.com/urfave/cli/v2"
)

// Exit codes shared by every command except wrap, which exits with the
// child's status.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitInterrupted is a command stopped by Ctrl-C (128+SIGINT).
	exitInterrupted = 130
)

// usageError is a mistake in how a command was called; it exits 2 and points
// at --help.
type usageError struct {
	cmd string
	err error
	// helpOf is the command whose --help the hint names, when not cmd
	// itself: `help` has nothing to say about a mistake in what it was
	// asked for; the command it was looking in has.
	helpOf string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(cmd, format string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = clipArg(s)
		}
	}
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// unknownFlag is the usage error for a flag cmd does not have, naming
// the flag meant when the word is a typo of one of flags. Names under
// four letters get no guess: one letter off them is another word
// (waiting stop --pid is no typo of --id).
func unknownFlag(cmd, given string, flags []cli.Flag) error {
	name, _, _ := strings.Cut(strings.TrimLeft(given, "-"), "=")
	if len(name) >= 4 {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		if meant := settings.Meant(name, names); meant != "" {
			return usagef(cmd, "unknown flag %s; did you mean %s?", given, dashed(meant))
		}
	}
	return usagef(cmd, "unknown flag %s", given)
}

// flagUsageError is a mistake urfave/cli met while reading cmd's flags. Its
// errors are those of Go's flag package, which write every flag with one
// dash ("flag provided but not defined: -bogus"), where herdr-pi's help and
// interleavedArgs write --bogus: the ones a person meets are reworded here,
// once for every command; any other stays as it is.
func flagUsageError(cmd string, flags []cli.Flag, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return unknownFlag(cmd, dashed(name), flags)
	}
	if word, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok && strings.HasPrefix(word, "---") {
		return tooManyDashes(cmd, word)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return usagef(cmd, "%s needs a value", dashed(name))
	}
	// invalid value "abc" for flag -pid: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			value, _ := strconv.Unquote(q)
			if name, ok := strings.CutPrefix(rest[len(q):], " for flag -"); ok {
				name, _, _ = strings.Cut(name, ":")
				return usagef(cmd, "%s needs a number, not %q", dashed(name), value)
			}
		}
	}
	// invalid boolean value "maybe" for -json: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			value, _ := strconv.Unquote(q)
			if name, ok := strings.CutPrefix(rest[len(q):], " for -"); ok {
				name, _, _ = strings.Cut(name, ":")
				return usagef(cmd, "%s takes no value (got %q): give %[1]s alone, or %[1]s=false", dashed(name), value)
			}
		}
	}
	return &usageError{cmd: cmd, err: err}
}

// tooManyDashes is the usage error for a flag written with three dashes
// or more (---json): a slip, whose meaning is plain, but not guessed at.
func tooManyDashes(cmd, word string) error {
	return usagef(cmd, "%s has too many dashes: write --%s", word, strings.TrimLeft(word, "-"))
}

// dashed is a flag name as the help shows it: --name, or -n for a letter.
func dashed(name string) string {
	if len([]rune(name)) == 1 {
		return "-" + name
	}
	return "--" + name
}

// clipArg is an argument to quote in a message: itself, or clipped when it
// is longer than clipAt.
func clipArg(s string) any {
	if len(s) > clipAt {
		return clipped(s)
	}
	return s
}

// clipAt is how much of an argument a usage error quotes: enough to
// recognise it, while a 50 MiB value still makes a message of a line.
const clipAt = 120

// clipped is an argument quoted in a usage error: its first clipAt bytes
// (whole characters), then its length, whichever verb formats it.
type clipped string

func (c clipped) Format(f fmt.State, verb rune) {
	cut := strings.ToValidUTF8(string(c)[:clipAt], "")
	if verb == 'q' {
		fmt.Fprintf(f, "%q", cut)
	} else {
		fmt.Fprint(f, cut)
	}
	fmt.Fprintf(f, "… (%d bytes)", len(c))
}

// fileError is err, about a file the user named: where the name is longer
// than clipAt (a path may be 4 KiB) every quote of it is clipped like a
// usage error's argument, so the reason after it stays in view. errors.Is
// and As still see err.
func fileError(file string, err error) error {
	if len(file) <= clipAt {
		return err
	}
	return &wrappedError{msg: strings.ReplaceAll(err.Error(), file, fmt.Sprint(clipArg(file))), err: err}
}

type wrappedError struct {
	msg string
	err error
}

func (e *wrappedError) Error() string { return e.msg }
func (e *wrappedError) Unwrap() error { return e.err }

// commandError is an error that ended a command, with the command: exitCode
// prints it as "herdr-pi <command>: <message>", the way it prints a usage
// mistake, so no message names its own command (namedErrors adds it).
type commandError struct {
	cmd string // as typed after herdr-pi: "status", "waiting start"
	err error
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// namedErrors is action with the error it returns, if any, tagged with the
// command that ran it. newApp gives it to every command at every depth. An
// error already tagged keeps its tag: help runs the command it shows, and
// the outer command is the one the person typed.
func namedErrors(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		err := action(c)
		var named *commandError
		if err == nil || errors.As(err, &named) {
			return err
		}
		return &commandError{cmd: commandName(c), err: err}
	}
}

// silentExit carries an exit code whose message, if any, was already shown.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// tell writes a message for a person: an error or warning on stderr, or
// what open and close did on stdout. Such messages quote text herdr-pi does
// not control — Herdr's replies, names from the workflow store, config
// files, paths — so each goes through render.CleanLines here, whatever
// built it: nothing herdr-pi says can carry an escape sequence, a bell or
// a bidi override to the terminal.
func tell(w io.Writer, format string, args ...any) {
	_ = say(w, format, args...)
}

// tellConfigProblems says, under who ("herdr-pi detect"), the mistakes of
// config.toml, one line each with its file and line, and the way out; the
// command runs on with the defaults (a typo must not cost a session).
func tellConfigProblems(w io.Writer, who string, err error) {
	tell(w, "%s: config problems, running with the defaults until they are fixed (herdr-pi doctor config checks the file; "+
		"docs/configuration.md lists every key):\n  %s\n", who, strings.ReplaceAll(err.Error(), "\n", "\n  "))
}

// say is tell for a command's own result on stdout: its write error is the
// command's error, so a result that never reached a full disk or a closed
// pipe does not exit 0 (a warning on stderr has nowhere else to go).
func say(w io.Writer, format string, args ...any) error {
	_, err := io.WriteString(w, render.CleanLines(fmt.Sprintf(format, args...)))
	return err
}

// exitCode is the one place errors become exit codes, and where every
// error that ends a command is printed.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var (
		status pty.ExitStatus
		start  *pty.StartError
		usage  *usageError
		silent silentExit
		named  *commandError
	)
	switch {
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &silent):
		return int(silent)
	case errors.As(err, &start):
		// The command is the user's argument, of any length: quoted as a
		// usage error quotes one, so the reason after it stays in view.
		tell(stderr, "herdr-pi wrap: %v: %s\n", clipArg(start.Command), start.Reason)
		return start.Code
	case errors.As(err, &usage):
		name := "herdr-pi"
		if usage.cmd != "" {
			name += " " + usage.cmd
		}
		helpOf := name
		if usage.helpOf != "" {
			helpOf = usage.helpOf
		}
		tell(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, usage.err, helpOf)
		return exitUsage
	case errors.As(err, &named) && named.cmd != "":
		tell(stderr, "herdr-pi %s: %v\n", named.cmd, err)
		return exitError
	}
	// An error of herdr-pi itself, before or after any command (help
	// that could not be written).
	tell(stderr, "herdr-pi: %v\n", err)
	return exitError
}

// argsKey holds, in the app's metadata, the command line as run, for
// usageFailedJSON; factoryKey the command's Factory, with which close's
// failure looks up the run it names.
const (
	argsKey    = "args"
	factoryKey = "factory"
)

// usageFailedJSON gives a command line a command could not read the
// failure object its --json prints for any other failure, when --json is
// among its words: urfave/cli stops at a bad flag before --json is known,
// withArgs at a bad flag among the arguments, demo at its first argument,
// and a script reading stdout would get nothing. The words still go to
// stderr, and the exit status stays 2.
func usageFailedJSON(c *cli.Context, name string, err error) error {
	format, ok := failureFormats[name]
	if !ok {
		return err
	}
	args, _ := c.App.Metadata[argsKey].([]string)
	words := commandWords(args, name)
	if !slices.ContainsFunc(words, isJSONFlag) {
		return err
	}
	w := c.App.Writer
	switch name {
	case "close":
		f, _ := c.App.Metadata[factoryKey].(*Factory)
		var flags []cli.Flag
		if cmd := findCommand(c.App.Commands, name); cmd != nil {
			flags = cmd.Flags
		}
		return closeFailedJSON(f, w, &closeOptions{Run: closeRunWord(commandArgs(args, name), flags)}, err)
	case "open":
		return openFailedJSON(w, &openOptions{List: slices.ContainsFunc(words, isListFlag)}, err)
	}
	return failedJSON(w, format, "usage", err)
}

// failureFormats are the commands whose --json prints a failure object,
// each with the format it prints it in (open's depends on --list and is
// chosen by openFailedJSON).
var failureFormats = map[string]string{
	"open":   openFormat,
	"close":  closeFormat,
	"status": statusFormat,
	"doctor": doctor.Format,
	"detect": render.DetectFormat,
	"demo":   demo.Format,
}

// jsonFailure is what a command's --json prints when it fails: the format
// it would have printed and an error object instead of its result, so a
// script reading stdout always gets JSON (docs/status.md, doctor.md,
// detect.md, demo.md; open and close add fields of their own).
type jsonFailure struct {
	Format string `json:"format"`
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// failedJSON prints err as a jsonFailure in format, under code, and
// returns it: the caller's error still reaches stderr and the exit status.
func failedJSON(w io.Writer, format, code string, err error) error {
	if werr := writeFailure(w, format, code, err.Error()); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// writeFailure prints a jsonFailure; its error is the write's.
func writeFailure(w io.Writer, format, code, message string) error {
	fail := jsonFailure{Format: format}
	fail.Error.Code, fail.Error.Message = code, render.CleanLines(message)
	return render.JSON(w, fail)
}

// commandWords are the words of args after the command name and before a
// "--" (after which none is herdr-pi's).
func commandWords(args []string, name string) []string {
	words := commandArgs(args, name)
	if j := slices.Index(words, "--"); j >= 0 {
		words = words[:j]
	}
	return words
}

// commandArgs are the words of args after the command name, "--" and
// what follows it included.
func commandArgs(args []string, name string) []string {
	i := slices.Index(args, name)
	if i < 0 {
		return nil
	}
	return args[i+1:]
}

// isJSONFlag reports whether a word turns --json on, as urfave/cli would
// read it: -json, --json, or either with "=" and a true value.
func isJSONFlag(w string) bool { return boolFlagOn(w, "json") }

func isListFlag(w string) bool { return boolFlagOn(w, "list") }

func boolFlagOn(w, flag string) bool {
	w, ok := strings.CutPrefix(w, "-")
	if !ok {
		return false
	}
	w = strings.TrimPrefix(w, "-")
	if w == flag {
		return true
	}
	v, ok := strings.CutPrefix(w, flag+"=")
	on, perr := strconv.ParseBool(v)
	return ok && perr == nil && on
}
