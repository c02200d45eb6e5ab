package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/settings"
)

type notifyOptions struct {
	Title, Body, Sound string
}

// notifyDeps are what `notify` reaches outside its own process, so tests
// can stand in for them.
type notifyDeps struct {
	// herdr opens the Herdr channel in a complete Herdr environment.
	herdr func(settings.Herdr) (notify.Herdr, error)
	// openTTY opens the controlling terminal, for when stdout is not one.
	openTTY func() (io.WriteCloser, error)
	// tmux asks the tmux servers around the process.
	tmux notify.TmuxProbe
	http *http.Client
	// deadline bounds the whole delivery, Herdr's one-per-second pacing
	// included.
	deadline time.Duration
}

func systemNotifyDeps(f *Factory) notifyDeps {
	return notifyDeps{
		herdr: func(settings.Herdr) (notify.Herdr, error) {
			_, c, ok := f.Herdr()
			if !ok {
				return nil, errors.New("not in a complete Herdr environment")
			}
			return herdrToasts{c}, nil
		},
		openTTY: func() (io.WriteCloser, error) {
			return os.OpenFile("/dev/tty", os.O_WRONLY|unix.O_NOCTTY, 0)
		},
		tmux:     tmux.Probe{Run: tmux.Exec{}},
		deadline: 10 * time.Second,
	}
}

// herdrChannel turns the pane's Herdr environment into the Herdr channel:
// bridge/herdr's socket client behind notify's small interface.
func herdrChannel(h settings.Herdr) (notify.Herdr, error) {
	return herdrToasts{herdr.NewClient(h.SocketPath)}, nil
}

// herdrToasts adapts the socket client to notify.Herdr.
type herdrToasts struct{ c *herdr.Client }

func (t herdrToasts) ShowNotification(ctx context.Context, n notify.HerdrToast) (notify.HerdrResult, error) {
	r, err := t.c.ShowNotification(ctx, herdr.Notification{Title: n.Title, Body: n.Body, Sound: n.Sound, Position: n.Position})
	return notify.HerdrResult{Shown: r.Shown, Reason: r.Reason}, err
}

func notifyCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "send one notification through the right channel for where it runs",
		Description: "Inside a Herdr pane it asks Herdr to show it (Herdr does not pass terminal\n" +
			"notifications from panes on). Elsewhere it writes the desktop-notification\n" +
			"sequence your terminal understands — OSC 9, 99 or 777, chosen from TERM_PROGRAM —\n" +
			"to stdout when that is a terminal, else to the controlling terminal, wrapped for\n" +
			"tmux when $TMUX is set (tmux needs `set -g allow-passthrough on`). ntfy gets it\n" +
			"too when [notify.ntfy] is enabled. Control characters, bidi overrides and zero-width\n" +
			"characters are removed from the text.\n\n" +
			"In a pane a herdr-pi wrapper serves, the body ends with the names the wrapper's own\n" +
			"notifications give it (label · project · session), leaving out any the title or\n" +
			"body says already, so the toast says which agent it is about.\n\n" +
			"Exits 0 when it was delivered or notifications are off on purpose, 1 with the\n" +
			"reason otherwise, 2 for a mistake in the call (nothing is sent). `herdr-pi doctor`\n" +
			"shows the channel and why it may stay silent.\n\n" +
			"Examples:\n" +
			"  herdr-pi notify --title \"Build finished\"\n" +
			"  herdr-pi notify --title \"Pi needs you\" --body api --sound request\n" +
			"  make test && herdr-pi notify --title \"Tests passed\" --body \"$(basename \"$PWD\")\"",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "title", Usage: "notification title (required)"},
			&cli.StringFlag{Name: "body", Usage: "notification body"},
			&cli.StringFlag{Name: "sound", Usage: "Herdr sound: none, done or request (default: [notify] sound, none)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("notify", "unexpected argument %q (the text goes in --title and --body)", c.Args().First())
			}
			if !c.IsSet("title") {
				return usagef("notify", "--title is required (example: herdr-pi notify --title \"Build finished\")")
			}
			opts := &notifyOptions{Title: c.String("title"), Body: c.String("body"), Sound: c.String("sound")}
			return notifyRun(c.Context, f, opts, systemNotifyDeps(f))
		},
	}
}

