package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
)

// Terminal writes notifications as OSC sequences to the terminal herdr-pi
// controls.
type Terminal struct {
	// W is the terminal. Each notification is one Write call; when W is
	// shared with the agent's output, it must not split another writer's
	// chunk.
	W io.Writer
	// Target says which sequence and how much tmux wrapping.
	Target Target
	// Tmux, when set, is asked before each notification whether every
	// tmux of Target lets the sequence out (see Deliver); nil: never asked.
	Tmux PassthroughAsker
}

// PassthroughAsker asks one tmux server whether it lets passthrough
// sequences out of a pane: its allow-passthrough, and whether the pane is
// on show (what "on" needs).
type PassthroughAsker interface {
	Passthrough(ctx context.Context, lvl tmux.Level) (string, error)
	OnShow(ctx context.Context, lvl tmux.Level) (bool, error)
}

// Outcomes of the terminal channel.
const (
	OutcomeWritten = "written"
	// OutcomeBell: a tmux on the way drops the sequence, so the pane's
	// bell was rung instead.
	OutcomeBell = "bell"
)

// passthroughAskTime bounds the questions Deliver asks tmux: a tmux that
// does not answer costs this much delay, and the sequence is written.
const passthroughAskTime = 2 * time.Second

// Sequence returns the bytes that show m with t's target, or nil when
// there is nothing to show.
func (t Target) Sequence(m Message) []byte {
	// OSC 9 carries a single message and the seed's OSC 99 sends only the
	// body chunk (notifications-and-sentinel.md §3.2, §23): fold the title
	// into the body, or the person would read a project name without
	// knowing what happened. The body is sized with the title's room
	// taken, so the encoder's own cut never drops its end ("+2 more").
	fold := t.Protocol != osc.OSC777 && strings.TrimSpace(m.Title) != ""
	limit := osc.MaxCodePoints
	if fold {
		limit = max(limit-utf8.RuneCountInString(osc.Sanitize(m.Title)+partSep), minBodyRoom)
	}
	n := osc.Notification{Title: m.Title, Body: m.screenBody(limit), ID: m.ID}
	if fold && strings.TrimSpace(n.Body) != "" {
		// A title that fills the sequence alone (a hook's) gives up its
		// end, behind an ellipsis, to the body: the encoder's cut would
		// drop the whole body instead.
		room := osc.MaxCodePoints - utf8.RuneCountInString(partSep+osc.Sanitize(n.Body))
		n.Body = osc.Truncate(osc.Sanitize(m.Title), room) + partSep + n.Body
	}
	return osc.WrapTmux(osc.Encode(t.Protocol, n), t.TmuxLevels)
}

// minBodyRoom is the body's room beside a title that fills the sequence
// (a hook's own): the body is then cut, not left out.
const minBodyRoom = 32

// Send writes m.
func (t *Terminal) Send(m Message) error {
	if err := osc.Emit(t.W, t.Target.Sequence(m)); err != nil {
		return fmt.Errorf("writing to the terminal: %w", err)
	}
	return nil
}

// Deliver writes m as Send does, unless a tmux between herdr-pi and the
// terminal drops passthrough sequences (allow-passthrough off, tmux's own
// default; "on", or a tmux older than the option, from a pane not on show,
// a window in the background): the sequence would vanish
// without a word (oh-my-pi#3395), so the pane's bell is rung instead,
// which tmux marks on the window and passes on to the terminal as its
// bell. why then names the tmux and the way to let notifications through.
// tmux is asked each time, so a setting changed while the agent runs
// counts from the next notification on.
func (t *Terminal) Deliver(ctx context.Context, m Message) (outcome, why string, err error) {
	seq := t.Target.Sequence(m)
	if len(seq) > 0 {
		why = t.dropped(ctx)
	}
	if why != "" {
		seq = []byte{'\a'}
	}
	if err := osc.Emit(t.W, seq); err != nil {
		return "", "", fmt.Errorf("writing to the terminal: %w", err)
	}
	if why != "" {
		return OutcomeBell, why, nil
	}
	return OutcomeWritten, "", nil
}

