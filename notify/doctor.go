package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/herdr-pi/herdr-pi/internal/redact"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
)

// CheckStatus grades one doctor row.
type CheckStatus string

// The grades, from good to bad.
const (
	CheckOK   CheckStatus = "ok"
	CheckInfo CheckStatus = "info"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
)

// Check is one row of `herdr-pi doctor` about notifications.
type Check struct {
	Name   string
	Status CheckStatus
	// Detail says what was found, in a sentence.
	Detail string
	// Fix says what to do about it; empty when nothing.
	Fix string
}

// PassthroughProbe is what doctor asks tmux.
type PassthroughProbe interface {
	TmuxProbe
	Passthrough(ctx context.Context, lvl tmux.Level) (string, error)
}

// DoctorInput is what the notification checks look at.
type DoctorInput struct {
	// Config is what herdr-pi's config and Pi's notification config chose
	// (problems in the latter are doctor's config section's to show).
	Config  Config
	Getenv  func(string) string
	InHerdr bool
	// Tmux asks tmux; nil skips the tmux checks.
	Tmux PassthroughProbe
	// ConfigFile is herdr-pi's config file as the person knows it (~/…),
	// named by the fixes that edit it; "" says "herdr-pi's config.toml".
	ConfigFile string
	// Rejected, when not empty, is herdr-pi's config file, which was
	// rejected for a mistake: Config then holds the built-in defaults, and
	// the rows that show them say so rather than describe them as chosen.
	Rejected string
}

// Doctor checks how notifications would reach the person from here.
func Doctor(ctx context.Context, in DoctorInput) []Check {
	var checks []Check
	c := Choose(in.Config, in.InHerdr)
	defaults := ""
	if in.Rejected != "" {
		defaults = fmt.Sprintf(" (the built-in default: %s was rejected, see the config section, so none of its settings apply)", in.Rejected)
	}
	switch {
	case c.Problem != "":
		file := cmp.Or(in.ConfigFile, "herdr-pi's config.toml")
		checks = append(checks, Check{Name: "notification channel", Status: CheckFail, Detail: c.Problem, Fix: "edit [notify] channel in " + file})
	case c.Route == RouteNone:
		checks = append(checks, Check{Name: "notification channel", Status: CheckInfo, Detail: "none: " + c.Why + defaults})
	default:
		checks = append(checks, Check{Name: "notification channel", Status: CheckOK, Detail: string(c.Route) + ": " + c.Why + defaults})
	}
	// Whether Herdr shows its toasts is for the caller to say: it depends
	// on Herdr's own config (doctor's Herdr section reads it).
	if c.Route == RouteTerminal {
		var probe TmuxProbe
		if in.Tmux != nil {
			probe = in.Tmux
		}
		t := ResolveTarget(ctx, in.Getenv, in.Config.Table, probe)
		detail := protocolDetail(t)
		if in.Rejected != "" {
			detail += fmt.Sprintf(" ([notify] term_programs and fallback of %s do not apply: it was rejected)", in.Rejected)
		}
		checks = append(checks, Check{Name: "terminal protocol", Status: CheckOK, Detail: detail})
		if in.Tmux != nil && len(t.Tmux) > 0 {
			checks = append(checks, TmuxPassthrough(ctx, in.Tmux, t.Tmux)...)
		}
	}
	ntfy := ntfyCheck(in.Config)
	if in.Rejected != "" && !in.Config.Ntfy.Enabled {
		// Whatever the file says about ntfy, it is not what runs.
		ntfy.Detail = fmt.Sprintf("off, the built-in default: %s was rejected (see the config section), so its [notify.ntfy] does not apply until it is fixed", in.Rejected)
	}
	checks = append(checks, ntfy)
	return checks
}

// protocolDetail says which protocol t uses and what chose it. An
// inherited KITTY_WINDOW_ID is named only when it decided, so a person in
// a kitty-started tmux attached from another terminal is not told "kitty".
func protocolDetail(t Target) string {
	program := "TERM_PROGRAM is not set"
	if t.TermProgram != "" {
		program = fmt.Sprintf("TERM_PROGRAM=%q (%s) is not in the table", t.TermProgram, t.From)
	}
	switch t.Reason {
	case osc.ByTermProgram:
		return fmt.Sprintf("%s, for TERM_PROGRAM=%q (%s)", t.Protocol, t.TermProgram, t.From)
	case osc.ByKitty:
		if t.TermProgram == "" {
			return fmt.Sprintf("%s, for kitty: KITTY_WINDOW_ID is set and TERM_PROGRAM is not", t.Protocol)
		}
		return fmt.Sprintf("%s, for kitty: KITTY_WINDOW_ID is set and %s", t.Protocol, program)
	default:
		return fmt.Sprintf("%s, the fallback: %s", t.Protocol, program)
	}
}

// TmuxPassthrough says, for each tmux server between the process and the
// terminal (innermost first), whether allow-passthrough lets notification
// sequences out, and if not, why notifications will not show.
func TmuxPassthrough(ctx context.Context, probe PassthroughProbe, levels []tmux.Level) []Check {
	var checks []Check
	for i, lvl := range levels {
		name := "tmux passthrough"
		if len(levels) > 1 {
			name = fmt.Sprintf("tmux passthrough (level %d of %d)", i+1, len(levels))
		}
		where := tmuxWhere(lvl)
		v, err := probe.Passthrough(ctx, lvl)
		switch {
		case errors.Is(err, tmux.ErrNoPassthrough):
			checks = append(checks, Check{Name: name, Status: CheckOK,
				Detail: where + ": " + err.Error() + ": it lets notifications pass while the pane is visible, as allow-passthrough on does (tmux 3.4+ with \"all\" also passes them from hidden panes)"})
		case err != nil:
			checks = append(checks, Check{Name: name, Status: CheckWarn, Detail: "could not ask " + where + ": " + err.Error(),
				Fix: "check that this tmux server still runs and that tmux is on PATH; then run doctor again"})
		case v == "off":
			checks = append(checks, Check{Name: name, Status: CheckFail,
				Detail: where + ": allow-passthrough is off, so tmux drops the notification sequences and notifications will not show",
				Fix:    passthroughFix})
		case v == "on":
			checks = append(checks, Check{Name: name, Status: CheckOK,
				Detail: where + ": allow-passthrough is on (notifications pass while the pane is visible; \"all\", tmux 3.4+, also passes them from hidden panes)"})
		default:
			checks = append(checks, Check{Name: name, Status: CheckOK, Detail: where + ": allow-passthrough is " + v})
		}
	}
	return checks
}

func ntfyCheck(cfg Config) Check {
	n := cfg.Ntfy
	if !n.Enabled || !cfg.Enabled {
		return Check{Name: "ntfy", Status: CheckInfo, Detail: "off (opt in with [notify.ntfy] enabled = true, server and topic)"}
	}
	ny := Ntfy{Server: n.Server, Topic: n.Topic, Token: n.Token}
	if _, err := ny.URL(); err != nil {
		return Check{Name: "ntfy", Status: CheckFail, Detail: err.Error(), Fix: "set [notify.ntfy] server to an http(s) URL"}
	}
	if w := ny.PlainTextWarning(); w != "" {
		return Check{Name: "ntfy", Status: CheckWarn, Detail: w, Fix: "use an https:// server"}
	}
	auth := "no token"
	if n.Token != "" {
		auth = "with a token"
	}
	return Check{Name: "ntfy", Status: CheckOK, Detail: fmt.Sprintf("posting to %s (topic set, %s, priority %d)", redact.URL(n.Server), auth, n.Priority)}
}
