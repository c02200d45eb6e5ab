package notify

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// Config is what the person chose about notifications, already merged from
// herdr-pi's config.toml and the seed extension's config.json.
type Config struct {
	Enabled bool
	// Channel is auto, herdr, terminal or off.
	Channel string
	// Sound is Herdr's toast sound.
	Sound string
	// FinishedAfter is how long a run must take before its end is told
	// ("finished"); 0: every run. See [NewTriggers].
	FinishedAfter time.Duration
	// Table picks the OSC protocol from TERM_PROGRAM.
	Table osc.Table
	Ntfy  NtfyConfig
}

// NtfyConfig is the opt-in ntfy channel.
type NtfyConfig struct {
	Enabled  bool
	Server   string
	Topic    string
	Token    string
	Priority int
	Timeout  time.Duration
}

// Route is the channel a notification is shown on where the person sits.
type Route string

// The routes.
const (
	RouteNone     Route = "none"
	RouteHerdr    Route = "herdr"
	RouteTerminal Route = "terminal"
)

// Choice is the route for a place and why.
type Choice struct {
	Route Route
	// Why says in a sentence why this route.
	Why string
	// Problem, when set, says why notifications will not show this way.
	Problem string
}

// Choose picks the on-screen channel. Inside a complete Herdr environment
// it is Herdr's notification.show: Herdr does not pass OSC notifications
// from a pane to the host terminal (notifications-and-sentinel.md §2).
// Elsewhere it is the terminal. ntfy is chosen separately ([Config.Ntfy]).
func Choose(cfg Config, inHerdr bool) Choice {
	switch {
	case !cfg.Enabled:
		return Choice{Route: RouteNone, Why: "notifications are off (notify.enabled = false)"}
	case cfg.Channel == "off":
		return Choice{Route: RouteNone, Why: "the on-screen channel is off (notify.channel = \"off\")"}
	case cfg.Channel == "herdr" && !inHerdr:
		return Choice{Route: RouteNone, Why: "notify.channel = \"herdr\"",
			Problem: "notify.channel is \"herdr\" but this is not a complete Herdr pane (HERDR_ENV=1, HERDR_SOCKET_PATH, HERDR_PANE_ID); set it to \"auto\" to use the terminal here"}
	case cfg.Channel == "terminal" && inHerdr:
		return Choice{Route: RouteTerminal, Why: "notify.channel = \"terminal\"",
			Problem: "Herdr does not pass OSC notifications from a pane to your terminal, so these will not show; set notify.channel to \"auto\" to use Herdr's notifications"}
	case cfg.Channel == "terminal":
		return Choice{Route: RouteTerminal, Why: "notify.channel = \"terminal\""}
	case inHerdr:
		return Choice{Route: RouteHerdr, Why: "inside Herdr, which swallows OSC notifications from panes, so Herdr's notification.show"}
	}
	return Choice{Route: RouteTerminal, Why: "outside Herdr, so the OSC sequence your terminal understands"}
}

// Setup is everything needed to build a Notifier's [Options] for a wrapped
// agent.
type Setup struct {
	Config  Config
	Getenv  func(string) string
	InHerdr bool
	// Herdr is the socket client; used when the route is Herdr.
	Herdr Herdr
	// Barrier holds each Herdr toast until the pane's state reached Herdr
	// (the pane's presence in Herdr); nil: toasts do not wait.
	Barrier Barrier
	// Board is shared with the person's other wrappers (notify/board);
	// nil: each pane's toasts go alone.
	Board Board
	// Where and Roster let a toast say where the pane is when another
	// pane has its name (see Options).
	Where  func(ctx context.Context) string
	Roster Roster
	// TUI is true when the agent runs its interactive TUI. In its print,
	// json or rpc modes nothing is written to the terminal (the seed does
	// the same, notifications-and-sentinel.md §7.1): those bytes would land
	// in a pipe or in the output a program parses.
	TUI bool
	// Terminal is the terminal herdr-pi controls.
	Terminal io.Writer
	// Tmux asks tmux about levels and the outer terminal; nil outside tmux.
	Tmux TmuxProbe
	// HTTP sends ntfy requests; http.DefaultClient when nil.
	HTTP                         *http.Client
	AgentName, Project, Instance string
	// Label names the pane among the person's others (see Options.Label).
	Label string
	Logf  func(string, ...any)
}

// Options builds the channels for s.
func (s Setup) Options(ctx context.Context) (Options, Choice) {
	c := Choose(s.Config, s.InHerdr)
	o := Options{Sound: s.Config.Sound, AgentName: s.AgentName, Project: s.Project, Label: s.Label, Instance: s.Instance, Logf: s.Logf}
	switch c.Route {
	case RouteHerdr:
		o.Herdr, o.Barrier, o.Board, o.Where, o.Roster = s.Herdr, s.Barrier, s.Board, s.Where, s.Roster
	case RouteTerminal:
		if s.TUI && s.Terminal != nil {
			o.Terminal = &Terminal{W: s.Terminal, Target: ResolveTarget(ctx, s.Getenv, s.Config.Table, s.Tmux)}
			// The probe that found the levels can usually ask them too.
			if asker, ok := s.Tmux.(PassthroughAsker); ok {
				o.Terminal.Tmux = asker
			}
		}
	}
	if s.Config.Enabled && s.Config.Ntfy.Enabled {
		n := s.Config.Ntfy
		o.Ntfy = &Ntfy{Client: s.HTTP, Server: n.Server, Topic: n.Topic, Token: n.Token, Priority: n.Priority, Timeout: n.Timeout}
	}
	return o, c
}
