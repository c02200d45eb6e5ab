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
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X …/commands.Version=v1.2.3";
// otherwise it comes from the module's build info.
var Version = ""

func version() string {
	v, rev, modified, when := Version, "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			case "vcs.time":
				when = s.Value
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		if modified {
			rev += "+dirty"
		}
		v += " (" + rev
		if when != "" {
			v += " " + when
		}
		v += ")"
	}
	return fmt.Sprintf("%s, %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Main runs herdr-pi with args (args[0] is the program name) and returns the
// exit code. Deferred cleanup in every command runs before it returns:
// urfave/cli's own os.Exit path is switched off.
func Main(ctx context.Context, args []string, io IO) int {
	app := newApp(io)
	err := app.RunContext(ctx, args)
	return exitCode(err, io.Err)
}

func newApp(io IO) *cli.App {
	app := &cli.App{
		Name:      "herdr-pi",
		Usage:     "run coding agents in Herdr panes and report what they are doing",
		UsageText: "herdr-pi <command> [flags] [args…]",
		Description: "herdr-pi wraps an agent (Pi by default) under a pty, passes the terminal through\n" +
			"untouched, watches what the agent draws and emits, and reports one honest state —\n" +
			"idle, working or blocked — to Herdr, with desktop notifications when it needs you.\n\n" +
			"Start with:  herdr-pi demo      (see it work, no Herdr or model account needed)\n" +
			"             herdr-pi doctor    (check this machine)\n" +
			"             herdr-pi wrap pi   (the real thing, inside a Herdr pane)",
		Version:              version(),
		Reader:               io.In,
		Writer:               io.Out,
		ErrWriter:            io.Err,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		// urfave/cli v2 would call os.Exit inside Run for an ExitCoder,
		// skipping every deferred terminal restore; exit codes are decided
		// in exitCode instead.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return &usageError{cmd: commandName(c), err: err}
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("", "unknown command %q", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			wrapCommand(io),
			openCommand(io),
			waitingCommand(io),
			notifyCommand(io),
			detectCommand(io),
			statusCommand(io),
			doctorCommand(io),
			demoCommand(io),
			completionCommand(io),
			demoAgentCommand(io),
		},
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
		c.HideHelpCommand = true
	}
	return app
}

func commandName(c *cli.Context) string {
	if c == nil || c.Command == nil {
		return ""
	}
	return c.Command.Name
}

// errNotBuilt is what a command that does not exist yet says.
func notBuilt(io IO, name, issue string) error {
	fmt.Fprintf(io.Err, "herdr-pi %s: not built yet (%s)\n", name, issue)
	return silentExit(exitError)
}

var errNoFile = errors.New("needs a real file descriptor")
