package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

// openFormat names the shape of `open --json` (docs/open.md).
const openFormat = "herdr-pi.open/1"

type openOptions struct {
	Run, Attempt string
	Inspect      bool
	Wait         bool
	// Hold keeps a live attempt's pane across turns until it exits.
	Hold bool
	JSON bool
	List bool
	// Place is "" (the setting decides: split, or the run's workspace in
	// fully inspectable mode), "split", "tab" or "workspace".
	Place string
	// StartTimeout bounds how long open waits for the new pane to start
	// its command; ForkTimeout how long it then waits to learn the fork's
	// file (only for the report: its absence is not an error).
	StartTimeout, ForkTimeout time.Duration
	// live is set once open takes the live path: a --json failure then
	// comes in the live lines' format.
	live bool
	// alsoMatches are the runs of other projects Run, a prefix, passed
	// over for the caller's project's run: --json output carries them
	// (the first object printed), as stderr says them without --json.
	alsoMatches []handoff.OtherMatch
}

func openCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:      "open",
		Usage:     "open a workflow agent attempt in a Herdr pane",
		ArgsUsage: "[<run> <attempt>]",
		Description: "Finds the workflow run (its id or a unique prefix; your project's runs first) and\n" +
			"the attempt: an agent's name, label, number or full id, with #n for an earlier\n" +
			"attempt (the latest by default). It opens Pi on a FORK of that attempt's session,\n" +
			"with read-only tools (read, grep, find, ls) and the attempt's own model, under\n" +
			"herdr-pi wrap, in the attempt's directory: the attempt's transcript never changes.\n\n" +
			"The pane splits yours (right when it is wider than tall, else down) without taking\n" +
			"the focus; in the workflow engine's fully inspectable mode it is a tab \"#n agent\"\n" +
			"of the run's workspace \"workflow <name>\", opened or reused. --split, --tab and\n" +
			"--workspace choose for you.\n\n" +
			"An attempt still running in its owner Pi is live: when that Pi runs under\n" +
			"herdr-pi wrap, open asks it to hand the attempt off at the end of its current\n" +
			"turn; the same session then continues in a pane (a split of the owner's pane, or\n" +
			"the run's workspace) with everything the engine prepared, its custom tools still\n" +
			"running in the owner. open follows the pane and says each change until the\n" +
			"attempt is handed back: when its Pi exits (/quit), the pane closes, or the Pi goes\n" +
			"idle after working (--hold keeps the pane across turns until it exits). Ctrl-C\n" +
			"gives the attempt back at once (an open that joined a handoff under way, asked\n" +
			"for by another open or the owner's /workflow menu, only stops following it).\n" +
			"--inspect opens a read-only fork instead.\n" +
			"An attempt whose owner was killed opens like a finished one.\n\n" +
			"Without arguments on a terminal it offers a picker of recent attempts;\n" +
			"--list prints runs (or one run's attempts) and what open can do with each;\n" +
			"it opens nothing, so --split, --tab, --workspace, --wait, --hold and --inspect\n" +
			"are refused with it.\n\n" +
			"Exits 0 once the pane is open (with --wait, once it ended; on a live attempt, once\n" +
			"the attempt is back with its owner, whoever ended the handoff: --json's reason\n" +
			"says who), 1 when nothing was opened, the handoff was refused or failed, or the\n" +
			"owner Pi went away, 2 for a usage mistake, 130 when interrupted.\n\n" +
			"Examples:\n" +
			"  herdr-pi open 3f0c reviewer\n" +
			"  herdr-pi open 3f0c9a2e reviewer#1 --tab\n" +
			"  herdr-pi open 3f0c fixer --inspect --wait --json\n" +
			"  herdr-pi open 3f0c fixer --hold\n" +
			"  herdr-pi open --list\n" +
			"  herdr-pi open --list 3f0c",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "inspect", Usage: "open a read-only fork even when the attempt is live"},
			&cli.BoolFlag{Name: "wait", Usage: "stay until the pane ends, then clean up and say how it ended"},
			&cli.BoolFlag{Name: "hold", Usage: "a live attempt's pane stays across turns until its Pi exits or it is closed"},
			&cli.BoolFlag{Name: "json", Usage: "print what was opened (or listed) as JSON (format: docs/open.md)"},
			&cli.BoolFlag{Name: "list", Usage: "list runs, or the attempts of <run>, instead of opening"},
			&cli.BoolFlag{Name: "split", Usage: "split this pane, whatever the settings say"},
			&cli.BoolFlag{Name: "tab", Usage: "open a tab in this workspace"},
			&cli.BoolFlag{Name: "workspace", Usage: "open a tab in the run's workspace (created when absent)"},
		},
		Action: withArgs("open", func(c *cli.Context, args []string) error {
			opts := &openOptions{Inspect: c.Bool("inspect"), Wait: c.Bool("wait"), Hold: c.Bool("hold"), JSON: c.Bool("json"), List: c.Bool("list"),
				StartTimeout: 30 * time.Second, ForkTimeout: 20 * time.Second}
			err := openAction(c, f, opts, args)
			if opts.JSON {
				err = openFailedJSON(f.IO.Out, opts, err)
			}
			return err
		}),
	}
}