// dropped names the first tmux of the target that drops passthrough
// sequences, and what to do; "" when none does or none could be asked (then
// the sequence is written, as it would be without asking).
func (t *Terminal) dropped(ctx context.Context) string {
	if t.Tmux == nil || t.Target.TmuxLevels == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, passthroughAskTime)
	defer cancel()
	for _, lvl := range t.Target.Tmux {
		v, err := t.Tmux.Passthrough(ctx, lvl)
		switch {
		case errors.Is(err, tmux.ErrNoPassthrough):
			// Before 3.3 nothing turned passthrough off: such a tmux lets
			// the sequence out of a pane on show, as "on" does.
			if shown, err := t.Tmux.OnShow(ctx, lvl); err == nil && !shown {
				return tmuxWhere(lvl) + ": the pane is not on show, and a tmux older than 3.3 lets sequences out of panes on show only, so it dropped this one: the pane's bell was rung instead; upgrade tmux to 3.4 or newer and `set -g allow-passthrough all` to let them out of every pane"
			}
		case err == nil && v == "off":
			return tmuxWhere(lvl) + ": allow-passthrough is off, so tmux drops notification sequences: the pane's bell was rung instead; " + passthroughFix
		case err == nil && v == "on":
			if shown, err := t.Tmux.OnShow(ctx, lvl); err == nil && !shown {
				return tmuxWhere(lvl) + ": the pane is not on show, and allow-passthrough on lets sequences out of panes on show only, so tmux dropped this one: the pane's bell was rung instead; `set -g allow-passthrough all` (tmux 3.4 or newer) lets them out of every pane"
			}
		}
	}
	return ""
}

// passthroughFix is how a person lets notification sequences out of tmux.
const passthroughFix = "run `tmux set -g allow-passthrough on` and add `set -g allow-passthrough on` to ~/.tmux.conf"

// tmuxWhere names a tmux level for the person.
func tmuxWhere(lvl tmux.Level) string {
	where := "tmux server " + lvl.Socket
	if lvl.Pane != "" {
		where += ", pane " + lvl.Pane
	}
	return where
}

// Target is where a terminal notification goes: the protocol of the
// terminal outside and the tmux servers in between.
type Target struct {
	Protocol osc.Protocol
	// TmuxLevels is how many tmux servers the sequence must pass.
	TmuxLevels int
	// Tmux lists those servers, innermost first, as far as they were found.
	Tmux []tmux.Level
	// TermProgram is the TERM_PROGRAM the protocol was chosen for, and
	// From says where it came from ("environment", or "tmux global
	// environment" when tmux hid it).
	TermProgram, From string
	// Reason says whether TERM_PROGRAM, KITTY_WINDOW_ID or the fallback
	// chose the protocol, so doctor can tell the person.
	Reason osc.Reason
}

// TmuxProbe is what Target needs to ask tmux.
type TmuxProbe interface {
	Levels(ctx context.Context, getenv func(string) string) []tmux.Level
	OuterTermProgram(ctx context.Context, lvl tmux.Level) string
}

// LevelsOverride is the environment variable that sets the number of tmux
// levels when detection cannot see them (see [tmux.Probe.Levels]).
const LevelsOverride = "HERDR_PI_TMUX_LEVELS"

// ResolveTarget picks the protocol and tmux wrapping for the terminal of a
// process with environment getenv. Inside tmux, panes see TERM_PROGRAM=tmux,
// so the outermost server is asked what the real terminal set, unless the
// table maps "tmux" itself. probe may be nil outside tmux.
func ResolveTarget(ctx context.Context, getenv func(string) string, table osc.Table, probe TmuxProbe) Target {
	t := Target{TermProgram: strings.TrimSpace(getenv("TERM_PROGRAM")), From: "environment"}
	if lvl, inTmux := tmux.FromEnv(getenv); inTmux {
		t.Tmux = []tmux.Level{lvl}
		if probe != nil {
			if found := probe.Levels(ctx, getenv); len(found) > 0 {
				t.Tmux = found
			}
		}
		t.TmuxLevels = len(t.Tmux)
		// A table entry of the user's own for "tmux" is their answer
		// (seed 003: their termPrograms override the built-ins), so the
		// outer terminal is asked only when nothing names tmux.
		if probe != nil && (t.TermProgram == "" || t.TermProgram == "tmux" && !table.Maps("tmux")) {
			if outer := probe.OuterTermProgram(ctx, t.Tmux[len(t.Tmux)-1]); outer != "" {
				t.TermProgram, t.From = outer, "tmux global environment"
			}
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(LevelsOverride))); err == nil && n >= 0 && n <= 8 {
		t.TmuxLevels = n
	}
	t.Protocol, t.Reason = table.ResolveWhy(t.TermProgram, getenv("KITTY_WINDOW_ID"))
	return t
}
