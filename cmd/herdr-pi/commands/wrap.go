package commands

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

type wrapOptions struct {
	Argv  []string
	Agent string
}

func wrapCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:      "wrap",
		Usage:     "run an agent under a pty, pass the terminal through, report its state",
		ArgsUsage: "[--] <agent> [args…]",
		Description: "Runs the command under a new pseudo-terminal with your window size and passes\n" +
			"every byte and key through untouched. Inside a Herdr pane it reports the agent's\n" +
			"state (idle, working, blocked) to Herdr and releases the pane when it ends.\n" +
			"It exits with the command's status (128+n when it died of signal n, 127 when\n" +
			"it was not found, 126 when it could not be executed).\n\n" +
			"Flags for herdr-pi come before the command; everything after it goes to the\n" +
			"command. Use -- when the command itself starts with a dash.\n\n" +
			"Examples:\n" +
			"  herdr-pi wrap pi\n" +
			"  herdr-pi wrap pi --model anthropic/claude-sonnet-4\n" +
			"  herdr-pi wrap --agent pi -- ./bin/pi-dev --verbose",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "agent id for detection and reports (default: from the command name, else config)"},
		},
		Action: func(c *cli.Context) error {
			opts := &wrapOptions{Argv: c.Args().Slice(), Agent: c.String("agent")}
			if len(opts.Argv) == 0 {
				return usagef("wrap", "no command given (example: herdr-pi wrap pi)")
			}
			return wrapRun(c.Context, io, opts)
		},
	}
}

func wrapRun(ctx context.Context, io IO, opts *wrapOptions) error {
	env := io.env()
	paths := settings.Resolve(env)
	cfg, cfgErr := settings.LoadConfig(paths.ConfigFile, paths.Pretty(paths.ConfigFile))
	if cfgErr != nil {
		// The agent still starts: a typo in the config must not cost the
		// user their session.
		fmt.Fprintf(io.Err, "herdr-pi: config problems, running with defaults:\n  %s\n",
			strings.ReplaceAll(cfgErr.Error(), "\n", "\n  "))
	}
	log := openLog(paths, env, cfg.Log.Level, "wrap")
	defer log.Close()
	if cfgErr != nil {
		log.Printf("config: %v", cfgErr)
	}

	stdin, okIn := file(io.In)
	stdout, okOut := file(io.Out)
	if !okIn || !okOut {
		return fmt.Errorf("wrap: stdin and stdout %w (a terminal, pipe or file)", errNoFile)
	}
	var sizeFrom []*os.File
	if f, ok := file(io.Err); ok {
		sizeFrom = append(sizeFrom, f)
	}
	log.Printf("start %q", opts.Argv)
	report, stopHerdr := startHerdrReporting(env, cfg, opts.Agent, log.Printf)
	defer stopHerdr()
	det := startDetection(io, env, paths, cfg, opts, log, report)
	defer det.stop()
	err := pty.Run(ctx, pty.Options{
		Argv: opts.Argv, Env: io.Env, Dir: io.Dir,
		Stdin: stdin, Stdout: stdout, SizeFrom: sizeFrom,
		Logf: log.Printf, Tap: det.tap,
	})
	log.Printf("end %q: %v", opts.Argv, err)
	return err
}