// openOnlyFlags are open's flags that mean something only when it opens an
// attempt, which --list does not.
var openOnlyFlags = []string{"split", "tab", "workspace", "wait", "hold", "inspect"}

// openAction checks open's arguments and runs it.
func openAction(c *cli.Context, f *Factory, opts *openOptions, args []string) error {
	if opts.List {
		// --list opens nothing: a flag that says how to open would be
		// dropped in silence, and the person meant something by it.
		for _, o := range openOnlyFlags {
			if c.Bool(o) {
				return usagef("open", "--list only lists; --%s is for opening an attempt: drop one of them", o)
			}
		}
	}
	for _, p := range []string{"split", "tab", "workspace"} {
		if c.Bool(p) {
			if opts.Place != "" {
				return usagef("open", "--%s and --%s: choose one place", opts.Place, p)
			}
			opts.Place = p
		}
	}
	switch {
	case len(args) > 2:
		return usagef("open", "unexpected argument %q (give a run and an attempt)", args[2])
	case opts.List && len(args) > 1:
		return usagef("open", "--list takes at most a run, not an attempt (%q)", args[1])
	case !opts.List && len(args) == 1:
		return usagef("open", "name the attempt too (herdr-pi open --list %s shows them)", args[0])
	case opts.Hold && opts.Inspect:
		return usagef("open", "--hold keeps a live handoff's pane across turns; --inspect opens a read-only fork, which has no turns to hold: choose one")
	case len(args) > 0 && args[0] == "":
		// A script's empty "$RUN": neither every run (--list) nor the
		// picker (which would drop the attempt it was given).
		return usagef("open", "the run is empty: give a run id or a unique prefix of one (herdr-pi open --list shows them)")
	}
	if len(args) > 0 {
		opts.Run = args[0]
	}
	if len(args) > 1 {
		opts.Attempt = args[1]
	}
	return openRun(c.Context, f, opts)
}

// openReport is `open --json`.
type openReport struct {
	Format   string `json:"format"`
	Run      string `json:"run"`
	Workflow string `json:"workflow,omitempty"`
	// PrefixAlsoMatches: the runs of other projects the run named (a
	// prefix) passed over for this one.
	PrefixAlsoMatches []handoff.OtherMatch `json:"prefix_also_matches,omitempty"`
	Attempt           string               `json:"attempt"`
	// Session is the attempt's own transcript (left as it is); Fork the new
	// one the pane's Pi writes, when it was learnt in time.
	Session   string `json:"session_file"`
	Fork      string `json:"fork,omitempty"`
	Model     string `json:"model,omitempty"`
	OwnerGone bool   `json:"owner_gone,omitempty"`
	Mode      string `json:"mode"`
	handoff.Opened
	// Ended is how the pane ended (with --wait): exited or closed.
	Ended string `json:"ended,omitempty"`
}

