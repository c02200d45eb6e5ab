package commands

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/bridge/probe"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/live"
	"github.com/herdr-pi/herdr-pi/internal/redact"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/pane/launch"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/session"
	agentsignals "github.com/herdr-pi/herdr-pi/pane/signals"
	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

type wrapOptions struct {
	Argv  []string
	Agent string
	// NoProbe keeps herdr-pi's extension out of Pi.
	NoProbe bool
	// Label names the pane in notifications (notify.Options.Label).
	Label string
	// NoResume gives Herdr no command to start the agent again after it
	// restarts (resume_argv): the panes herdr-pi open starts, whose
	// session belongs to a workflow's owner or is a read-only inspection.
	NoResume bool
}

func wrapCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "wrap",
		Usage:     "run an agent under a pty, pass the terminal through, report its state",
		ArgsUsage: "[--] <agent> [args…]",
		Description: "Runs the command under a new pseudo-terminal with your window size and passes\n" +
			"every byte and key through untouched. Inside a Herdr pane it reports the agent's\n" +
			"state (idle, working, blocked) to Herdr and releases the pane when it ends.\n" +
			"It exits with the command's status (128+n when it died of signal n, 127 when\n" +
			"it was not found, 126 when it could not be executed), or 2 for a mistake in\n" +
			"the call to herdr-pi itself (an unknown flag, no command), which starts nothing.\n\n" +
			"Flags for herdr-pi come before the command; everything after it goes to the\n" +
			"command. Use -- when the command itself starts with a dash.\n\n" +
			"The agent: --agent names it for detection and for Herdr. Without it, the\n" +
			"screen is read with the manifest [detect] agent names in the config, else the\n" +
			"one named after the command (wrap claude, with a claude manifest), else Pi's;\n" +
			"Herdr shows [herdr] agent when the config sets it, else that agent's id, or\n" +
			"for a command that is not Pi read as Pi's, its own name (wrap bash: bash);\n" +
			"notification titles name the agent the same way.\n\n" +
			"--label names the pane in its notifications: the body starts with it, so\n" +
			"agents that share a project can be told apart (herdr-pi open labels the\n" +
			"panes it opens with the workflow, the attempt and the agent).\n\n" +
			"Herdr 0.9 can start the agent again after Herdr restarts, with the command\n" +
			"wrap gives it (herdr-pi wrap … --session <file>). --no-resume gives none:\n" +
			"herdr-pi open uses it for its panes, whose attempt goes back to its owner\n" +
			"(or whose inspection is read-only) and must not be started a second time.\n\n" +
			"Examples:\n" +
			"  herdr-pi wrap pi\n" +
			"  herdr-pi wrap pi --model anthropic/claude-sonnet-4\n" +
			"  herdr-pi wrap --agent pi -- ./bin/pi-dev --verbose\n" +
			"  herdr-pi wrap --label backend pi",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "agent id for detection and reports, over the config and the command's name (see above)"},
			&cli.StringFlag{Name: "label", Usage: "a name for this pane in its notifications (\"Pi needs your input · backend · api\")"},
			&cli.BoolFlag{Name: "no-probe", Usage: "start Pi without herdr-pi's extension: its state then comes from its screen, its session file and its own status reports"},
			&cli.BoolFlag{Name: "no-resume", Usage: "give Herdr no command to start this agent again after Herdr restarts (see above)"},
		},
		Action: func(c *cli.Context) error {
			opts := &wrapOptions{Argv: c.Args().Slice(), Agent: c.String("agent"), NoProbe: c.Bool("no-probe"), Label: c.String("label"), NoResume: c.Bool("no-resume")}
			if len(opts.Argv) == 0 {
				return usagef("wrap", "no command given (example: herdr-pi wrap pi)")
			}
			if c.IsSet("label") && osc.CleanLabel(opts.Label) == "" {
				return usagef("wrap", "--label %q shows as nothing in a notification: give a name with something visible (--label backend), or leave the flag out", opts.Label)
			}
			switch {
			case c.IsSet("agent") && opts.Agent == "":
				// "--agent=" or "--agent $UNSET" would otherwise pass as no
				// --agent at all, and the id would quietly come from elsewhere.
				return usagef("wrap", "--agent is empty: give an agent id (--agent pi), or leave the flag out to take it from the command")
			case opts.Agent != "":
				if err := settings.CheckAgent(opts.Agent); err != nil {
					return usagef("wrap", "--agent: %v", err)
				}
			}
			return wrapRun(c.Context, f, opts)
		},
	}
}

