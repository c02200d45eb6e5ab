package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/live"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/settings"
)

// startHandoffs is the live handoff service of a wrapper whose agent is Pi:
// any Pi may load the workflow engine and so become a workflow owner. It
// answers the owner link (the /workflow menu's actions) and `herdr-pi open`
// from other panes. nil when herdr-pi cannot find its own executable.
func startHandoffs(f *Factory, paths settings.Paths, h settings.Herdr, inHerdr bool, cwd string, logf func(string, ...any)) *live.Service {
	self, err := f.Executable()
	if err != nil {
		logf("live handoff: cannot find herdr-pi's own executable (%v); this owner cannot hand attempts off", err)
		return nil
	}
	cfg := live.Config{
		Self: self, RunBase: control.SocketBase(paths.RuntimeBase), RuntimeBase: paths.RuntimeBase,
		// The pane's wrapper registers where this one looks for it (as
		// open's inspections do).
		PaneEnv: []string{"XDG_RUNTIME_DIR=" + filepath.Dir(paths.RuntimeBase)},
		Ledger:  handoff.LedgerAt(paths.RuntimeBase), Logf: logf,
	}
	if inHerdr {
		cfg.HerdrSocket, cfg.OwnerPane = h.SocketPath, h.PaneID
	}
	// Read at each handoff: the person may turn fully inspectable mode on
	// or off (or break the file) while the owner runs.
	cfg.Place = func() (handoff.Mode, error) {
		m, err := settingsPlace(paths)
		if err != nil {
			return "", fmt.Errorf("%w, then ask again (herdr-pi open takes --split, --tab or --workspace without reading it)", err)
		}
		return m, nil
	}
	cfg.Inspect = func(ctx context.Context, req control.InspectRequest) error {
		return inspectFromMenu(ctx, f, h, inHerdr, cwd, req, logf)
	}
	return live.New(cfg)
}

// menuForkTimeout bounds how long a menu inspection waits for the pane's
// wrapper to say which fork its Pi writes: until then the pane cannot be
// recorded as that wrapper's.
var menuForkTimeout = 20 * time.Second

// inspectFromMenu opens a settled attempt the owner's /workflow menu chose
// ("Open session in Herdr pane") the way `herdr-pi open` inspects: a
// read-only fork under herdr-pi wrap, in a split of the owner's pane or
// the run's workspace. What it opened goes to the ledger as open's
// inspections do, so `herdr-pi close <run>` closes it too. Nothing is
// written to the terminal: it is the owner Pi's screen (logf is the log).
func inspectFromMenu(ctx context.Context, f *Factory, h settings.Herdr, inHerdr bool, cwd string, req control.InspectRequest, logf func(string, ...any)) error {
	if !inHerdr {
		return errors.New("the owner's herdr-pi wrap does not run in a Herdr pane")
	}
	paths := f.Paths()
	var a *store.Attempt
	if run, err := store.New(paths.Home, cwd).FindRun(req.RunID); err == nil {
		for _, at := range run.Attempts() {
			if at.Record.Session != nil && at.Record.Session.SessionID == req.SessionID {
				a = at
			}
		}
	}
	if a == nil {
		return fmt.Errorf("run %s has no attempt with session %s in the store", req.RunID, req.SessionID)
	}
	// The engine's own file, when it names one, is checked as open
	// checks the store's: a transcript Pi cannot fork is said here, in
	// the owner's notice area, not in a pane whose Pi fails.
	path := req.SessionFile
	if path == "" {
		path = a.SessionPath()
	}
	session, err := a.SessionFileAt(path)
	var sfe *store.SessionFileError
	if errors.As(err, &sfe) {
		logf("inspection from the menu: %v", err) // the notice names the file by its base name
		return errors.New(sfe.Short())
	} else if err != nil {
		return err
	}
	dir := req.Cwd
	if dir == "" {
		if dir, err = a.Cwd(); err != nil {
			return err
		}
	}
	cfg, _ := f.Config()
	client := herdr.NewClient(h.SocketPath)
	opener, removeFiles, err := newOpener(f, client, cfg.Open.Pi, f.IO.env(), cwd)
	if err != nil {
		return err
	}
	defer removeFiles()
	place, err := openPlacement(&openOptions{}, paths, a, h.PaneID, dir)
	if err != nil {
		return err
	}
	// In the run's workspace this is a placement like open's, under the
	// same lock, the run's: an open or a live handoff of the run at this
	// moment may be making the workspace, and this waits until it is in
	// the ledger (placements of other runs do not wait for this one).
	// The lock is held until this one's records are written (or the
	// placement failed), as open holds it.
	ledger := handoff.LedgerAt(paths.RuntimeBase)
	placed := lockRunWorkspace(ctx, ledger, &place, a.Run.ID, h.SocketPath, func() {
		logf("inspection of run %s waits for the placement lock: another herdr-pi is placing a pane of the same run in its workspace", a.Run.ID)
	})
	defer placed()
	launch := opener.InspectLaunch(handoff.Inspection{
		Title: fmt.Sprintf("herdr-pi: inspection of run %s (%s), %s", a.Run.Short(), a.Run.Workflow(), a.Name()),
		Label: place.Title, SessionFile: session, Model: a.Model(), Cwd: dir,
	})
	opened, err := opener.Open(ctx, launch, place)
	if err != nil {
		return recordLeftOpen(ledger, a.Run.ID, a.Run.Short(), h.SocketPath, err)
	}
	if opened.Reused {
		return nil
	}
	// Wait for the pane to start its command (or end), so no command file
	// is left and a pane that cannot start is the menu's error.
	wctx, stop := context.WithCancel(ctx)
	end := handoff.WatchEnd(wctx, handoff.WatcherEvents(client), client.PaneGet, opened.Placed)
	err = handoff.WaitStarted(wctx, opened, 30*time.Second, end.Ended)
	failed := false
	if err == nil {
		// The pane's wrapper registers once it runs: the record then
		// names it (see handoff.Record.PaneWrapperPID).
		_, failed = handoff.ForkOf(wctx, paths.RuntimeBase, h.SocketPath, opened, menuForkTimeout, end.Ended)
	}
	stop()
	<-end.Done
	_ = os.Remove(opened.WatchFile)
	if err != nil {
		// The pane never started its command, whose file is gone now: it
		// could only ever show a shell. Whether it failed or was given up
		// (the wrapper quits), what was opened for it closes, as open's
		// interrupt closes its own; only what Herdr would not close goes
		// to the ledger, for herdr-pi close.
		if ctx.Err() != nil {
			err = fmt.Errorf("given up while pane %s started its command (%w)", opened.PaneID, context.Cause(ctx))
		}
		return recordLeftOpen(ledger, a.Run.ID, a.Run.Short(), h.SocketPath, opened.CloseAfter(client, err))
	}
	var warn strings.Builder
	switch {
	case failed:
		// The pane stays to show why; a workspace made for it outlives it.
		if err := recordAroundFailedPane(ledger, a.Run.ID, h.SocketPath, opened.Placed); err != nil {
			logf("inspection of run %s: %v", a.Run.ID, err)
		}
		return fmt.Errorf("the command failed in pane %s before Pi opened the fork; the pane shows why (press Enter there to close it)", opened.PaneID)
	default:
		inspectionRecords(ledger, paths.RuntimeBase, a.Run.ID, h.SocketPath, opened.Placed, &warn)
	}
	placed() // the workspace is in the ledger now, or was already
	if warn.Len() > 0 {
		logf("%s", strings.TrimSpace(warn.String()))
	}
	return nil
}
