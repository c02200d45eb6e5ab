package commands

import "github.com/urfave/cli/v2"

func doctorCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the environment: Herdr, Pi, settings, notifications",
		Description: "Examples:\n" +
			"  herdr-pi doctor\n" +
			"  herdr-pi doctor --json",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON"}},
		Action: func(c *cli.Context) error { return notBuilt(io, "doctor", "issue: talk to Herdr") },
	}
}
