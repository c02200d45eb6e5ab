package commands

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/demo"
)

type demoOptions struct {
	JSON bool
}

func demoCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "watch herdr-pi work on a scripted agent (no Herdr, Pi or network needed)",
		Description: "Runs a scripted agent under the real `herdr-pi wrap`, reporting to a built-in\n" +
			"stand-in for Herdr. You see the agent's screen as it would look in a pane and,\n" +
			"below it, the timeline: each state herdr-pi decided, each request it sent to\n" +
			"Herdr, each notification. The agent works, asks a question (its reply ends with the\n" +
			":input_needed: marker, hidden from the screen), waits — the pane turns blocked —\n" +
			"gets an answer typed for you, works again and finishes. About 15 seconds; press q\n" +
			"to stop early. Nothing outside a temporary directory is touched.\n\n" +
			"Exits 0 when the agent finished or q stopped it, 1 when the demo could not\n" +
			"run to its end or show itself, 2 for a mistake in the call (an argument, an\n" +
			"unknown flag), 128+n when signal n stopped it (130 after Ctrl-C).\n\n" +
			"Examples:\n" +
			"  herdr-pi demo\n" +
			"  herdr-pi demo --json | jq '.events[] | select(.source == \"herdr\")'",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the timeline as JSON at the end instead of drawing it (format: docs/demo.md)"}},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				// urfave/cli stops reading flags at the first argument:
				// a --json after it is among the words usageFailedJSON reads.
				return usageFailedJSON(c, "demo", usagef("demo", "unexpected argument %q", c.Args().First()))
			}
			return demoRun(c.Context, f, &demoOptions{JSON: c.Bool("json")})
		},
	}
}

func demoRun(ctx context.Context, f *Factory, opts *demoOptions) error {
	out := &wroteWriter{w: f.IO.Out}
	err := demoRunTo(ctx, f, opts, out)
	// A demo that printed its timeline said how it ended (stopped, the
	// agent's exit) there; one that failed before has only this to say.
	var silent silentExit
	if opts.JSON && err != nil && !out.wrote && !errors.As(err, &silent) {
		err = failedJSON(f.IO.Out, demo.Format, "failed", err)
	}
	return err
}

func demoRunTo(ctx context.Context, f *Factory, opts *demoOptions, out io.Writer) error {
	exe, err := f.Executable()
	if err != nil {
		return fmt.Errorf("cannot find my own executable to run the demo agent: %w", err)
	}
	o := demo.Options{
		Out: out, Styles: lookFor(f.IO).R, JSON: opts.JSON, Env: f.IO.Env,
		Wrap: []string{exe, "wrap", "--", exe, "demo-agent"},
	}
	if tty, rows, cols := f.IO.stdoutTerminal(); tty {
		o.Terminal = &demo.Terminal{Rows: rows, Cols: cols}
		if in, ok := f.IO.stdinTerminal(); ok {
			o.Terminal.Keys = in
		}
	}
	err = demo.Run(ctx, o)
	// The demo says it was stopped; the status is the signal's, 128+n,
	// as for any program a signal ends (143 for kill, 129 for a hang-up).
	var stopped *demo.Interrupted
	if errors.As(err, &stopped) {
		return silentExit(128 + int(stopped.Signal))
	}
	return err
}

// wroteWriter tells whether anything was written through it, or tried to
// be.
type wroteWriter struct {
	w     io.Writer
	wrote bool
}

func (w *wroteWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.w.Write(p)
}

// demoAgentCommand is hidden: `herdr-pi demo` runs it under `wrap`.
func demoAgentCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:   "demo-agent",
		Hidden: true,
		Usage:  "the scripted agent `herdr-pi demo` wraps",
		Description: "Example:\n" +
			"  herdr-pi wrap -- herdr-pi demo-agent",
		Action: func(c *cli.Context) error {
			in, ok := file(f.IO.In)
			if !ok {
				return fmt.Errorf("stdin %w", errNoFile)
			}
			return demo.RunAgent(c.Context, in, f.IO.Out, f.IO.env().Get)
		},
	}
}
