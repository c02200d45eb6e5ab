package commands

import "github.com/urfave/cli/v2"

func openCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "open",
		Usage:     "(coming) open a workflow agent attempt in Herdr (inspect it, or take over a live one)",
		ArgsUsage: "<run> <attempt>",
		Description: "Coming: not built in this release; it says so and exits 1.\n\n" +
			"Finds the workflow run (id or unique prefix) and the attempt (agent id, name or\n" +
			"label, optional #n). A finished attempt opens read-only in a split; a live one is\n" +
			"taken over when its owner asked for a handoff, and handed back when you are done.\n\n" +
			"Examples:\n" +
			"  herdr-pi open 3f0c api\n" +
			"  herdr-pi open 3f0c api#2 --inspect --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "inspect", Usage: "open read-only even when the attempt is live"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until the pane is handed back"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			return notBuilt(f.IO, "open", "workflow handoff is not implemented in this release")
		},
	}
}
