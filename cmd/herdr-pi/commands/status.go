package commands

import "github.com/urfave/cli/v2"

func statusCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the wrapped agent's state and open reasons in this pane",
		Description: "Examples:\n" +
			"  herdr-pi status\n" +
			"  herdr-pi status --json",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON"}},
		Action: func(c *cli.Context) error { return notBuilt(io, "status", "issue: blocked means blocked") },
	}
}
