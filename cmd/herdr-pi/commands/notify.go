package commands

import "github.com/urfave/cli/v2"

func notifyCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "send one notification through the right channel for where it runs",
		Description: "Inside Herdr it asks Herdr to show a toast; elsewhere it writes the desktop\n" +
			"notification sequence your terminal understands (tmux-wrapped when needed).\n\n" +
			"Examples:\n" +
			"  herdr-pi notify --title \"Build finished\"\n" +
			"  herdr-pi notify --title \"Pi needs you\" --body api --sound request",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "title", Usage: "notification title", Required: true},
			&cli.StringFlag{Name: "body", Usage: "notification body"},
			&cli.StringFlag{Name: "sound", Usage: "Herdr sound: none, done or request", Value: "none"},
		},
		Action: func(c *cli.Context) error { return notBuilt(io, "notify", "issue: never miss a blocked agent") },
	}
}
