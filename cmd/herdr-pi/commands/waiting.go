package commands

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

type waitingOptions struct {
	Action string
	Source string
	ID     string
	Label  string
	PID    int // the holder (start --pid); 0 for none
}

func waitingCommand(f *Factory) *cli.Command {
	// stop needs no label: it closes the wait the pair names.
	flags := func(withLabel bool) []cli.Flag {
		fl := []cli.Flag{
			&cli.StringFlag{Name: "source", Usage: "who is waiting, e.g. my-hook (required)"},
			&cli.StringFlag{Name: "id", Usage: "which wait of that source (required)"},
		}
		if withLabel {
			fl = append(fl,
				&cli.StringFlag{Name: "label", Usage: "what the pane shows while blocked"},
				&cli.IntFlag{Name: "pid", DefaultText: "none", Usage: "the process that holds the wait, e.g. $$: the wait ends when it exits"})
		}
		return fl
	}
	action := func(name string) cli.ActionFunc {
		return func(c *cli.Context) error {
			cmd := "waiting " + name
			if c.Args().Present() {
				return usagef(cmd, "unexpected argument %q", c.Args().First())
			}
			for _, fl := range []string{"source", "id"} {
				if !c.IsSet(fl) {
					return usagef(cmd, "--%s is required (example: herdr-pi %s --source deploy-hook --id 42)", fl, cmd)
				}
			}
			opts := &waitingOptions{Action: name, Source: c.String("source"), ID: c.String("id"), Label: c.String("label")}
			if c.IsSet("pid") {
				// A wrong pid is the caller's mistake: said here, before
				// the wrapper (which checks again as it pins the process).
				if err := control.CheckHolder(c.Int("pid"), os.Getuid()); err != nil {
					return usagef(cmd, "%v", err)
				}
				opts.PID = c.Int("pid")
			}
			return waitingRun(c.Context, f, opts)
		}
	}
	return &cli.Command{
		Name:      "waiting",
		Usage:     "add or clear one reason the wrapped agent is waiting for you",
		UsageText: "herdr-pi waiting start|stop --source S --id I [--label L] [--pid PID]",
		Description: "Talks to the herdr-pi wrapper running in this pane (or to the one whose agent runs\n" +
			"this command). The pane is blocked while any reason is open; a reason is the pair\n" +
			"source:id, and stopping it twice is harmless.\n\n" +
			"Exits 0 once the wrapper took the request; 1 when no wrapper answers or it refused\n" +
			"(the message says why and what to do); 2 for a mistake in the call, which never\n" +
			"reaches the wrapper.\n\n" +
			"Examples:\n" +
			"  herdr-pi waiting start --source deploy-hook --id 42 --label \"approve deploy\" --pid $$\n" +
			"  herdr-pi waiting stop --source deploy-hook --id 42",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				name := c.Args().First()
				return usagef("waiting", "no subcommand %q%s (start or stop)", name, meantCommand(name, []string{"start", "stop"}))
			}
			// A call without start or stop is a mistake (a hook that lost
			// its word, say), not a request for help: it must not pass.
			return usagef("waiting", "say start or stop (example: herdr-pi waiting start --source deploy-hook --id 42)")
		},
		Subcommands: []*cli.Command{
			{Name: "start", Usage: "open a wait", Flags: flags(true), Action: action(control.WaitStart),
				Description: "The pane turns blocked (if it was not already) and stays so until every open\n" +
					"wait is stopped. The label is what Herdr shows when this wait opened the block.\n\n" +
					"With --pid the wait also ends when that process exits, however it ends (kill -9\n" +
					"included): a script gives its own pid, $$, and cannot leave the pane blocked\n" +
					"behind it. The process must run, as your user, and not be pid 1. Starting the\n" +
					"same wait again replaces its label and its holder: the latest start says what\n" +
					"the pane shows (the default without --label) and which process holds it (none\n" +
					"without --pid).\n\n" +
					"Example:\n" +
					"  herdr-pi waiting start --source deploy-hook --id 42 --label \"approve deploy\" --pid $$"},
			{Name: "stop", Usage: "close a wait", Flags: flags(false), Action: action(control.WaitStop),
				Description: "Closing a wait that is not open is harmless.\n\n" +
					"Example:\n" +
					"  herdr-pi waiting stop --source deploy-hook --id 42"},
		},
	}
}

func waitingRun(ctx context.Context, f *Factory, opts *waitingOptions) error {
	w, err := control.WaitRequest{Action: opts.Action, Source: opts.Source, ID: opts.ID, Label: opts.Label, PID: opts.PID}.Normalize()
	if w.PID > 0 {
		w.CallerPID = os.Getpid()
	}
	if err != nil {
		return usagef("waiting "+opts.Action, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := dialWrapper(ctx, f)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Wait(ctx, w); err != nil {
		// The wrapper's reason starts "waiting: " for its own log and
		// for other clients; here the line names the command already.
		return fmt.Errorf("the wrapper refused %s: %s", w.Key(), strings.TrimPrefix(err.Error(), "waiting: "))
	}
	return nil
}
