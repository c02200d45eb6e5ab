package commands

import "github.com/urfave/cli/v2"

func waitingCommand(io IO) *cli.Command {
	flags := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "source", Usage: "who is waiting, e.g. my-hook", Required: true},
			&cli.StringFlag{Name: "id", Usage: "which wait of that source", Required: true},
			&cli.StringFlag{Name: "label", Usage: "what the pane shows while blocked"},
		}
	}
	return &cli.Command{
		Name:  "waiting",
		Usage: "add or clear one reason the wrapped agent is waiting for you",
		Description: "Talks to the herdr-pi wrapper running in this pane. The pane is blocked while any\n" +
			"reason is open.\n\n" +
			"Examples:\n" +
			"  herdr-pi waiting start --source deploy-hook --id 42 --label \"approve deploy\"\n" +
			"  herdr-pi waiting stop --source deploy-hook --id 42",
		Subcommands: []*cli.Command{
			{Name: "start", Usage: "open a wait", Flags: flags(),
				Action: func(c *cli.Context) error { return notBuilt(io, "waiting", "issue: blocked means blocked") }},
			{Name: "stop", Usage: "close a wait", Flags: flags(),
				Action: func(c *cli.Context) error { return notBuilt(io, "waiting", "issue: blocked means blocked") }},
		},
	}
}