func wrapRun(ctx context.Context, f *Factory, opts *wrapOptions) error {
	io := f.IO
	env := io.env()
	paths := f.Paths()
	cfg, cfgErr := f.Config()
	if cfgErr != nil {
		// The agent still starts: a typo in the config must not cost the
		// user their session.
		tellConfigProblems(io.Err, "herdr-pi", cfgErr)
	}
	log := f.Log("wrap")
	defer log.Close()
	if cfgErr != nil {
		log.Printf("config: %v", cfgErr)
	}

	stdin, okIn := file(io.In)
	stdout, okOut := file(io.Out)
	if !okIn || !okOut {
		return fmt.Errorf("stdin and stdout %w (a terminal, pipe or file)", errNoFile)
	}
	term := pty.Options{Env: io.Env, Dir: io.Dir, Stdin: stdin, Stdout: stdout, Logf: log.Printf}
	if f, ok := file(io.Err); ok {
		term.SizeFrom = append(term.SizeFrom, f)
	}
	cwd := io.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}

	// Pi's print, json and rpc modes are a pure passthrough: no probe, no
	// prompt change, no reports. The seeds disagree on reporting there;
	// Herdr's own Pi integration ignores non-TUI sessions, and no one at the
	// pane could answer, so we report nothing (docs/blocked.md). Pi's
	// arguments are read where Pi reads them: after node's script, after
	// npx's package.
	agentCmd := launch.Parse(opts.Argv, cwd)
	piArgs := agentCmd.Args
	isPi := runsPi(opts, agentCmd)
	if isPi && !probe.Interactive(piArgs, isTerminal(stdin), isTerminal(stdout)) {
		// Not even a pty: under one, Pi's output would gain carriage
		// returns. herdr-pi becomes Pi, with our stdio, signals and exit
		// drawStatus untouched.
		path, err := pty.Resolve(opts.Argv[0], io.Env)
		if err != nil {
			return explainStart(err, opts.Argv[0], io.Env, io.Dir)
		}
		log.Printf("exec %q: Pi runs non-interactively; herdr-pi steps aside", redact.Argv(opts.Argv))
		log.Close()
		return f.Exec(path, opts.Argv, io.Env, io.Dir)
	}

	manifest, agent := pickManifest(io, paths, cfg, opts, log)
	shown := shownAgent(agent, isPi, opts, cfg)
	herdrEnv, inHerdr := settings.HerdrEnv(env)
	inject := pty.NewInjector()
	tui := isPi || isTerminal(stdin) && isTerminal(stdout)
	// From here the wrapper makes files, a socket and a Herdr claim that
	// only its way out removes, so the signals that would end it at once
	// are held for the whole run, not only while pty.Run runs: one that
	// arrives while the parts start waits in the channel and reaches the
	// agent as soon as it runs (pty.Run reads this channel); one after the
	// agent ended (Ctrl-C on the terminal, no longer raw, while a slow
	// Herdr holds the release) is dropped, and the way out, bounded by
	// herdr.ReleaseBudget, finishes. Stopped after down.run (defers run
	// last first).
	held := make(chan os.Signal, 8)
	pty.Notify(held)
	defer signal.Stop(held)
	var down wrapShutdown
	defer down.run() // every way out, a panic below included
	// Claimed once this wrapper is in the pane's registry (below): a
	// wrapper it replaces there then knows who claims the pane.
	// The agent's terminal, once its pty is open: a wrapper on it runs
	// inside this one's agent, however it was started.
	var agentTerm atomic.Uint64
	term.Terminal = agentTerm.Store
	presence := newPresence(env, paths, cfg, reportLabel(opts.Agent, shown, cfg), agentTerm.Load, log.Printf)
	down.release = func() {
		err := presence.Close(context.Background())
		if err != nil && !presence.Delivered() {
			// Inside Herdr, yet Herdr showed nothing of this run (a socket
			// nobody serves, a hung Herdr, a pane it does not know): the
			// log has the details, but only a person who suspects
			// something reads it. Said once the agent is gone and the
			// terminal is the shell's again, never on the agent's screen.
			tell(io.Err, "herdr-pi: Herdr showed none of this run's states: %v; `herdr-pi doctor` checks the connection\n", err)
		}
	}
	// Notifications name the agent as Herdr shows it: a toast from `wrap
	// bash` saying "Pi needs your input" would send the person to look
	// for a Pi.
	names := notifyNames{Cwd: cwd, Agent: reportLabel(opts.Agent, shown, cfg), Label: opts.Label}
	notes := startWrapNotifier(ctx, env, paths, cfg, herdrEnv, inHerdr, tui, inject, names, presence, log)
	down.notify = notes.close
	if notes.triggers != nil {
		notes.triggers.HushWhile(hushedForNested(presence, log.Printf))
	}

	// The machine delivers events one at a time, in order: transitions are
	// reported before the triggers hear of them.
	det, stopDetection := startDetection(io, env, cfg, manifest, log, reportTransitions(presence.Report), func(e state.Event) {
		if notes.triggers != nil {
			notes.triggers.StateEvent(e)
		}
	})
	down.detection = stopDetection

	signals := agentsignals.New(agentsignals.Config{Machine: det.Machine, Agent: shown, HerdrHealth: presence.Health, Logf: log.Printf,
		SessionName: notes.sessionName, SessionStarted: startedMark(env, log.Printf)})
	det.ReportProgramStatus(signals.ProgramStatus)
	argv := opts.Argv
	rc := control.RunConfig{
		RuntimeBase: paths.RuntimeBase, PaneID: herdrEnv.PaneID, HerdrSocket: herdrEnv.SocketPath,
		Events: signals, Requests: herdrStatus{signals, presence, notes, names}, Logf: log.Printf,
	}
	var handoffs *live.Service
	if isPi {
		// Any Pi may load the workflow engine: its probe then links up as
		// the owner, and live handoffs run here.
		if handoffs = startHandoffs(f, paths, herdrEnv, inHerdr, cwd, log.Printf); handoffs != nil {
			down.handoffs = handoffs.Close
		}
	}
	run, err := control.Start(runConfigWith(rc, handoffs, notes.boardKept()))
	if err == nil && handoffs != nil {
		handoffs.SetRunDir(run.Dir) // held until after handoffs close (wrapShutdown)
	}
	if err != nil {
		// The agent runs anyway; only what needs the socket is missing.
		// One line, so the cause stays short: doctor has the fix for
		// each (a stale XDG_RUNTIME_DIR, a directory not ours, …).
		tell(io.Err, "herdr-pi: no control socket (%v); herdr-pi waiting/status and the Pi probe are off for this run: `herdr-pi doctor runtime` says why and what to do\n", err)
		log.Printf("control: %v", err)
		// status and waiting in the agent then name this cause, not "no
		// wrapper is registered".
		term.Env = childControlEnv(term.Env, nil, err, os.Getpid())
	} else {
		down.control = func() { run.Close() }
		term.Env = childControlEnv(term.Env, run, nil, os.Getpid())
		tellSharing(io.Err, env, run, herdrEnv.PaneID, log)
	}
	presence.Start()
	if isPi {
		probed := false
		switch {
		case run == nil:
		case opts.NoProbe:
			log.Printf("probe: off (--no-probe); Pi runs without it (state from its screen, session file and status reports)")
		case agentCmd.Shape == launch.Opaque:
			log.Printf("probe: %s; Pi runs without it (state from its screen and session file)", agentCmd.Why)
		default:
			if p, err := probe.Write(run.Dir); err != nil {
				// The run directory took the socket but not the probe
				// (its filesystem full, say): as for the socket, the
				// person hears of it once, before Pi's screen, not only
				// the log.
				log.Printf("probe: %v; Pi runs without it", err)
				tell(io.Err, "herdr-pi: the Pi probe is off for this run (%v): Pi's state comes from its screen, session file and status reports only; `herdr-pi doctor runtime` says why and what to do\n", err)
			} else if argv, err = probeArgv(agentCmd, run.Dir, p, cwd, io.Env); err != nil {
				log.Printf("probe: %v; Pi runs without it", err)
				argv = opts.Argv
			} else {
				probed = true
			}
		}
		loc := session.Locate(settings.ParsePiArgs(piArgs), env, paths, cwd, time.Now())
		if run != nil {
			// Other Pis may run in this project, in other panes: a file
			// their probes named is never this Pi's.
			loc.Taken = run.SessionTaken
		}
		w := session.Watch(session.WatchConfig{
			Sink:    signals,
			Locator: loc,
			// Herdr 0.9 restores the agent after a restart with the file
			// the watcher reads, whether the probe named it or, without
			// the probe, the locator found it. `status` shows it too —
			// with the probe, only once Pi named it: its session_file
			// then means Pi runs and writes there (open and live
			// handoffs wait for that), while the locator may find a
			// --session file before Pi has even started.
			OnFile: func(file string) {
				if !probed {
					signals.SessionFileRead(file)
				}
				if !opts.NoResume {
					presence.SetResumeArgv(resumeArgv(opts, agentCmd, file))
				}
			},
			Logf: log.Printf,
		})
		down.session = w.Close
		if probed {
			signals.SetWatcher(claimingWatcher{w, run, log.Printf})
		} else {
			signals.SetWatcher(w)
		}
	}

	log.Printf("start %q (agent %s)", redact.Argv(argv), agent)
	term.Argv, term.Tap, term.Inject = argv, det.Tap, inject
	term.Started = signals.SetChildPID
	// Ctrl-Z: the pane shows the stopped agent idle until fg.
	term.Suspending = func() {
		ctx, cancel := context.WithTimeout(context.Background(), suspendReportWait)
		defer cancel()
		presence.Suspend(ctx, "stopped (Ctrl-Z): fg in the pane's shell resumes it")
	}
	term.Resumed = presence.Resume
	// The agent's exit reaches the machine when the pty sees it, not when
	// the pane is released: the way out (wrapShutdown) can take seconds,
	// and nothing the machine would make of the agent's absence meanwhile
	// may reach Herdr or the notifier; nor can the drain, which a terminal
	// that takes no output holds. Told again once Run returns, which
	// changes nothing when the pty told it (the first telling counts): for
	// a command that never ran, and a child a failed copy loop could not
	// reap in time.
	term.Exited = signals.AgentExited
	term.Signals = held
	tail := &pty.Tail{Size: resumeTail}
	term.Tail = tail
	err = pty.Run(ctx, term)
	signals.AgentExited()
	err = explainStart(err, argv[0], term.Env, cwd)
	log.Printf("end %q: %v", redact.Argv(opts.Argv), err)
	printResumeHint(stdout, opts, agentCmd, tail, log.Printf)
	return err
}

