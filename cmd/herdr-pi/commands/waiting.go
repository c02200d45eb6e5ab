package commands

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

type waitingOptions struct {
	Action string
	Source string
	ID     string
	Label  string
}

func waitingCommand(f *Factory) *cli.Command {
	// stop needs no label: it closes the wait the pair names.
	flags := func(withLabel bool) []cli.Flag {
		fl := []cli.Flag{
			&cli.StringFlag{Name: "source", Usage: "who is waiting, e.g. my-hook (required)"},
			&cli.StringFlag{Name: "id", Usage: "which wait of that source (required)"},
		}
		if withLabel {
			fl = append(fl, &cli.StringFlag{Name: "label", Usage: "what the pane shows while blocked"})
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
			return waitingRun(c.Context, f, opts)
		}
	}
	return &cli.Command{
		Name:      "waiting",
		Usage:     "add or clear one reason the wrapped agent is waiting for you",
		UsageText: "herdr-pi waiting start|stop --source S --id I [--label L]",
		Description: "Talks to the herdr-pi wrapper running in this pane (or to the one whose agent runs\n" +
			"this command). The pane is blocked while any reason is open; a reason is the pair\n" +
			"source:id, and stopping it twice is harmless.\n\n" +
			"Examples:\n" +
			"  herdr-pi waiting start --source deploy-hook --id 42 --label \"approve deploy\"\n" +
			"  herdr-pi waiting stop --source deploy-hook --id 42",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("waiting", "no subcommand %q (start or stop)", c.Args().First())
			}
			// A call without start or stop is a mistake (a hook that lost
			// its word, say), not a request for help: it must not pass.
			return usagef("waiting", "say start or stop (example: herdr-pi waiting start --source deploy-hook --id 42)")
		},
		Subcommands: []*cli.Command{
			{Name: "start", Usage: "open a wait", Flags: flags(true), Action: action(control.WaitStart),
				Description: "The pane turns blocked (if it was not already) and stays so until every open\n" +
					"wait is stopped. The label is what Herdr shows when this wait opened the block.\n\n" +
					"Example:\n" +
					"  herdr-pi waiting start --source deploy-hook --id 42 --label \"approve deploy\""},
			{Name: "stop", Usage: "close a wait", Flags: flags(false), Action: action(control.WaitStop),
				Description: "Closing a wait that is not open is harmless.\n\n" +
					"Example:\n" +
					"  herdr-pi waiting stop --source deploy-hook --id 42"},
		},
	}
}

func waitingRun(ctx context.Context, f *Factory, opts *waitingOptions) error {
	w, err := control.WaitRequest{Action: opts.Action, Source: opts.Source, ID: opts.ID, Label: opts.Label}.Normalize()
	if err != nil {
		return usagef("waiting "+opts.Action, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := dialWrapper(ctx, f)
	if err != nil {
		return fmt.Errorf("waiting %s: %w", opts.Action, err)
	}
	defer c.Close()
	if err := c.Wait(ctx, w); err != nil {
		return fmt.Errorf("waiting %s %s: the wrapper refused: %w", opts.Action, w.Key(), err)
	}
	return nil
}
