// Package commands is herdr-pi's command line and its only composition root:
// it reads settings, builds the parts (pane, bridge, notify, handoff), wires
// events between them and maps errors to exit codes. Nothing imports it but
// main and the end-to-end tests.
package commands

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/internal/buildinfo"
	"github.com/herdr-pi/herdr-pi/settings"
)

// version is --version's line: the build (internal/buildinfo, which make
// build stamps with the release), its commit and when, and the Go that
// built it.
func version() string {
	in := buildinfo.Read()
	v := in.Version
	if rev := in.Revision; rev != "" {
		if in.Modified {
			rev += "+dirty"
		}
		v += " (" + rev
		if in.Time != "" {
			v += " " + in.Time
		}
		v += ")"
	}
	return fmt.Sprintf("%s, %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Main runs herdr-pi with args (args[0] is the program name) and returns the
// exit code. Deferred cleanup in every command runs before it returns:
// urfave/cli's own os.Exit path is switched off.
func Main(ctx context.Context, args []string, io IO) int {
	return runWith(ctx, args, NewFactory(io))
}

// runWith is Main with a factory of the caller's making (tests fake parts of
// it).
func runWith(ctx context.Context, args []string, f *Factory) int {
	app := newApp(f)
	if n := len(args); n >= 3 && args[n-1] == completionFlag {
		// The word being completed goes to the completers, not to the
		// parser: a half-typed flag would fail parsing, and a lone -- would
		// make urfave/cli run the command instead of completing it.
		cur := args[n-2]
		args = append(slices.Clip(args[:n-2]), completionFlag)
		if slices.Contains(args, "--") {
			// After -- every word is the agent's: nothing of herdr-pi's.
			return exitOK
		}
		app.Metadata = map[string]any{completingKey: cur}
	} else {
		args = helpAmongArgs(app, args)
		app.Metadata = map[string]any{argsKey: args, factoryKey: f}
	}
	// urfave/cli prints help and the version through app.Writer and drops
	// write errors; a help that never reached a full disk or a closed
	// stdout must not exit 0.
	out := &render.StickyWriter{W: app.Writer}
	app.Writer = out
	err := app.RunContext(ctx, args)
	if err == nil && out.Err != nil {
		err = out.Err
	}
	return exitCode(err, f.IO.Err)
}

// helpAmongArgs turns a command line that asks for a command's help
// among its arguments ("wrap --help pi", "detect --help screen.txt",
// "demo x --help") into that command's --help alone. urfave/cli would take
// the first argument for a help topic ("No help topic for 'pi'", exit 1),
// or the command would reject the argument before seeing --help. Words
// wrap passes to the agent are the agent's: in "wrap pi --help" the
// --help is Pi's. After "--" every word is an argument.
func helpAmongArgs(app *cli.App, args []string) []string {
	var cmd *cli.Command
	i, cmds := 1, app.Commands
	for ; i < len(args); i++ {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
	}
	if cmd == nil && len(args) > 2 && isHelpFlag(args[1]) && !strings.HasPrefix(args[2], "-") {
		// "herdr-pi --help waiting start" is "herdr-pi help waiting
		// start": urfave/cli would read one topic only, and say "No help
		// topic for 'wrp'" (exit 1) where help names the commands.
		return append([]string{args[0], "help"}, args[2:]...)
	}
	if cmd == nil || cmd.SkipFlagParsing {
		return args // herdr-pi's own flags, or help, which reads its own
	}
	for j := i; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			return args
		case isHelpFlag(a):
			return append(slices.Clip(args[:i]), "--help")
		case len(a) < 2 || a[0] != '-':
			if passesArgsOn[cmd.Name] {
				return args // the agent's command starts here
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := slices.IndexFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
		if !hasValue && fl >= 0 && takesValue(cmd.Flags[fl]) {
			j++ // its value, which may start with a dash
		}
	}
	return args
}

// passesArgsOn names the commands whose arguments, from the first one on,
// belong to another program.
var passesArgsOn = map[string]bool{"wrap": true}

// isHelpFlag says whether a word is --help as Go's flag package reads it
// (-h, --h, -help, --help).
func isHelpFlag(a string) bool {
	if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "---") {
		return false
	}
	name := strings.TrimLeft(a, "-")
	return name == "help" || name == "h"
}

func newApp(f *Factory) *cli.App {
	io := f.IO
	app := &cli.App{
		Name:      "herdr-pi",
		Usage:     "run coding agents in Herdr panes and report what they are doing",
		UsageText: "herdr-pi <command> [flags] [args…]",
		Description: "herdr-pi wraps an agent (Pi by default) under a pty, passes the terminal through\n" +
			"untouched, watches what the agent draws and emits, and reports one honest state —\n" +
			"idle, working or blocked — to Herdr, with desktop notifications when it needs you.\n\n" +
			"Start with:  herdr-pi demo      (see it work, no Herdr or model account needed)\n" +
			"             herdr-pi doctor    (check this machine)\n" +
			"             herdr-pi wrap pi   (the real thing, inside a Herdr pane)\n\n" +
			"Exit status: 0 done, 1 failed (stderr says why and what to do), 2 a mistake in\n" +
			"the call, 130 interrupted; wrap exits with its agent's. Each command's --help\n" +
			"says what its statuses mean.",
		Version:   version(),
		Reader:    io.In,
		Writer:    io.Out,
		ErrWriter: io.Err,
		// help is a command of our own (helpCommand), listed with the rest;
		// with it there, urfave/cli no longer adds --help by itself.
		HideHelpCommand:      true,
		Flags:                []cli.Flag{cli.HelpFlag},
		EnableBashCompletion: true,
		BashComplete:         completer(nil, nil),
		// urfave/cli v2 would call os.Exit inside Run for an ExitCoder,
		// skipping every deferred terminal restore; exit codes are decided
		// in exitCode instead.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			name := commandName(c)
			if again := repeatedFlag(c); again != nil {
				err = again // Go's flag package's string of it, as it is
			}
			flags := c.App.Flags
			if c.Command != nil && c.Command.Name != "" {
				flags = c.Command.Flags
			}
			return usageFailedJSON(c, name, flagUsageError(name, flags, err))
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				name := c.Args().First()
				names := commandNames(c.App.VisibleCommands())
				meant := meantCommand(name, names)
				if name == "version" {
					// A command in many tools; herdr-pi's is a flag.
					meant = "; did you mean --version?"
				}
				return usagef("", "unknown command %q%s (commands: %s)", name, meant, strings.Join(names, ", "))
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			wrapCommand(f),
			completing(openCommand(f), workflowCompleter(f, true)),
			completing(closeCommand(f), workflowCompleter(f, false)),
			waitingCommand(f),
			notifyCommand(f),
			detectCommand(f),
			statusCommand(f),
			doctorCommand(f),
			demoCommand(f),
			completionCommand(f),
			helpCommand(),
			demoAgentCommand(f),
		},
	}
	// Every command, at every depth, reports its errors and usage errors
	// under its own name and completes from its own flags.
	var setup func([]*cli.Command)
	setup = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = app.OnUsageError
			if c.Action != nil {
				c.Action = namedErrors(c.Action)
			}
			c.HideHelpCommand = true
			if c.BashComplete == nil {
				c.BashComplete = completer(c, nil)
			}
			// A switch is off unless given: "(default: false)" after
			// each one is noise. Other flags keep their default, and
			// take one value (flag_once.go).
			for i, fl := range c.Flags {
				if b, ok := fl.(*cli.BoolFlag); ok {
					b.DisableDefaultText = true
				}
				c.Flags[i] = singleValued(fl)
			}
			setup(c.Subcommands)
		}
	}
	setup(app.Commands)
	return app
}

