package commands

import "github.com/urfave/cli/v2"

func detectCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:      "detect",
		Usage:     "classify a screen with the detection manifests and say which rule matched",
		ArgsUsage: "[FILE|-]",
		Description: "Examples:\n" +
			"  herdr-pi detect screen.txt\n" +
			"  herdr-pi detect --agent claude --json - < screen.txt",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "manifest id", Value: "pi"},
			&cli.StringFlag{Name: "manifest", Usage: "manifest file to use instead"},
			&cli.BoolFlag{Name: "raw", Usage: "input is raw terminal bytes"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON"},
		},
		Action: func(c *cli.Context) error { return notBuilt(io, "detect", "issue: see what the agent is doing") },
	}
}