func notifyRun(ctx context.Context, f *Factory, opts *notifyOptions, deps notifyDeps) error {
	io := f.IO
	// An empty title (--title "" or --title "$UNSET") is the common
	// mistake: saying control characters were removed would send the
	// person looking for ones that were never there.
	switch {
	case opts.Title == "":
		return usagef("notify", "--title is empty: give the text to show (example: herdr-pi notify --title \"Build finished\")")
	case strings.TrimSpace(opts.Title) == "":
		return usagef("notify", "--title is only spaces: give the text to show (example: herdr-pi notify --title \"Build finished\")")
	case osc.CleanLabel(opts.Title) == "":
		return usagef("notify", "--title is empty once control characters are removed")
	}
	switch opts.Sound {
	case "", "none", "done", "request":
	default:
		return usagef("notify", "--sound %q: use none, done or request", opts.Sound)
	}
	env := io.env()
	paths := f.Paths()
	cfg, cfgErr := f.Config()
	if cfgErr != nil {
		tellConfigProblems(io.Err, "herdr-pi notify", cfgErr)
	}
	ncfg, _ := notifyConfig(cfg, paths)
	if opts.Sound != "" {
		ncfg.Sound = opts.Sound
	}
	herdrEnv, inHerdr := settings.HerdrEnv(env)
	choice := notify.Choose(ncfg, inHerdr)
	if choice.Problem != "" && choice.Route == notify.RouteNone {
		return fmt.Errorf("not sent: %s", choice.Problem)
	}

	setup := notify.Setup{Config: ncfg, Getenv: env.Get, InHerdr: inHerdr, TUI: true, HTTP: deps.http}
	// noTerminal is why the on-screen channel could not be used while ntfy
	// still can: the push goes out, and this still fails the command.
	var noTerminal error
	switch choice.Route {
	case notify.RouteHerdr:
		h, err := deps.herdr(herdrEnv)
		if err != nil {
			return fmt.Errorf("cannot reach Herdr at %s: %w", herdrEnv.SocketPath, err)
		}
		setup.Herdr = h
	case notify.RouteTerminal:
		w, closeW, err := notifyTerminal(io, deps)
		switch {
		case err != nil && !(ncfg.Enabled && ncfg.Ntfy.Enabled):
			paths := f.Paths()
			return fmt.Errorf("%w: run it from a terminal or a Herdr pane, or turn on [notify.ntfy] in %s to be told anywhere (docs/configuration.md)",
				err, paths.Pretty(paths.ConfigFile))
		case err != nil:
			noTerminal = err
		default:
			defer closeW()
			setup.Terminal = w
			if env.Get("TMUX") != "" {
				setup.Tmux = deps.tmux
			}
		}
	}
	o, _ := setup.Options(ctx)
	if o.Herdr == nil && o.Terminal == nil && o.Ntfy == nil {
		tell(io.Err, "herdr-pi notify: not sent: %s\n", choice.Why)
		return nil
	}
	body := wrapperPlace(ctx, f).After(opts.Title, opts.Body)
	n := notify.Start(o)
	n.Post(notify.Message{Title: opts.Title, Body: body, ID: fmt.Sprintf("herdr-pi-%d", os.Getpid())})
	ctx, cancel := context.WithTimeout(ctx, deps.deadline)
	defer cancel()
	n.Close(ctx)
	err := notifyOutcome(io, n.Status())
	switch {
	case noTerminal != nil && err != nil:
		return fmt.Errorf("%w; %w", noTerminal, err)
	case noTerminal != nil:
		return fmt.Errorf("%w; ntfy got it", noTerminal)
	}
	return err
}

// placeLookup bounds how long `notify` asks the pane's wrapper which pane
// it is: the notification matters more than the names, and a suspended
// wrapper must not hold a hook.
const placeLookup = time.Second