// wrapShutdown is wrap's way out, in this order whatever order the parts
// started in: live handoffs end first (their panes close while Herdr and
// the owner can still hear of it); the pane is released in Herdr next, so nothing said while
// the rest closes (the control socket's closing reasons, the last screen)
// reaches Herdr as a state; then the control socket, the session watcher
// and detection stop; the notifications still queued get their short drain
// last, when they no longer wait for any report. A part that did not start
// has no step. Until the release the state machine still runs, but it
// knows the agent has exited (state.Machine.AgentExited): however long the
// handoffs take to end, what it would make of the agent's absence — a gone
// probe's run told idle, a held dialog closed — comes due no more.
type wrapShutdown struct {
	handoffs, release, control, session, detection, notify func()
}

// run takes every step once; a second run does nothing.
func (d *wrapShutdown) run() {
	steps := []func(){d.handoffs, d.release, d.control, d.session, d.detection, d.notify}
	*d = wrapShutdown{}
	for _, step := range steps {
		if step != nil {
			step()
		}
	}
}

// startedMark tells the opener of this wrapper's pane (herdr-pi open, a
// live handoff) that Pi started, in the file handoff.StartedFileEnv names:
// unlike this wrapper's status, the file is still there when the pane was
// closed right after. nil when no opener asked.
func startedMark(env settings.Env, logf func(string, ...any)) func(string) {
	file := env.Get(handoff.StartedFileEnv)
	if file == "" {
		return nil
	}
	return func(session string) {
		if err := handoff.WriteStarted(file, session); err != nil {
			logf("handoff: cannot tell the pane's opener that Pi started: %v", err)
		}
	}
}