func openRun(ctx context.Context, f *Factory, opts *openOptions) error {
	io := f.IO
	env := io.env()
	paths := f.Paths()
	cwd := io.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	st := store.New(paths.Home, cwd)
	if opts.List {
		return openListRun(f, st, opts)
	}
	if opts.Run == "" {
		if _, ok := io.stdinTerminal(); !ok {
			return usagef("open", "name a run and an attempt (herdr-pi open --list shows them)")
		}
		if tty, _, _ := io.stdoutTerminal(); !tty {
			return usagef("open", "name a run and an attempt (herdr-pi open --list shows them)")
		}
		// What the picker offers opens in a pane of the Herdr open runs
		// in: outside one, said now, not after the person chose.
		if _, _, inHerdr := f.Herdr(); !inHerdr {
			return &notInHerdrError{missing: settings.MissingHerdr(env), picker: true}
		}
		var err error
		if opts.Run, opts.Attempt, err = openPick(ctx, f, st); err != nil {
			return err
		}
	}

	// Everything is checked before Herdr hears anything.
	// A malformed selector is a usage mistake, whatever the store holds.
	sel, err := store.ParseSelector(opts.Attempt)
	if err != nil {
		return openError(err)
	}
	run, passed, err := st.ResolveRun(opts.Run)
	if err != nil {
		return openError(err)
	}
	// Said first: whatever fails next (no such attempt there) may be
	// because the person meant another project's run.
	if opts.alsoMatches = handoff.OtherMatches(passed); passed != nil && !opts.JSON {
		tell(io.Err, "herdr-pi open: %s\n", prefixNote(paths, opts.Run, passed.Refs[run.ID], run.Workflow(), opts.alsoMatches))
	}
	a, err := run.Pick(sel)
	if err != nil {
		return openError(err)
	}
	live, lease, leaseErr := a.Live()
	if leaseErr != nil && !opts.Inspect {
		return openError(leaseErr)
	}
	if live && !opts.Inspect {
		return openLive(ctx, f, opts, a, lease, func() (*store.Attempt, error) {
			r, err := st.FindRun(a.Run.ID)
			if err != nil {
				return nil, err
			}
			return r.Pick(sel)
		})
	}
	if opts.Hold {
		tell(io.Err, "herdr-pi open: --hold is for a live handoff, and %s is not live: opening a read-only fork of it\n", a)
	}
	// With a lease that cannot be read, --inspect opens the fork (its error
	// offers that) without saying the owner is gone: nobody can tell.
	ownerGone, _ := a.OwnerGone()
	if leaseErr != nil {
		ownerGone = false
		what := leaseErr.Error()
		if fe := (*store.FileError)(nil); errors.As(leaseErr, &fe) {
			what = fe.Path + " cannot be read"
		}
		tell(io.Err, "herdr-pi open: %s: whether its owner Pi still runs cannot be told (%s); opening a read-only fork of it all the same, as --inspect asks\n", a, what)
	}
	session, err := a.SessionFile()
	if err != nil {
		return openError(err)
	}
	dir, err := a.Cwd()
	if err != nil {
		return openError(err)
	}
	h, client, inHerdr := f.Herdr()
	if !inHerdr {
		return &notInHerdrError{missing: settings.MissingHerdr(env)}
	}
	cfg, cfgErr := f.Config()
	if cfgErr != nil {
		tellConfigProblems(io.Err, "herdr-pi open", cfgErr)
	}
	place, err := openPlacement(opts, paths, a, h.PaneID, dir)
	if err != nil {
		// Only the place was to be read from the file: a flag chooses it
		// without the file.
		return fmt.Errorf("%w, or choose the place with --split, --tab or --workspace, which open takes without reading it", err)
	}
	// Another placement of the run at this moment may be making its
	// workspace: wait for it to be in the ledger, and look then. Those of
	// other runs are not waited for.
	// Ctrl-C, SIGTERM or a hangup from here on (the wait for the lock
	// included) closes what open opened, if anything, and says so.
	ctx, stop := signal.NotifyContext(ctx, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer stop()
	ledger := handoff.LedgerAt(paths.RuntimeBase)
	placed := lockRunWorkspace(ctx, ledger, &place, a.Run.ID, h.SocketPath, func() {
		tell(io.Err, "herdr-pi open: waiting for another herdr-pi that is placing a pane of run %s in its workspace (at most %d minutes, then it opens anyway)\n", a.Run.Short(), int(handoff.PlacementWait/time.Minute))
	})
	defer placed()
	if ctx.Err() != nil {
		tell(io.Err, "herdr-pi open: interrupted; nothing opened\n")
		return silentExit(exitInterrupted)
	}
	// A tab of the live attempt's label is its own turn at work (fully
	// inspectable mode), not an inspection to reuse: --inspect forks.
	place.Fresh = live
	opener, removeFiles, err := newOpener(f, client, cfg.Open.Pi, env, cwd)
	if err != nil {
		return err
	}
	defer removeFiles()
	switch {
	case ownerGone && opts.JSON:
	case ownerGone && a.Run.State() == "interrupted":
		tell(io.Err, "herdr-pi open: %s never finished: its run was interrupted (its owner Pi went), and nothing runs it until the run is resumed; opening what it left\n", a)
	case ownerGone:
		tell(io.Err, "herdr-pi open: %s never finished: its owner Pi is gone (killed or crashed); opening what it left\n", a)
	}

	launch := opener.InspectLaunch(handoff.Inspection{
		Title: fmt.Sprintf("herdr-pi open: run %s (%s), %s", a.Run.Short(), a.Run.Workflow(), a.Name()),
		Label: place.Title, SessionFile: session, Model: a.Model(), Cwd: dir,
	})
	// Ctrl-C while open works or waits closes what it opened: the pane
	// was only ever this command's.
	opened, err := opener.Open(ctx, launch, place)
	if err != nil {
		err = recordLeftOpen(ledger, a.Run.ID, a.Run.Short(), h.SocketPath, err)
		if ctx.Err() != nil {
			if l, ok := leftOpen(err); ok {
				tell(io.Err, "herdr-pi open: interrupted; %s\n", l)
				return silentExit(exitInterrupted)
			}
			// Open closed what it had made already.
			tell(io.Err, "herdr-pi open: interrupted\n")
			return silentExit(exitInterrupted)
		}
		return fmt.Errorf("%s: %w", a, err)
	}
	// What open created goes to the ledger once its Pi runs, so
	// `herdr-pi close <run>` closes it too.
	var records []handoff.Record
	forget := func(all bool) {
		for _, r := range records {
			if all || r.Kind != "workspace" {
				_ = ledger.Remove(r)
			}
		}
	}
	// closeOpened closes what this command created, and says what it did
	// (left: Herdr refused the close, and what stays is in the ledger).
	// Once its records are in the ledger, others may have joined the
	// workspace it created (an open or a live handoff of the run finds it
	// there): then only its own tab closes, and the workspace stays known
	// to herdr-pi close.
	closeOpened := func() (said string, left bool) {
		what := "nothing: pane " + opened.PaneID + " was open before and stays"
		if len(opened.Created) > 0 {
			what = opened.Created[0]
		}
		if len(records) == 0 {
			err := recordLeftOpen(ledger, a.Run.ID, a.Run.Short(), h.SocketPath, opened.CloseAfter(opener.Herdr, errInterrupted))
			if l, ok := leftOpen(err); ok {
				return l, true
			}
			// Herdr started afresh meanwhile: the id is another's now.
			if fe := (*handoff.ForeignError)(nil); errors.As(err, &fe) {
				return fe.Error(), false
			}
			return "closed " + what, false
		}
		kept, err := opened.CloseJoined(opener.Herdr)
		var fe *handoff.ForeignError
		if errors.As(err, &fe) {
			forget(true) // not herdr-pi's any more: its records go
			return fe.Error(), false
		}
		if err != nil && !handoff.Gone(err) {
			// Its records stay: herdr-pi close finds it (a Herdr gone
			// brings it back when it comes back).
			if handoff.HerdrGone(err) {
				return fmt.Sprintf("%s (%v)", stayWords(what, a.Run.Short(), true), err), true
			}
			return fmt.Sprintf("%s stays open in Herdr (%v): herdr-pi close %s closes it", what, err, a.Run.Short()), true
		}
		forget(!kept)
		if kept {
			what = fmt.Sprintf("tab %s; workspace %s stays (it holds other tabs now, or Herdr could not say)", opened.TabID, opened.WorkspaceID)
		}
		return "closed " + what, false
	}
	interrupted := func() error {
		// Only what this command created is closed: a reused tab was the
		// person's before, and stays.
		said, _ := closeOpened()
		tell(io.Err, "herdr-pi open: interrupted; %s\n", said)
		return silentExit(exitInterrupted)
	}
	// Herdr's events say when the pane ends, from now on: no wait of
	// open's outlives the pane (the person may quit Pi, or close the
	// pane, before open has learnt the fork).
	wctx, stopWatch := context.WithCancel(ctx)
	end := handoff.WatchEnd(wctx, handoff.WatcherEvents(client), client.PaneGet, opened.Placed)
	defer func() { stopWatch(); <-end.Done }()

	rep := openReport{Format: openFormat, Run: a.Run.ID, Workflow: a.Run.Workflow(), PrefixAlsoMatches: opts.alsoMatches, Attempt: a.Name(), Session: session,
		Model: a.Model(), OwnerGone: ownerGone, Mode: string(place.Mode), Opened: opened}
	if !opened.Reused {
		defer os.Remove(opened.WatchFile)
		err := handoff.WaitStarted(ctx, opened, opts.StartTimeout, end.Ended)
		switch {
		case ctx.Err() != nil:
			return interrupted()
		case err != nil:
			return recordLeftOpen(ledger, a.Run.ID, a.Run.Short(), h.SocketPath, opened.CloseAfter(opener.Herdr, fmt.Errorf("%s: %w", a, err)))
		}
		var failed bool
		rep.Fork, failed = handoff.ForkOf(ctx, paths.RuntimeBase, h.SocketPath, opened, opts.ForkTimeout, end.Ended)
		switch {
		case ctx.Err() != nil:
			return interrupted()
		case failed:
			// The pane stays: it shows why, which open cannot tell. It
			// goes when the person has read it, but a workspace open
			// created around it stays: the ledger keeps that, for
			// herdr-pi close and the run's next open.
			if err := recordAroundFailedPane(ledger, a.Run.ID, h.SocketPath, opened.Placed); err != nil {
				tell(io.Err, "herdr-pi open: %v\n", err)
			}
			return fmt.Errorf("%s: the command failed in pane %s before Pi opened the fork; "+
				"the pane shows why (press Enter there to close it)", a, opened.PaneID)
		}
		records = inspectionRecords(ledger, paths.RuntimeBase, a.Run.ID, h.SocketPath, opened.Placed, io.Err)
	}
	placed() // the workspace is in the ledger now, or was already
	if !opts.Wait {
		return printOpen(f, rep, opts.JSON)
	}
	// The pane is open and waited for even when its line cannot be
	// written; the write error is the result once the wait is over.
	var lineErr error
	if !opts.JSON {
		lineErr = printOpenLine(f, rep)
	}
	// The herdr-pi wrap in the pane, as its record names it (else the
	// pane registry): its end ends the wait when Herdr's events cannot.
	pid, dir := 0, ""
	if n := len(records); n > 0 {
		pid, dir = records[n-1].PaneWrapperPID, records[n-1].RunDir
	}
	if pid == 0 {
		pid, dir = handoff.PaneWrapper(paths.RuntimeBase, h.SocketPath, opened.PaneID)
	}
	how, err := waitPaneEnd(ctx, client, opened.PaneID, pid, dir, end)
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		err = fmt.Errorf("waiting for pane %s: %w", opened.PaneID, err)
		if said, left := closeOpened(); left {
			return &leftOpenError{err, said}
		}
		return err
	}
	// The pane is gone; a workspace open created for it may hold more.
	forget(false)
	rep.Ended = string(how)
	if opts.JSON {
		return printOpen(f, rep, opts.JSON)
	}
	if err := say(io.Out, "pane %s %s\n", opened.PaneID, how); err != nil {
		return err
	}
	return lineErr
}