// wrapperPlace names the pane `notify` runs in the way its wrapper's own
// notifications do (label · project · session), asked of the wrapper of
// this process or pane; nothing when there is none or it does not answer
// in time: the notification goes out as written.
func wrapperPlace(ctx context.Context, f *Factory) notify.Place {
	ctx, cancel := context.WithTimeout(ctx, placeLookup)
	defer cancel()
	c, err := dialWrapper(ctx, f)
	if err != nil {
		return notify.Place{}
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return notify.Place{}
	}
	var project string
	if st.Cwd != "" {
		project = filepath.Base(st.Cwd)
	}
	return notify.Place{Label: st.Label, Project: project, Session: st.SessionName}
}

// notifyOutcome turns what each channel did into the exit: delivered, or
// not shown because the person turned it off, is success.
func notifyOutcome(io IO, status []notify.ChannelStatus) error {
	var failed []string
	for _, st := range status {
		switch {
		case st.Failed > 0:
			failed = append(failed, st.Channel+": "+st.Outcome())
		case st.Sent == 0:
			failed = append(failed, st.Channel+": not delivered before the deadline")
		case st.Channel == "terminal" && st.Last == notify.OutcomeBell:
			// A bell reached the person; the words did not, and a hook's
			// author would never know why.
			tell(io.Err, "herdr-pi notify: the terminal got a bell, not the notification: %s\n", st.Hint)
		case st.Channel == "herdr" && st.Last == notify.ReasonDisabled:
			tell(io.Err, "herdr-pi notify: Herdr did not show it: %s\n", notify.HerdrHint(st.Last))
		case st.Channel == "herdr" && st.Last != notify.ReasonShown:
			failed = append(failed, "herdr: "+st.Outcome())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("not delivered: %s", strings.Join(failed, "; "))
	}
	return nil
}

// notifyTerminal is the terminal `notify` runs in: stdout when it is one,
// else the controlling terminal (a hook's stdout is often a pipe).
func notifyTerminal(io IO, deps notifyDeps) (io.Writer, func(), error) {
	if isTerminal(io.Out) {
		return io.Out, func() {}, nil
	}
	tty, err := deps.openTTY()
	if err != nil {
		return nil, nil, fmt.Errorf("no terminal to show it on: stdout is not a terminal and there is no controlling terminal (%v)", err)
	}
	return tty, func() { tty.Close() }, nil
}

// notifyConfig merges what decides notifications: herdr-pi's config.toml
// over the seed extension's config.json over the built-in table. The
// second result lists problems in the seed's file (for doctor); they leave
// the built-in values in place.
func notifyConfig(cfg settings.Config, paths settings.Paths) (notify.Config, []string) {
	seedPath := paths.TerminalNotificationsFile()
	seed, seedErr := settings.LoadTerminalNotifications(seedPath, paths.Pretty(seedPath))
	var warnings []string
	var ce *settings.ConfigError
	if errors.As(seedErr, &ce) {
		for _, p := range ce.Problems {
			warnings = append(warnings, p.String())
		}
	}
	n := cfg.Notify
	table := osc.DefaultTable().
		Overlay(osc.Protocol(seed.Fallback), protocolMap(seed.TermPrograms)).
		Overlay(osc.Protocol(n.Fallback), protocolMap(n.TermPrograms))
	return notify.Config{
		Enabled: cfg.NotifyEnabled(),
		Channel: n.Channel,
		Sound:   n.Sound,
		Table:   table,
		// Only wrap's triggers read it.
		FinishedAfter: n.FinishedAfter.D(),
		Ntfy: notify.NtfyConfig{
			Enabled: n.Ntfy.Enabled, Server: n.Ntfy.Server, Topic: n.Ntfy.Topic, Token: n.Ntfy.Token,
			Priority: n.Ntfy.Priority, Timeout: n.Ntfy.Timeout.D(),
		},
	}, warnings
}

// protocolMap converts validated names (settings checked them).
func protocolMap(m map[string]string) map[string]osc.Protocol {
	out := make(map[string]osc.Protocol, len(m))
	for k, v := range m {
		if p, ok := osc.ParseProtocol(v); ok {
			out[k] = p
		}
	}
	return out
}