// commandName is the command a context runs, as typed after herdr-pi
// ("waiting start"); "" for herdr-pi itself.
func commandName(c *cli.Context) string {
	if c == nil || c.Command == nil || c.Command.Name == c.App.Name {
		return ""
	}
	if name, ok := strings.CutPrefix(c.Command.HelpName, c.App.Name+" "); ok {
		return name
	}
	return c.Command.Name
}

// helpCommand is `herdr-pi help [command [subcommand]]`: the same text as
// `herdr-pi command --help`.
func helpCommand() *cli.Command {
	cmd := &cli.Command{
		Name:      "help",
		Usage:     "show the help of a command",
		ArgsUsage: "[command [subcommand]]",
		Description: "Exits 0, or 2 for a mistake in the call (a command it does not know).\n\n" +
			"Examples:\n" +
			"  herdr-pi help wrap\n" +
			"  herdr-pi help waiting start",
		// Its own --help is an argument: urfave/cli would show the app's
		// help for any command named help.
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			path := c.Args().Slice()
			switch {
			case len(path) == 0:
				return cli.ShowAppHelp(c)
			case isHelpFlag(path[0]):
				return cli.ShowCommandHelp(c, "help")
			}
			// "help wrap --help" asks for wrap's help, as "help wrap" does.
			if i := slices.IndexFunc(path, isHelpFlag); i > 0 {
				path = path[:i]
			}
			cmds := c.App.VisibleCommands()
			for i, name := range path {
				cmd := findCommand(cmds, name)
				if cmd == nil {
					where := strings.Join(append([]string{"herdr-pi"}, path[:i]...), " ")
					var err error
					if len(cmds) == 0 {
						err = usagef("help", "%s has no subcommands", where)
					} else {
						names := commandNames(cmds)
						err = usagef("help", "%s has no command %q%s (commands: %s)", where, name, meantCommand(name, names), strings.Join(names, ", "))
					}
					err.(*usageError).helpOf = where
					return err
				}
				cmds = cmd.VisibleCommands()
			}
			return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, path...), "--help"))
		},
	}
	cmd.BashComplete = completer(cmd, func(c *cli.Context, given []string) []string {
		cmds := c.App.VisibleCommands()
		for _, name := range given {
			cmd := findCommand(cmds, name)
			if cmd == nil {
				return nil
			}
			cmds = cmd.VisibleCommands()
		}
		return commandNames(cmds)
	})
	return cmd
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func commandNames(cmds []*cli.Command) []string {
	names := make([]string, 0, len(cmds))
	for _, c := range cmds {
		names = append(names, c.Name)
	}
	return names
}

// meantCommand is "; did you mean "x"?" for a name that is a typo of the
// command x (settings.Meant), else "".
func meantCommand(name string, names []string) string {
	if n := settings.Meant(name, names); n != "" {
		return fmt.Sprintf("; did you mean %q?", n)
	}
	return ""
}

// errNotBuilt is what a command that does not exist yet says.
func notBuilt(io IO, name, issue string) error {
	tell(io.Err, "herdr-pi %s: not built yet (%s)\n", name, issue)
	return silentExit(exitError)
}

var errNoFile = errors.New("needs a real file descriptor")