// waitPaneEnd waits for the pane to end, as Herdr's events tell (end) —
// or, when those never come (Herdr went away), as the end of the herdr-pi
// wrap in the pane (pid, its run directory dir; none when pid is 0) does.
func waitPaneEnd(ctx context.Context, client *herdr.Client, pane string, pid int, dir string, end *handoff.PaneEnd) (handoff.Ended, error) {
	var wrapperGone <-chan struct{}
	if pid > 0 {
		gctx, stop := context.WithCancel(ctx)
		gone, watched := handoff.WatchWrapper(gctx, pid, dir)
		defer func() { stop(); <-watched }()
		wrapperGone = gone
	}
	select {
	case <-end.Done:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-wrapperGone:
		if how, ok := handoff.EndedAfterWrapper(ctx, client.PaneGet, pane, end.Done, handoff.WrapperEndGrace); ok {
			return how, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	return end.How, end.Err
}

// recordLeftOpen puts in the ledger what a failed Open left open in Herdr
// (a *handoff.LeftOpenError: closing it failed too), and says in the
// error that herdr-pi close closes it, or that it could not be recorded.
func recordLeftOpen(ledger handoff.Ledger, run, short, socket string, err error) error {
	recs, lerr := ledger.AddLeftOpen(run, socket, err)
	var left *handoff.LeftOpenError
	switch {
	case !errors.As(err, &left):
		return err
	case lerr != nil:
		return &leftOpenError{err, fmt.Sprintf("%s stays open in Herdr, and herdr-pi close will not know of it (%v): close it in Herdr", left.Left[0], lerr)}
	case len(recs) > 0:
		return &leftOpenError{err, stayWords(left.Left[0], short, handoff.HerdrGone(left.Close))}
	}
	return err
}

// stayWords says that what Herdr did not close is in the ledger, and when
// herdr-pi close closes it: now, or once a Herdr that did not answer
// (gone) is back, which brings its layout back.
func stayWords(what, short string, gone bool) string {
	if gone {
		return fmt.Sprintf("%s was not closed, as Herdr did not answer: once Herdr is back, herdr-pi close %s closes it, or says why it leaves it", what, short)
	}
	return fmt.Sprintf("%s stays open in Herdr: herdr-pi close %s closes it", what, short)
}

// errInterrupted is why open closes what it made on Ctrl-C.
var errInterrupted = errors.New("interrupted")

// leftOpenError is a failed open that left something open in Herdr, and
// what to do about it.
type leftOpenError struct {
	err  error
	what string
}

func (e *leftOpenError) Error() string { return e.err.Error() + "; " + e.what }
func (e *leftOpenError) Unwrap() error { return e.err }

// leftOpen is what to do about what a failed open left open, if it did.
func leftOpen(err error) (string, bool) {
	var l *leftOpenError
	if errors.As(err, &l) {
		return l.what, true
	}
	return "", false
}

// recordAroundFailedPane puts in the ledger what a placement created
// around a pane whose command failed (its workspace, its tab): the pane
// goes once the person has read it, they stay, and herdr-pi close and the
// run's next open must know of them.
func recordAroundFailedPane(ledger handoff.Ledger, run, socket string, placed handoff.Placed) error {
	n := len(placed.Created)
	if n < 2 {
		return nil
	}
	// Its records name the panes and terminals Herdr gave (a workspace's
	// root pane), as every record does: close tells by them what is still
	// herdr-pi's after Herdr started afresh.
	if _, err := ledger.AddAll(placed.Records(run, socket)[:n-1]); err != nil {
		return fmt.Errorf("herdr-pi close will not know of %s: %w", placed.Created[0], err)
	}
	return nil
}

// inspectionRecords writes what an inspection's placement created to the
// ledger; its innermost thing (the pane, or its tab) names the wrapper
// running there, which close checks before it closes anything (see
// handoff.Record). A record that cannot be written is only a warning: the
// inspection runs, and close will not know of it.
func inspectionRecords(ledger handoff.Ledger, runtimeBase, run, socket string, placed handoff.Placed, stderr io.Writer) []handoff.Record {
	recs := placed.Records(run, socket)
	if n := len(recs); n > 0 {
		recs[n-1].PaneWrapperPID, recs[n-1].RunDir = handoff.PaneWrapper(runtimeBase, socket, placed.PaneID)
	}
	out, err := ledger.AddAll(recs)
	if err != nil {
		tell(stderr, "herdr-pi open: herdr-pi close will not know of %s: %v\n", placed.PaneID, err)
	}
	return out
}

// notInHerdrError: open runs outside a Herdr pane (picker: it was about
// to offer the picker, whose choices open there).
type notInHerdrError struct {
	missing []string
	picker  bool
}

func (e *notInHerdrError) Error() string {
	s := fmt.Sprintf("not inside a Herdr pane (missing %s); run it in a Herdr pane", strings.Join(e.missing, ", "))
	if e.picker {
		s += ": the picker's attempts open in panes of the Herdr it runs in (herdr-pi open --list shows the runs from anywhere)"
	}
	return s
}

// openFailure is what `open --json` prints when it fails: one object in
// the format the command would have printed (docs/open.md), so a script
// reading stdout learns why, not only that. The message goes to stderr too.
type openFailure struct {
	Format string `json:"format"`
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	// PrefixAlsoMatches: as in the report, when the run was found.
	PrefixAlsoMatches []handoff.OtherMatch `json:"prefix_also_matches,omitempty"`
}

// openFailedJSON prints err as an openFailure and returns it. Nothing is
// printed for success, or for an end already told (Ctrl-C, a handback the
// live lines reported).
func openFailedJSON(w io.Writer, opts *openOptions, err error) error {
	var silent silentExit
	if err == nil || errors.As(err, &silent) {
		return err
	}
	fail := openFailure{Format: openFormat, PrefixAlsoMatches: opts.alsoMatches}
	switch {
	case opts.List:
		fail.Format = handoff.ListFormat
	case opts.live:
		fail.Format = openLiveFormat
	}
	fail.Error.Code, fail.Error.Message = openErrorCode(err), render.CleanLines(err.Error())
	write := render.JSON
	if opts.live {
		write = render.JSONLine // one more of the live lines
	}
	// A failure that is itself this write error (the result could not be
	// written either) is not said twice.
	if werr := write(w, fail); werr != nil && !strings.Contains(err.Error(), werr.Error()) {
		return errors.Join(err, werr)
	}
	return err
}

// openErrorCode names an open failure for scripts (docs/open.md); close
// names its failures with the same codes.
func openErrorCode(err error) string {
	var (
		usage     *usageError
		noRun     *store.NoRunError
		badRun    *store.BadRunIDError
		ambRun    *store.AmbiguousRunError
		noAttempt *store.NoAttemptError
		ambAgent  *store.AmbiguousAgentError
		session   *store.SessionFileError
		cwd       *store.NoCwdError
		file      *store.FileError
		herdrless *notInHerdrError
		wfSetting *workflowSettingsError
		noPi      *noPiError
		herdrErr  *herdr.Error
		transport *herdr.TransportError
		protocol  *herdr.ProtocolMismatchError
	)
	switch {
	case errors.As(err, &usage):
		return "usage"
	case errors.As(err, &noRun), errors.As(err, &badRun):
		return "no_run"
	case errors.As(err, &ambRun):
		return "ambiguous_run"
	case errors.As(err, &noAttempt):
		return "no_attempt"
	case errors.As(err, &ambAgent):
		return "ambiguous_attempt"
	case errors.As(err, &session):
		return "no_session_file"
	case errors.As(err, &cwd):
		return "no_directory"
	case errors.As(err, &file):
		return "unreadable_store"
	case errors.As(err, &herdrless):
		return "not_in_herdr"
	case errors.Is(err, handoff.ErrNotWrapped):
		return "owner_not_wrapped"
	case errors.As(err, &wfSetting):
		return "unreadable_workflow_settings"
	case errors.As(err, &noPi):
		return "no_pi"
	case errors.As(err, &herdrErr), errors.As(err, &transport), errors.As(err, &protocol):
		return "herdr"
	}
	return "failed"
}

// openError makes a malformed selector a usage error.
func openError(err error) error {
	var sel *store.SelectorError
	if errors.As(err, &sel) {
		return usagef("open", "%v", err)
	}
	return err
}

// openPlacement decides where the pane goes: the flag, else the engine's
// fully inspectable setting (the run's workspace), else a split. Which
// workspace is the run's is for lockRunWorkspace to say, under the
// placement lock.
func openPlacement(opts *openOptions, paths settings.Paths, a *store.Attempt, callerPane, dir string) (handoff.Placement, error) {
	p := handoff.Placement{
		Mode: handoff.Mode(opts.Place), CallerPane: callerPane, Cwd: dir,
		WorkspaceLabel: "workflow " + a.Run.Workflow(),
		TabLabel:       fmt.Sprintf("#%d %s", a.Record.N, a.Agent.DisplayName()),
	}
	p.Label(a.Run.Workflow(), a.Run.Short(), a.Agent.DisplayName(), a.Record.N, a.Record.N, true)
	if p.Mode == "" {
		var err error
		if p.Mode, err = settingsPlace(paths); err != nil {
			return p, err
		}
	}
	p.Dedicated = p.Mode == handoff.ModeWorkspace
	return p, nil
}

// settingsPlace is where a pane goes when nobody chose: the run's
// workspace in the engine's fully inspectable mode, else a split. The
// engine's settings file is read each time (open, the menu's inspection,
// each live handoff), so a change needs no restart; one it cannot read
// is an error naming the file, never a split taken in silence.
func settingsPlace(paths settings.Paths) (handoff.Mode, error) {
	w, err := settings.LoadWorkflows(settings.WorkflowSettingsFile(paths.PiAgentDir))
	if err != nil {
		return "", &workflowSettingsError{err}
	}
	if w.FullyInspectable {
		return handoff.ModeWorkspace, nil
	}
	return handoff.ModeSplit, nil
}

// workflowSettingsError is the engine's settings file, read for where a
// pane goes, that cannot say (docs/open.md: unreadable_workflow_settings).
// The file's own error names it and says how to fix it: said once, with
// doctor, which checks it.
type workflowSettingsError struct{ err error }

func (e *workflowSettingsError) Error() string {
	return "the workflow settings: " + e.err.Error() + " (herdr-pi doctor checks the file)"
}

func (e *workflowSettingsError) Unwrap() error { return e.err }

// noPiError is a Pi command a pane would run that is not there: a bare
// name not on PATH, or a path in [open] pi that names no program
// (docs/open.md: no_pi).
type noPiError struct{ msg string }

func (e *noPiError) Error() string { return e.msg }

// lockRunWorkspace readies a placement in run's workspace (ModeWorkspace;
// any other is left alone): it takes run's placement lock and then
// sets the workspace, the one the ledger names for the run in the Herdr
// at socket, else none (a new one is made). Its label is every run of the
// workflow's, so a workspace found by label may be another run's (and its
// "#1 api" tab another run's attempt). Under the lock, an open, a live
// handoff or a menu inspection of the run placing at this moment has
// recorded the workspace it made before this looks: two placements at
// once share one "workflow <name>"; placements of other runs do not wait
// for it. placed lets the lock go: call it once what the placement
// created is in the ledger, and defer it for every other way out (a
// second call does nothing). waiting (nil for none) is called when
// another placement of the run holds the lock, before the wait.
func lockRunWorkspace(ctx context.Context, ledger handoff.Ledger, place *handoff.Placement, run, socket string, waiting func()) (placed func()) {
	if place.Mode != handoff.ModeWorkspace {
		return func() {}
	}
	placed = ledger.LockPlacement(ctx, run, waiting)
	place.WorkspaceID = ledger.Workspace(run, socket)
	return placed
}

// newOpener resolves what the pane runs. A bare Pi command is looked up on
// this PATH now, and the pane gets this PATH: the person's shell found Pi
// (and its node) there, a fresh pane's might not.
// A relative path to Pi is taken from dir, open's own directory. remove
// removes the directory of its command files; the caller defers it.
func newOpener(f *Factory, client *herdr.Client, pi []string, env settings.Env, dir string) (_ handoff.Opener, remove func(), _ error) {
	self, err := f.Executable()
	if err != nil {
		return handoff.Opener{}, nil, fmt.Errorf("cannot find herdr-pi's own executable: %w", err)
	}
	// A wrapper opening from its owner's menu may have run for days:
	// herdr-pi may have moved since (os.Executable names where it was).
	if err := handoff.CheckSelf(self, "restart the owner's Pi (or run herdr-pi open) under the herdr-pi installed now"); err != nil {
		return handoff.Opener{}, nil, err
	}
	pi = append([]string(nil), pi...)
	if !strings.Contains(pi[0], "/") {
		p, ok := pty.LookPath(pi[0], env.Get("PATH"))
		if !ok {
			return handoff.Opener{}, nil, &noPiError{fmt.Sprintf("%q is not on your PATH; install Pi or set [open] pi in config.toml", pi[0])}
		}
		pi[0] = p
	} else {
		// Checked here, before Herdr hears anything: in the pane a missing
		// Pi would only show as a failed command, after open said it opened.
		// The pane starts elsewhere, so a relative path is made absolute.
		if !filepath.IsAbs(pi[0]) {
			pi[0] = filepath.Join(dir, pi[0])
		}
		if _, err := pty.Resolve(pi[0], nil); err != nil {
			return handoff.Opener{}, nil, &noPiError{fmt.Sprintf("[open] pi in %s: %v; set it to Pi's path, or to \"pi\" for the one on your PATH",
				f.Paths().ConfigFile, err)}
		}
	}
	var piEnv []string
	for _, k := range []string{"PATH", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"} {
		if v, ok := env[k]; ok {
			piEnv = append(piEnv, k+"="+v)
		}
	}
	// The wrapper in the pane says which fork its Pi writes through the
	// pane registry under herdr-pi's runtime directory; a pane started
	// with another XDG_RUNTIME_DIR (or none) would register where open
	// does not look. This value makes the pane resolve open's directory.
	piEnv = append(piEnv, "XDG_RUNTIME_DIR="+filepath.Dir(f.Paths().RuntimeBase))
	// The command files go into a run directory of this process's own
	// (control.NewRunDir): an open killed with SIGKILL leaves its files
	// in a directory whose lock is free, and the next open's sweep removes
	// it, as the wrappers' run directories are swept.
	if err := control.EnsurePrivateDir(f.Paths().RuntimeBase); err != nil {
		return handoff.Opener{}, nil, fmt.Errorf("the private directory for command files: %w", err)
	}
	held, err := control.NewRunDir(filepath.Join(f.Paths().RuntimeBase, "open"))
	if err != nil {
		return handoff.Opener{}, nil, fmt.Errorf("the private directory for command files: %w", err)
	}
	return handoff.Opener{Herdr: client, Self: self, Pi: pi, PiEnv: piEnv, FileDir: held.Path}, func() { _ = held.Remove() }, nil
}

func printOpen(f *Factory, rep openReport, asJSON bool) error {
	if asJSON {
		return render.JSON(f.IO.Out, rep)
	}
	return printOpenLine(f, rep)
}

// printOpenLine says in a sentence what was opened and where.
func printOpenLine(f *Factory, rep openReport) error {
	out := f.IO.Out
	what := fmt.Sprintf("%s of run %s", rep.Attempt, shortID(rep.Run))
	if rep.Workflow != "" {
		what += " (" + rep.Workflow + ")"
	}
	if rep.Reused {
		return say(out, "%s is already open in tab %s (pane %s)\n", what, rep.TabID, rep.PaneID)
	}
	where := "pane " + rep.PaneID
	switch rep.Mode {
	case string(handoff.ModeSplit):
		where += ", split " + rep.Direction
	default:
		where += ", tab " + rep.TabID
	}
	err := say(out, "opened %s in %s: a read-only fork of its session\n", what, where)
	if err == nil && rep.Fork != "" {
		err = say(out, "  fork: %s\n", rep.Fork)
	}
	return err
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