// tellSharing says so when another wrapper runs in this Herdr pane and
// this one is not nested in its agent (the agent's environment would name
// its socket): two terminals in one pane (tmux inside it, say) each
// running herdr-pi wrap. This one holds the pane while it runs (the other
// stands aside, see herdr.PaneWrappers), and the person would otherwise
// wonder why Herdr no longer shows the other agent's state. Said before
// the agent starts, so it stays above the agent's screen.
func tellSharing(w io.Writer, env settings.Env, run *control.Run, pane string, log *logger) {
	other := run.Sharing
	if other == nil {
		return
	}
	if parent, ok := control.EndpointFromEnv(env.Get); ok && parent.Socket == other.Socket {
		log.Printf("control: nested in the wrapper pid %d of pane %s; the pane goes back to it when this one ends", other.PID, pane)
		return
	}
	msg := fmt.Sprintf("another herdr-pi wrapper (pid %d) runs in Herdr pane %s too, not around this one (a second terminal in the pane, such as tmux, or a copied HERDR_PANE_ID?): "+
		"this one holds the pane until it ends (Herdr shows this agent's state, the pane's hooks reach it), and pid %d's state goes back to the pane then; give each agent a pane of its own",
		other.PID, render.Clean(pane), other.PID)
	log.Printf("control: %s", msg)
	tell(w, "herdr-pi: %s\n", msg)
}

