package commands

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/notify/tmux"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

// notifyDrain bounds how long wrap's exit waits for notifications still
// queued (Herdr paces toasts one a second).
const notifyDrain = 1500 * time.Millisecond

// wrapNotifier is wrap's Notifier and the triggers that feed it from the
// state machine, or nothing when notifications are off or no channel can
// reach the person.
type wrapNotifier struct {
	n        *notify.Notifier
	triggers *notify.Triggers
	// board is shared with the other wrappers of the Herdr; nil outside.
	board *board.Board
}

// boardKept is the toast board's Kept, nil without a board.
func (w wrapNotifier) boardKept() func() []string {
	if w.board == nil {
		return nil
	}
	return w.board.Kept
}

// notifyNames is what a wrapper's notifications name: the agent in the
// title, the project (cwd's base name) and the pane's label in the body.
type notifyNames struct {
	Cwd, Agent, Label string
}

// startWrapNotifier picks the channels for this pane: Herdr's toast inside
// Herdr, the terminal's own sequence outside it (written by the copy loop
// through inject, so it never lands inside the agent's output, and only
// when the agent runs its TUI), ntfy when configured. The Notifier's
// goroutines are owned by it and end in close.
func startWrapNotifier(ctx context.Context, env settings.Env, paths settings.Paths, cfg settings.Config,
	h settings.Herdr, inHerdr, tui bool, inject *pty.Injector, names notifyNames, barrier notify.Barrier, log *logger) wrapNotifier {
	ncfg, warnings := notifyConfig(cfg, paths)
	for _, w := range warnings {
		log.Printf("notify: %s", w)
	}
	setup := notify.Setup{Config: ncfg, Getenv: env.Get, InHerdr: inHerdr, TUI: tui, Terminal: inject,
		AgentName: displayName(names.Agent), Project: filepath.Base(names.Cwd), Label: names.Label, Logf: log.Printf}
	var shared *board.Board
	if inHerdr {
		setup.Herdr, _ = herdrChannel(h)
		setup.Barrier = barrier // each toast waits for the state it is about to reach Herdr
		setup.Instance = h.PaneID
		// Herdr shows one toast a second for all panes: the questions it
		// holds back are left where the other wrappers' toasts name them.
		// Its questions are named there only while it is present (its
		// lock held), so a wrapper killed is never named.
		b, err := openBoard(paths, h)
		if err == nil {
			if err = b.Present(notify.PaneName(names.Label, filepath.Base(names.Cwd))); err != nil {
				b.Close()
			}
		}
		if err != nil {
			log.Printf("notify: each toast goes alone, without the board the wrappers share: %v", err)
		} else {
			setup.Board = b
			// Two unlabelled Pis in one project would send the same words:
			// while another wrapper has this pane's name, toasts say its tab.
			setup.Roster, setup.Where = b, paneWhere(herdr.NewClient(h.SocketPath), h.PaneID)
			shared = b
		}
	} else {
		setup.Instance = "pid" + strconv.Itoa(os.Getpid())
	}
	if env.Get("TMUX") != "" {
		setup.Tmux = tmux.Probe{Run: tmux.Exec{}}
	}
	o, choice := setup.Options(ctx)
	if choice.Problem != "" {
		// What doctor fails on: said with the fix, for the person who
		// reads the log wondering why nothing shows.
		log.Printf("notify: %s: %s", choice.Why, choice.Problem)
	} else {
		log.Printf("notify: %s", choice.Why)
	}
	if o.Herdr == nil && o.Terminal == nil && o.Ntfy == nil {
		if shared != nil {
			shared.Close()
		}
		return wrapNotifier{}
	}
	n := notify.Start(o)
	return wrapNotifier{n: n, triggers: notify.NewTriggers(n, ncfg.FinishedAfter), board: shared}
}

// hushedForNested keeps this wrapper's notifications back while a
// herdr-pi wrapper started inside its agent holds the pane (wrap bash, and
// wrap pi in that shell): this one reads the inner agent's screen as its
// own, and the inner one tells the person of every question already, so
// one question would otherwise bring two notifications. Its notifications
// go again once the inner one has ended. A wrapper that stands aside for
// one in another terminal of the pane is not hushed: its agent is another.
func hushedForNested(p *herdr.Presence, logf func(string, ...any)) func() bool {
	return func() bool {
		pid, ok := p.HeldFromWithin()
		if ok {
			logf("notify: not notifying: the herdr-pi wrapper pid %d, started inside this one's agent, holds the pane and notifies for what this one's screen shows", pid)
		}
		return ok
	}
}

// sessionName ends the body of the notifications that follow with the
// session's display name (Pi's /name), as the probe says it.
func (w wrapNotifier) sessionName(name string) {
	if w.n != nil {
		w.n.SetSessionName(name)
	}
}

// status is each channel's record for `herdr-pi status`; nil when no
// channel runs.
func (w wrapNotifier) status() []control.NotifyChannel {
	if w.n == nil {
		return nil
	}
	var out []control.NotifyChannel
	for _, c := range w.n.Status() {
		out = append(out, control.NotifyChannel{Channel: c.Channel, Sent: c.Sent, Failed: c.Failed, Last: c.Last, Failing: c.Failing, Hint: c.Hint})
	}
	return out
}

func (w wrapNotifier) close() {
	if w.n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
	defer cancel()
	w.n.Close(ctx)
	if w.board != nil {
		w.board.Close()
	}
}

// paneWhere says where the pane is in Herdr as a person finds it: its
// tab's own label when it was given one, else the tab's number ("tab 2").
// Empty when Herdr cannot say.
func paneWhere(c *herdr.Client, paneID string) func(ctx context.Context) string {
	return func(ctx context.Context) string {
		p, err := c.PaneGet(ctx, paneID)
		if err != nil {
			return ""
		}
		tabs, err := c.TabList(ctx, p.WorkspaceID)
		if err != nil {
			return ""
		}
		for _, t := range tabs {
			if t.TabID != p.TabID {
				continue
			}
			if t.Label != "" && t.Label != strconv.Itoa(t.Number) {
				return "tab " + t.Label
			}
			return "tab " + strconv.Itoa(t.Number)
		}
		return ""
	}
}

// displayName is how notifications name an agent: its id with a capital
// ("pi" → "Pi", "claude" → "Claude").
func displayName(agent string) string {
	if agent == "" {
		return notify.DefaultAgentName
	}
	r, size := utf8.DecodeRuneInString(agent)
	return string(unicode.ToUpper(r)) + agent[size:]
}

// openBoard opens the toast board in herdr-pi's private runtime directory,
// which, like the board itself, must be ours and closed to others: the
// board names the panes that ask.
func openBoard(paths settings.Paths, h settings.Herdr) (*board.Board, error) {
	dir := filepath.Join(paths.RuntimeBase, "toasts")
	for _, d := range []string{paths.RuntimeBase, dir} {
		if err := control.EnsurePrivateDir(d); err != nil {
			return nil, err
		}
	}
	return board.Open(dir, h.SocketPath, h.PaneID)
}
