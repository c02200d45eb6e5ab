package commands

import "github.com/urfave/cli/v2"

func demoCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "watch herdr-pi work on a scripted agent (no Herdr, Pi or network needed)",
		Description: "Examples:\n" +
			"  herdr-pi demo\n" +
			"  herdr-pi demo --json",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the timeline as JSON"}},
		Action: func(c *cli.Context) error { return notBuilt(io, "demo", "issue: first five minutes") },
	}
}