// claimingWatcher follows the session file the probe names and claims it
// in the run directory, for the wrappers of other Pis in the project that
// have no probe to tell their own file from this one (see
// control.Run.ClaimSession).
type claimingWatcher struct {
	*session.Watcher
	run  *control.Run
	logf func(string, ...any)
}

func (c claimingWatcher) Follow(path string) {
	if err := c.run.ClaimSession(path); err != nil {
		c.logf("session: cannot claim %s for this Pi (%v); a Pi without the probe in this project may take it for its own", path, err)
	}
	c.Watcher.Follow(path)
}

// probeArgv is Pi's command line with the probe: started through the
// probe's launcher when Pi's entry script allows (the probe then stays out
// of Pi's start-up listing), else with -e where Pi reads its arguments.
func probeArgv(c launch.Command, runDir, probePath, cwd string, env []string) ([]string, error) {
	if node, entry, ok := c.NodeEntry(env, cwd); ok && probe.Launchable(entry) {
		if l, err := probe.WriteLauncher(runDir); err == nil {
			return append(node, probe.LauncherArgs(l, entry, c.Args)...), nil
		}
	}
	return c.With(probe.Inject(probePath, c.Args))
}

// resumeTail is how much of the agent's last output is kept to find Pi's
// resume hint in: the hint and the terminal resets around it, with room.
const resumeTail = 4 << 10

// printResumeHint adds, under Pi's "To resume this session:" hint, the
// herdr-pi command that resumes the same session: herdr-pi wrap, the
// user's --agent and --no-probe, the part of their command that starts Pi, and Pi's resume
// arguments. Only when the hint is the last thing the agent printed.
func printResumeHint(out *os.File, opts *wrapOptions, c launch.Command, tail *pty.Tail, logf func(string, ...any)) {
	hint, ok := launch.ResumeHint(tail.Bytes())
	if !ok {
		return
	}
	line, ok := c.ResumeCommand(wrapSelf(opts), hint)
	if !ok {
		logf("resume: Pi's hint %q has words not fit to show again", hint.Args)
		return
	}
	fmt.Fprintln(out, line)
}

// wrapSelf is the start of a command line that wraps the same agent the
// same way again: herdr-pi wrap with the user's --agent and --no-probe.
func wrapSelf(opts *wrapOptions) []string {
	self := []string{"herdr-pi", "wrap"}
	if opts.Agent != "" {
		self = append(self, "--agent", opts.Agent)
	}
	if opts.NoProbe {
		self = append(self, "--no-probe")
	}
	if opts.Label != "" {
		self = append(self, "--label", opts.Label)
	}
	return self
}

