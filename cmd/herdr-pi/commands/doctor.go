package commands

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/settings"
)

// doctorBudget bounds the whole doctor run; every check that talks to
// something or runs a program has its own, shorter deadline.
const doctorBudget = 8 * time.Second

type doctorOptions struct {
	JSON bool
	// Sections limits the run to these section ids; empty means all.
	Sections []string
}

func doctorCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check the environment: Herdr, Pi, settings, notifications, runtime files",
		ArgsUsage: "[SECTION…]",
		Description: "Checks what herdr-pi depends on and says, for anything wrong, how to fix it:\n" +
			"Herdr's variables, socket, protocol and pane; Pi and Node on PATH and their\n" +
			"versions; that the probe loads (no model call); herdr-pi's config files; the\n" +
			"notification channel and tmux passthrough; the private runtime directory and\n" +
			"the pane registry; Herdr's own Pi integration. Each check has a deadline.\n\n" +
			"SECTION limits the run to some of: herdr, pi, config, notify, runtime.\n" +
			"It exits 1 when something is broken (a row marked fail), 0 otherwise, 2 for\n" +
			"a mistake in the call (an unknown section or flag), and 130 when Ctrl-C\n" +
			"stopped it (no rows then).\n" +
			"--json prints the same findings in the format of docs/doctor.md.\n" +
			"Colour only on a terminal, never with NO_COLOR set.\n\n" +
			"Examples:\n" +
			"  herdr-pi doctor\n" +
			"  herdr-pi doctor pi config\n" +
			"  herdr-pi doctor --json | jq '.checks[] | select(.status != \"ok\")'",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON (format: docs/doctor.md)"}},
		BashComplete: func(c *cli.Context) {
			completer(c.Command, func(*cli.Context, []string) []string { return doctor.SectionIDs() })(c)
		},
		Action: withArgs("doctor", func(c *cli.Context, args []string) error {
			opts := &doctorOptions{JSON: c.Bool("json"), Sections: args}
			for _, id := range opts.Sections {
				if !slices.Contains(doctor.SectionIDs(), id) {
					err := usagef("doctor", "no section %q (sections: %s)", id, strings.Join(doctor.SectionIDs(), ", "))
					if opts.JSON {
						err = failedJSON(f.IO.Out, doctor.Format, "usage", err)
					}
					return err
				}
			}
			return doctorRun(c.Context, f, opts)
		}),
	}
}

func doctorRun(ctx context.Context, f *Factory, opts *doctorOptions) error {
	// Ctrl-C, SIGTERM or a hangup stops the checks (the programs they run
	// are killed with them) rather than the process: a check's files,
	// such as the probe directory in TMPDIR, are removed on the way out.
	sigCtx, stop := signal.NotifyContext(ctx, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, doctorBudget)
	defer cancel()
	rows := doctor.Run(ctx, doctorInput(f), doctor.Pick(opts.Sections))
	if sigCtx.Err() != nil {
		// The rows say what an interrupted check could not find out, not
		// what is wrong: none is shown. A script reading --json gets
		// the failure object instead (docs/doctor.md).
		tell(f.IO.Err, "herdr-pi doctor: interrupted\n")
		if opts.JSON {
			// Exit 130 says it was stopped whatever this write does: a
			// stdout gone with the same Ctrl-C is not worth a word more.
			_ = writeFailure(f.IO.Out, doctor.Format, "interrupted", "interrupted")
		}
		return silentExit(exitInterrupted)
	}
	var err error
	if opts.JSON {
		err = writeJSON(f.IO.Out, doctor.NewReport(rows))
	} else {
		err = render.DoctorText(f.IO.Out, doctor.ForPeople(rows, f.Paths().Home), lookFor(f.IO))
	}
	if err != nil {
		return err
	}
	if doctor.Count(rows)[doctor.Fail] > 0 {
		return silentExit(exitError)
	}
	return nil
}

// doctorInput is what the checks look at: this process's environment,
// paths and configuration, and notifications set up as wrap would set
// them up here.
func doctorInput(f *Factory) doctor.Input {
	env := f.IO.env()
	paths := f.Paths()
	cfg, cfgErr := f.Config()
	ncfg, _ := notifyConfig(cfg, paths)
	_, inHerdr := settings.HerdrEnv(env)
	n := notify.DoctorInput{Config: ncfg, Getenv: env.Get, InHerdr: inHerdr}
	if env.Get("TMUX") != "" {
		n.Tmux = tmux.Probe{Run: tmux.Exec{}}
	}
	dir, _ := os.Getwd() // "" when it is gone: the agent directory alone
	return doctor.Input{Env: env, Paths: paths, Config: cfg, ConfigErr: cfgErr, Notify: n, ProgramTimeout: doctor.ProgramTimeout, Dir: dir}
}