// runsPi reports whether the wrapped command is Pi: --agent pi says so (a
// Pi under another name), or the command names Pi — directly, as a
// runtime's script or a runner's package (launch.Command.Pi). Only Pi gets
// the probe and its arguments read.
func runsPi(opts *wrapOptions, c launch.Command) bool {
	return opts.Agent == "pi" || c.Pi
}

// newPresence is the pane's presence in Herdr when wrap runs inside a
// complete Herdr environment (settings.HerdrEnv), to Start once this
// wrapper is in the pane's registry. Outside one it returns nil, a
// Presence that sends nothing, and logs what is missing when the
// environment is half there.
func newPresence(env settings.Env, paths settings.Paths, cfg settings.Config, agent string, agentTerm func() uint64, logf func(string, ...any)) *herdr.Presence {
	h, ok := settings.HerdrEnv(env)
	if !ok {
		if env.Get("HERDR_ENV") != "" || env.Get("HERDR_SOCKET_PATH") != "" || env.Get("HERDR_PANE_ID") != "" {
			logf("herdr: incomplete Herdr environment (missing %s): not reporting", strings.Join(settings.MissingHerdr(env), ", "))
		}
		return nil
	}
	parent, _ := control.EndpointFromEnv(env.Get)
	return herdr.NewPresence(herdr.PresenceConfig{
		Client: herdr.NewClient(h.SocketPath), PaneID: h.PaneID,
		Source: cfg.Herdr.Source, Agent: agent, Logf: logf,
		Others:   paneWrappers(control.PaneRegistry(paths.RuntimeBase), control.PaneKey(h.SocketPath, h.PaneID), os.Getpid(), agentTerm, parent),
		AwaitEnd: awaitEnd(logf),
	})
}

// shownAgent is the agent a wrapper names to Herdr (unless [herdr] agent
// says otherwise) and in `status`, given the one detection chose. Detection falls back to Pi's manifest for a command it
// has none for; that reads the screen, but does not make the command Pi:
// `wrap bash` is shown as bash, not as a Pi whose sound settings and name
// it would borrow. A command named Pi (isPi), --agent or [detect] agent
// keep detection's choice.
func shownAgent(detected string, isPi bool, opts *wrapOptions, cfg settings.Config) string {
	if detected != "pi" || isPi || opts.Agent != "" || cfg.Detect.Agent != "" || len(opts.Argv) == 0 {
		return detected
	}
	return settings.AgentIDOf(filepath.Base(opts.Argv[0]))
}

// reportLabel is the agent label Herdr shows: --agent, else [herdr] agent
// when the config sets it (a choice beats a guess from the command's
// name), else the agent detection reads the screen as (wrap claude with a
// claude manifest reports as claude).
func reportLabel(flag, detected string, cfg settings.Config) string {
	return cmp.Or(flag, cfg.Herdr.Agent, detected)
}

// runConfigWith is wrap's control run config rc with what the run carries
// besides: the live handoff service (nil: none, as for an agent other
// than Pi) and what the run's hourly freshening keeps young for cleaners
// of /tmp beyond its own files (RunConfig.Keep). The ledger records of
// what is open for this pane (an inspection's) or for this wrapper's
// handoffs live as long as this wrapper does, and only they are kept
// (see handoff/kept.go); the handoff service adds its runs' workspaces.
// So are the wrapper's presence on the toast board and its questions
// there (boardKept, nil without a board): without them the others'
// toasts would stop naming it.
func runConfigWith(rc control.RunConfig, handoffs *live.Service, boardKept func() []string) control.RunConfig {
	rc.Keep = keepBoth(handoff.LedgerAt(rc.RuntimeBase).KeptByThisProcess, boardKept)
	if handoffs != nil { // never a nil *Service in the interfaces
		rc.Owner, rc.Handoffs = handoffs, handoffs
		rc.Keep = keepBoth(handoffs.Kept, boardKept)
	}
	return rc
}

// keepBoth is a RunConfig.Keep that keeps what a and b keep (b may be
// nil: it keeps nothing).
func keepBoth(a, b func() []string) func() []string {
	return func() []string {
		kept := a()
		if b != nil {
			kept = append(kept, b()...)
		}
		return kept
	}
}
