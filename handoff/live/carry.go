package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/bridge/tools"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// carry runs one handoff from the order to the handback and sets r.final,
// or r.err when the owner refused and nothing was handed off.
func (s *Service) carry(r *run) {
	if r.pending == nil {
		r.pending = s.notePending(r.order.RunID, r.id)
	}
	defer r.pending.forget()
	if r.pending != nil {
		// close's cancel mark ends the handoff: the order is withdrawn and
		// no pane opens.
		stop := context.AfterFunc(r.pending.given, func() { r.cancel(context.Cause(r.pending.given)) })
		defer stop()
	}
	r.emit(control.Progress{Event: control.ProgressOrdered})
	l, err := r.link.Handoff(r.ctx, r.order)
	var refused *control.HandoffRefused
	var cancelled *control.HandoffCancelled
	switch {
	case err == nil:
	case errors.As(err, &refused):
		r.err = fmt.Errorf("the workflow owner refused the handoff: %s", refused.Message)
		return
	case errors.As(err, &cancelled), errors.Is(err, control.ErrOwnerGone), errors.Is(context.Cause(r.ctx), control.ErrOwnerGone):
		// The owner gave the order up (or is gone) before its turn ended:
		// nothing was suspended, nothing is to be handed back. Gone is
		// heard twice, by the link's call and by the run's context the
		// owner's disconnection cancels, whichever comes first.
		gone := errors.Is(err, control.ErrOwnerGone) || errors.Is(context.Cause(r.ctx), control.ErrOwnerGone)
		if gone && !errors.Is(err, control.ErrOwnerGone) {
			err = context.Cause(r.ctx)
		}
		gone = gone || sessionEnding(r.ctx, err)
		code := control.CodeCancelled
		if gone {
			code = control.CodeOwnerGone
		}
		r.final = r.stamp(control.Progress{Event: control.ProgressHandback, Reason: control.HandbackAborted, Error: control.ClipText(err.Error(), control.MaxErrorText),
			ErrorCode: code, OwnerGone: gone})
		return
	default:
		// Our side gave up while the owner still held the order: withdraw
		// it (the owner's turn goes on locally).
		s.handBack(r, control.Handback{Reason: control.HandbackAborted, Error: causeText(r.ctx, err), Code: control.CodeCancelled})
		return
	}
	if r.label == "" {
		r.label = l.Label
	}
	s.handBack(r, s.runPane(r, l))
}

// handBack returns the attempt to the owner, waits for it to resume, and
// records the outcome.
func (s *Service) handBack(r *run, hb control.Handback) {
	r.end()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HandbackTimeout)
	defer cancel()
	res, err := r.link.Handback(ctx, r.id, hb)
	p := control.Progress{Event: control.ProgressHandback, Reason: hb.Reason, Transferred: hb.Transferred,
		LastStopReason: hb.LastStopReason, NeedsContinue: hb.NeedsContinue, Continued: res.Continued, Error: hb.Error, ErrorCode: hb.Code}
	// The code is the first thing that went wrong, but for an owner that
	// is gone: whatever came before, nobody has the attempt now.
	first := func(code string) {
		if p.ErrorCode == "" {
			p.ErrorCode = code
		}
	}
	switch gone := errors.Is(err, control.ErrOwnerGone); {
	case gone || sessionEnding(r.ctx, nil):
		// An owner whose session ended (it quit, say) gave the handoff up
		// first, and may or may not be there to answer the handback: for
		// the attempt it is the same, so open says the same either way.
		p.ErrorCode = control.CodeOwnerGone
		// Often the very reason the handoff ended: said once, with what it
		// means for the attempt.
		p.OwnerGone = true
		if gone && !strings.Contains(p.Error, err.Error()) {
			p.Error = joinText(p.Error, err.Error())
		}
		p.Error = joinText(p.Error, "nobody has the attempt back")
	case err != nil:
		first(control.CodeOwnerUnconfirmed)
		p.Error = joinText(p.Error, "the owner did not confirm it has its session back: "+err.Error())
	case res.Error != "":
		first(control.CodeOwnerReopen)
		p.Error = joinText(p.Error, "the owner could not reopen its session: "+res.Error)
	}
	if p.Error != "" {
		// Present exactly when the error is (docs/open.md).
		first(control.CodeFailed)
	} else {
		p.ErrorCode = ""
	}
	p.LeftOpen = hb.LeftOpen
	// Either may carry Herdr's words, of any length: past the field's
	// limit `open` would refuse the handback and say nothing of it.
	p.Error, p.LeftOpen = control.ClipText(p.Error, control.MaxErrorText), control.ClipText(p.LeftOpen, control.MaxErrorText)
	s.cfg.Logf("live: handoff %s handed back: %s (transferred %v, needs continue %v, continued %v) %s", r.id, hb.Reason, hb.Transferred, hb.NeedsContinue, res.Continued, p.Error)
	r.final = r.stamp(p)
}

// sessionEnding says whether err, or else the cause that ended ctx, is
// the owner giving the handoff up because its session is ending.
func sessionEnding(ctx context.Context, err error) bool {
	if err == nil {
		err = context.Cause(ctx)
	}
	var c *control.HandoffCancelled
	return errors.As(err, &c) && c.SessionEnding
}

// herdrCode is CodeHerdr when Herdr refused err's request or could not be
// reached, else code.
func herdrCode(err error, code string) string {
	var (
		refused   *herdr.Error
		transport *herdr.TransportError
		protocol  *herdr.ProtocolMismatchError
	)
	if errors.As(err, &refused) || errors.As(err, &transport) || errors.As(err, &protocol) {
		return control.CodeHerdr
	}
	return code
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func causeText(ctx context.Context, err error) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return err.Error()
}

// runPane carries the launch through the pane, from its files to the end of
// the pane, and says how to hand back. Whatever happens, on the way out it
// cleans up in the reference order (workflows-handoff.md §5.9): the
// remote pane first (so two Pis never share the session file), then the
// tool bridge, then the files; the pane's wrapper releases its own agent.
func (s *Service) runPane(r *run, l control.Launch) (hb control.Handback) {
	hb = control.Handback{Reason: control.HandbackFailed}
	// The error may carry Herdr's words, of any length: clipped to half
	// the field, so that what is added to it later (the way out when the
	// pane's Pi may still run) still fits.
	fail := func(code string, err error) control.Handback {
		if r.ctx.Err() != nil {
			hb.Reason, hb.Error, hb.Code = control.HandbackAborted, control.ClipText(causeText(r.ctx, err), control.MaxErrorText/2), control.CodeCancelled
		} else {
			hb.Reason, hb.Error, hb.Code = control.HandbackFailed, control.ClipText(err.Error(), control.MaxErrorText/2), herdrCode(err, code)
		}
		return hb
	}
	// A run directory of its own (named for this process, so a wrapper
	// killed meanwhile has it swept by the next), short enough for the
	// bridge's socket.
	held, err := control.NewRunDir(s.cfg.RunBase)
	if err != nil {
		return fail(control.CodeFailed, fmt.Errorf("a private directory for the launch: %w", err))
	}
	defer held.Remove() // last: files, command file, watch file
	dir := held.Path
	for _, n := range l.Notes {
		s.cfg.Logf("live: handoff %s: %s", r.id, n)
	}
	files, err := writeFiles(dir, l.Files)
	if err != nil {
		return fail(control.CodeFailed, err)
	}
	var bridge *tools.Server
	client := ""
	if len(l.Tools) > 0 {
		bridge, err = tools.Serve(tools.Config{Dir: dir, Tools: toolSpecs(l.Tools), Logf: s.cfg.Logf,
			Executor: tools.ExecutorFunc(func(ctx context.Context, c tools.Call, update func(json.RawMessage)) (json.RawMessage, error) {
				return r.link.CallTool(ctx, r.id, control.ToolCall{ToolCallID: c.ToolCallID, Name: c.Name, Params: c.Params}, update)
			})})
		if err != nil {
			return fail(control.CodeFailed, fmt.Errorf("the tool bridge: %w", err))
		}
		defer bridge.Close() // after the pane, before the files
		if client, err = bridge.WriteClient(); err != nil {
			return fail(control.CodeFailed, fmt.Errorf("the tool bridge: %w", err))
		}
	}
	cmd, err := paneCommand(s.cfg.Self, s.basePlacement(r, l).Title, l, files, client, s.cfg.PaneEnv)
	if err != nil {
		return fail(control.CodeFailed, err)
	}
	h := s.cfg.Herdr(r.opts.socket)
	opener := handoff.Opener{Herdr: h, FileDir: dir}
	// One placement at a time: two handoffs of a run in fully inspectable
	// mode must find (not both create) the run's workspace. In a workspace
	// that holds across processes too, through the run's placement lock
	// as open takes it: an open of the run (an inspection, or a live
	// handoff asked of it) may be making the run's workspace right now, and
	// this one waits until it is in the ledger; placements of other runs
	// do not wait for it. Both locks are held from the lookup until the
	// records are written, never while the pane runs.
	unlockLedger := func() {}
	if r.opts.mode == handoff.ModeWorkspace {
		unlockLedger = s.cfg.Ledger.LockPlacement(r.ctx, r.order.RunID, func() {
			s.cfg.Logf("live: handoff %s of run %s waits for the placement lock: another herdr-pi is placing a pane of the same run in its workspace", r.id, r.order.RunID)
		})
	}
	s.placing.Lock()
	var place handoff.Placement
	if r.opts.turn {
		place = s.turnPlacement(r, l)
	} else {
		place = s.placement(r, l)
	}
	opened, err := opener.Open(r.ctx, cmd, place)
	var records []handoff.Record
	if err == nil {
		bridgePath := ""
		if bridge != nil {
			bridgePath = bridge.Path()
		}
		records = s.record(r, opened, dir, bridgePath)
		// From here on close finds the pane, and closing it gives the
		// attempt back.
		r.pending.forget()
		if r.opts.turn {
			s.keepSpace(r, opened, records)
		}
		r.mu.Lock()
		r.placed = opened.Placed
		r.mu.Unlock()
	} else {
		err = s.recordLeftOpen(r, err)
	}
	s.placing.Unlock()
	unlockLedger()
	if err != nil {
		return fail(control.CodeFailed, fmt.Errorf("opening a pane: %w", err))
	}
	launched, ended := false, ""
	// The pane's Pi, once known: the attempt goes back only once it is
	// gone (see paneAgent).
	var agent *paneAgent
	defer func() {
		r.end() // the pane closes now: a new ask waits for a new handoff
		if agent == nil && (launched || r.opts.turn) {
			// Asked before the pane closes, while its wrapper still runs.
			agent = s.findAgent(r, opened.PaneID)
		}
		defer agent.release()
		kept, closeErr := s.closeRemote(h, &opened, launched || r.opts.turn, ended)
		stopping := func() {
			// The handback waits for the Pi: said, not silent.
			s.cfg.Logf("live: handoff %s: the pane's Pi (pid %d) has not exited yet; the handback waits until it is stopped", r.id, agent.pid)
			if err := r.link.PaneState(r.id, control.PaneStopping); err != nil {
				s.cfg.Logf("live: handoff %s: pane state: %v", r.id, err)
			}
			r.emit(control.Progress{Event: control.ProgressStopping, PaneID: opened.PaneID, AgentPID: agent.pid})
		}
		if err := agent.stop(closeErr == nil, s.cfg.Logf, stopping); err != nil {
			// The owner must not reopen the session: it fails the attempt.
			// The records stay, so `herdr-pi close` can close the pane.
			s.cfg.Logf("live: handoff %s: %v", r.id, err)
			// The code says the worst: the attempt cannot go back.
			hb.Reason, hb.PaneRunning, hb.Code = control.HandbackFailed, true, control.CodePaneStillRunning
			hb.Error = joinText(hb.Error, fmt.Sprintf("%v, so the session file may still be written and is not reopened; close pane %s with `herdr-pi close %s`", err, opened.PaneID, shellword.Word(r.order.RunID)))
			return
		}
		if closeErr != nil {
			// Herdr still has the pane, or went away without closing
			// it: a Herdr that comes back brings its panes back (its
			// layout, or the panes themselves after a live handoff).
			// Either way `herdr-pi close` can try again, and the
			// handback says so, to the asker and the owner, as a note:
			// the attempt is back all the same. A fully inspectable
			// run's workspace is kept the same way (closeSpace).
			hb.LeftOpen = leftOpenWords(opened, launched || r.opts.turn, closeErr, records, r.order.RunID)
			s.cfg.Logf("live: handoff %s: %s", r.id, hb.LeftOpen)
			s.keepAsRuns(r, records)
			return
		}
		s.forget(records, launched || r.opts.turn || kept)
	}()

	// Herdr's events, from now on (the pane may end at any point).
	events := make(chan paneEvent, 64)
	endedCh := make(chan struct{})
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// Without the watch nothing would tell the pane's end, and the
		// handoff would wait for ever: a panic gives the attempt back
		// instead, as a cancel does, with the reason.
		if guard.Run(s.cfg.Logf, "live: the pane watch of handoff "+r.id, "the handoff ends: its pane can no longer be followed", func() {
			_ = watchPane(wctx, h, opened.Placed, events, endedCh, s.cfg.Logf)
		}) {
			r.cancel(errPanicked)
		}
	}()
	defer func() { stopWatch(); <-watched }() // before the pane is closed

	if err := handoff.WaitStarted(r.ctx, opened, s.cfg.StartTimeout, endedCh); err != nil {
		code := control.CodeStartTimeout
		if closed(endedCh) {
			code = control.CodePaneClosed
		}
		return fail(code, err)
	}
	session, failed := handoff.ForkOf(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened, s.cfg.StartTimeout, endedCh)
	loading, piExited := false, false
	if session == "" && !failed && r.ctx.Err() == nil && !closed(endedCh) {
		loading, session, failed, piExited, agent = s.awaitLoading(r, opened, l.SessionFile, endedCh)
	}
	switch {
	case r.ctx.Err() != nil:
		return fail(control.CodeCancelled, r.ctx.Err())
	case failed:
		return fail(control.CodePaneFailed, fmt.Errorf("the command failed in pane %s before Pi started", opened.PaneID))
	case session == "" && closed(endedCh):
		// The pane went first (closed by the person or by `herdr-pi
		// close`): no timeout was waited out, and saying one would send
		// the person looking for a slow Pi.
		return fail(control.CodePaneClosed, fmt.Errorf("pane %s %s before its Pi started", opened.PaneID, endedWords(paneEnd(events))))
	case session == "" && piExited:
		return fail(control.CodePaneFailed, fmt.Errorf("Pi in pane %s exited before it named its session (it was loading the attempt's transcript)", opened.PaneID))
	case session == "" && loading:
		// It ran to the end of the wait, so it may be loading still, or
		// hung: which, nothing here can tell.
		return fail(control.CodeStartTimeout, fmt.Errorf("Pi in pane %s still ran but did not name its session within %v: it may still be loading the attempt's transcript (%s), or it hangs",
			opened.PaneID, s.cfg.StartTimeout+loadingFor, fileSizeWords(l.SessionFile)))
	case session == "":
		return fail(control.CodeStartTimeout, fmt.Errorf("Pi did not start in pane %s within %v", opened.PaneID, s.cfg.StartTimeout))
	}
	agent.release() // pinned again below, from the wrapper's status
	agent = nil
	if session != l.SessionFile {
		s.cfg.Logf("live: handoff %s: the pane's Pi writes %s, not the attempt's %s", r.id, session, l.SessionFile)
	}
	launched, hb.Transferred = true, true
	ep, st, ok := wrapperOf(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened.PaneID)
	if ok {
		agent = pinAgent(ep, st.ChildPID, s.cfg.Logf)
		s.logBuild(r, opened.PaneID, st.Build)
	}
	// The agent's exit ends the handoff whatever Herdr says, or fails to
	// say: a Herdr that went away takes its panes' Pis along but sends
	// no event.
	actx, stopAgentWatch := context.WithCancel(context.Background())
	agentGone, agentWatched := agent.watch(actx)
	defer func() { stopAgentWatch(); <-agentWatched }() // before agent.stop
	if err := r.link.PaneState(r.id, control.PaneLaunched); err != nil {
		s.cfg.Logf("live: handoff %s: pane state: %v", r.id, err)
	}
	r.emit(control.Progress{Event: control.ProgressLaunched, PaneID: opened.PaneID, TabID: opened.TabID, WorkspaceID: opened.WorkspaceID,
		Command: cmd.Argv, Env: cmd.Env, Cwd: cmd.Dir, AgentPID: st.ChildPID})

	// The pane runs: relay its states; hand back at its end, or when it
	// goes idle after working (unless held).
	last, sawWorking, relayed := st, false, control.PaneLaunched
	relay := func(state string) {
		if state == relayed {
			return
		}
		relayed = state
		if err := r.link.PaneState(r.id, state); err != nil {
			s.cfg.Logf("live: handoff %s: pane state: %v", r.id, err)
		}
		// done is idle with the turn unseen: the owner's status line tells
		// the two apart (completed), the asker's stream has idle only.
		event := state
		if state == control.PaneDone {
			event = control.ProgressIdle
		}
		r.emit(control.Progress{Event: event, PaneID: opened.PaneID})
	}
	// A turn (fully inspectable mode) starts working at once, and may be
	// over before Herdr's paced reports ever show it working: then no
	// status changes, and only the pane's wrapper can tell. Ask it now and
	// then until a run settled there.
	var asking <-chan time.Time
	if r.opts.turn {
		tick := time.NewTicker(turnAskEvery)
		defer tick.Stop()
		asking = tick.C
	}
	for hb.Reason == control.HandbackFailed {
		select {
		case <-asking:
			if st, ok := paneStatus(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened.PaneID); ok && st.Runs > 0 && st.State == "idle" {
				last, sawWorking = st, true
				relay(control.PaneIdle)
				hb.Reason = control.HandbackIdle
			}
		case ev := <-events:
			switch {
			case ev.end != "":
				ended, hb.Reason = ev.end, ev.end
			case ev.status == "working":
				sawWorking = true
				relay(control.PaneWorking)
			case ev.status == "blocked" || ev.status == "idle" || ev.status == "done":
				// How the turn ended is the pane's wrapper's to say, now:
				// after an exit there is nobody left to ask. A run that
				// settled since launch worked, even when it was too short
				// for Herdr to see it working (reports are paced).
				if st, ok := paneStatus(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened.PaneID); ok {
					last = st
					if st.Runs > 0 && !sawWorking { // the pane's wrapper is new: every run is the pane's
						sawWorking = true
						relay(control.PaneWorking)
					}
				}
				if ev.status == "blocked" {
					relay(control.PaneBlocked)
					continue
				}
				// At rest before its first turn, the pane is just launched.
				// Herdr says done for a turn that ended out of sight (the
				// pane is not in the focused tab): the owner shows it as
				// completed, so done goes on as done.
				if sawWorking && ev.status == "done" {
					relay(control.PaneDone)
				} else if sawWorking {
					relay(control.PaneIdle)
				}
				if sawWorking && !r.opts.hold {
					hb.Reason = control.HandbackIdle
				}
			}
		case <-agentGone:
			// Herdr's event may be on its way, or never come (Herdr went
			// away): Herdr says now whether the pane is gone with its Pi.
			hb.Reason = control.HandbackExited
			if paneGone(r.ctx, h, opened.PaneID) {
				ended, hb.Reason = string(handoff.PaneClosed), control.HandbackClosed
			}
			s.cfg.Logf("live: handoff %s: the pane's Pi (pid %d) is gone (%s)", r.id, agent.pid, hb.Reason)
		case <-r.ctx.Done():
			hb.Reason, hb.Error, hb.Code = control.HandbackAborted, causeText(r.ctx, r.ctx.Err()), control.CodeCancelled
		}
	}
	hb.LastStopReason = last.LastStopReason
	// The owner continues when the pane's turn was cut, or when the pane
	// never took up the cut turn it was given.
	hb.NeedsContinue = last.LastAborted || (l.NeedsContinue && !sawWorking)
	return hb
}

// loadingFor is how much longer than the start timeout a pane's Pi that
// runs is given to name its session: until then it is loading the
// attempt's transcript, which for a big one takes long (Pi 1.6.0 took
// 46 s for 50 MB on a loaded machine, near the 60 s start timeout). Its
// exit, the pane's end and a cancel still end the wait at once.
var loadingFor = 10 * time.Minute // a var for the tests

// awaitLoading waits on for the pane's Pi to name its session once the
// start timeout passed without it, as long as the pane's wrapper says it
// runs a Pi that is still there. loading is whether it waited at all;
// piExited that the Pi went meanwhile. running is that Pi, pinned, when
// the wait ended without it gone: it has the attempt's transcript open,
// and writes it once loaded, so the handback must wait for its end
// (runPane's deferred stop); the caller releases it.
func (s *Service) awaitLoading(r *run, opened handoff.Opened, transcript string, ended <-chan struct{}) (loading bool, session string, failed, piExited bool, running *paneAgent) {
	ep, st, ok := wrapperOf(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened.PaneID)
	if !ok || st.ChildPID <= 0 {
		return false, "", false, false, nil
	}
	if st.SessionFile != "" {
		return true, st.SessionFile, false, false, nil
	}
	agent := pinAgent(ep, st.ChildPID, s.cfg.Logf)
	if agent.gone() {
		agent.release()
		return false, "", false, false, nil
	}
	s.cfg.Logf("live: handoff %s: Pi (pid %d) runs in pane %s but has not named its session within %v; it is still loading the attempt's transcript, %s: waiting up to %v more",
		r.id, st.ChildPID, opened.PaneID, s.cfg.StartTimeout, fileSizeWords(transcript), loadingFor)
	// A look at the Pi between short waits: its end is heard within
	// one, without a watcher of its own.
	for deadline := time.Now().Add(loadingFor); time.Now().Before(deadline); {
		session, failed = handoff.ForkOf(r.ctx, s.cfg.RuntimeBase, r.opts.socket, opened, loadingLook, ended)
		switch {
		case session != "" || failed || r.ctx.Err() != nil || closed(ended):
			return true, session, failed, false, agent
		case agent.gone():
			agent.release()
			return true, "", false, true, nil
		}
	}
	return true, "", false, false, agent
}

// loadingLook is how often awaitLoading looks whether the loading Pi
// still runs.
const loadingLook = time.Second

// fileSizeWords says how big a file is, for a message.
func fileSizeWords(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "whose size cannot be read"
	}
	return fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// paneEnd is how the pane ended, once watchPane closed its ended channel:
// the end it sends right after ("" should it not come within a second).
func paneEnd(events <-chan paneEvent) string {
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-events:
			if ev.end != "" {
				return ev.end
			}
		case <-timeout.C:
			return ""
		}
	}
}

func endedWords(end string) string {
	switch end {
	case string(handoff.PaneClosed):
		return "closed"
	case string(handoff.PaneExited):
		return "ended (its command or shell exited)"
	}
	return "ended"
}

// turnAskEvery paces asking a turn's pane wrapper whether its run settled.
const turnAskEvery = time.Second

// basePlacement is what every pane of the run's handoffs shares: the
// mode, the caller's pane, the directory and the labels.
func (s *Service) basePlacement(r *run, l control.Launch) handoff.Placement {
	wf := l.Workflow
	if wf == "" {
		wf = shortID(l.RunID)
	}
	n := l.TUIIndex
	if n == 0 {
		n = l.Attempt
	}
	p := handoff.Placement{Mode: r.opts.mode, CallerPane: r.opts.pane, Cwd: l.Cwd, Fresh: true,
		WorkspaceLabel: "workflow " + wf, TabLabel: fmt.Sprintf("#%d %s", n, l.Label)}
	p.Label(wf, shortID(l.RunID), l.Label, n, l.Attempt, false)
	return p
}

// placement is where a handoff's pane goes. In a workspace it is the
// run's: its fully inspectable one, else the one the ledger names for it,
// else a new one — never one found by its label, which every run of the
// workflow carries.
func (s *Service) placement(r *run, l control.Launch) handoff.Placement {
	p := s.basePlacement(r, l)
	if p.Mode == handoff.ModeWorkspace {
		p.Dedicated = true
		if p.WorkspaceID = s.spaceOf(l.RunID, r.opts.socket); p.WorkspaceID == "" {
			p.WorkspaceID = s.cfg.Ledger.Workspace(l.RunID, r.opts.socket)
		}
	}
	return p
}

// spaceOf is the workspace this wrapper opened for the run's turns in the
// Herdr at socket ("" when none).
func (s *Service) spaceOf(runID, socket string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.spaces[runID]; sp != nil && sp.socket == socket {
		return sp.workspaceID
	}
	return ""
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// record writes what the placement opened to the ledger: the innermost
// thing (the handoff's pane or tab) as this wrapper's, with the handoff's
// run directory (held while the handoff runs) and its bridge; what holds
// it (the run's workspace) as the run's, which outlives the handoff until
// `herdr-pi close`.
func (s *Service) record(r *run, o handoff.Opened, runDir, bridge string) []handoff.Record {
	recs := o.Records(r.order.RunID, r.opts.socket)
	if n := len(recs); n > 0 {
		last := &recs[n-1]
		last.WrapperPID, last.RunDir, last.Handoff, last.Bridge = os.Getpid(), runDir, r.id, bridge
	}
	out, err := s.cfg.Ledger.AddAll(recs)
	if err != nil {
		s.cfg.Logf("live: handoff %s: %v", r.id, err)
	}
	return out
}

// recordLeftOpen puts in the ledger what a failed placement left open in
// Herdr (handoff.LeftOpenError: its close failed too), as the run's, and
// says in err where it went: no handoff runs there, and only herdr-pi
// close will close it.
func (s *Service) recordLeftOpen(r *run, err error) error {
	var left *handoff.LeftOpenError
	if !errors.As(err, &left) {
		return err
	}
	if _, lerr := s.cfg.Ledger.AddLeftOpen(r.order.RunID, r.opts.socket, err); lerr != nil {
		s.cfg.Logf("live: handoff %s: %v", r.id, lerr)
		return fmt.Errorf("%w; %s stays open in Herdr, and herdr-pi close will not know of it: close it in Herdr", err, left.Left[0])
	}
	if handoff.HerdrGone(left.Close) {
		return fmt.Errorf("%w; %s was not closed, as Herdr did not answer: once Herdr is back, herdr-pi close %s closes it, or says why it leaves it", err, left.Left[0], shellword.Word(r.order.RunID))
	}
	return fmt.Errorf("%w; %s stays open in Herdr: herdr-pi close %s closes it", err, left.Left[0], shellword.Word(r.order.RunID))
}

// keepAsRuns makes the handoff's records of what Herdr would not close the
// run's: the handoff is over (its bridge closed, its run directory gone),
// and herdr-pi close is to close the pane, not wait for this wrapper to
// hand it back, nor tidy a bridge that is gone. A record that cannot be
// rewritten stays as it was (close still closes the pane).
func (s *Service) keepAsRuns(r *run, records []handoff.Record) {
	for _, rec := range records {
		if rec.Handoff == "" {
			continue
		}
		kept := handoff.Record{Run: rec.Run, Kind: rec.Kind, ID: rec.ID, HerdrSocket: rec.HerdrSocket,
			Pane: rec.Pane, Terminal: rec.Terminal, Opened: rec.Opened}
		if _, err := s.cfg.Ledger.Add(kept); err != nil {
			s.cfg.Logf("live: handoff %s: %v", r.id, err)
			continue
		}
		if err := s.cfg.Ledger.Remove(rec); err != nil {
			s.cfg.Logf("live: handoff %s: %v", r.id, err)
		}
	}
}

// leftOpenWords says what of a handoff's placement Herdr would not close
// (err): after the launch its pane (or tab), before it the placement whole
// (its outermost thing) — and how it can be closed: herdr-pi close when it
// is in the ledger (records), else only in Herdr.
func leftOpenWords(o handoff.Opened, launched bool, err error, records []handoff.Record, run string) string {
	what := "pane " + o.PaneID
	if n := len(o.Created); n > 0 {
		what = o.Created[0]
		if launched {
			what = o.Created[n-1]
		}
	}
	if handoff.HerdrGone(err) {
		if len(records) == 0 {
			return fmt.Sprintf("%s was not closed, as Herdr did not answer (%s), and herdr-pi close will not know of it: should Herdr bring it back, close it in Herdr", what, control.Clip(err.Error()))
		}
		return fmt.Sprintf("%s was not closed, as Herdr did not answer (%s): once Herdr is back, herdr-pi close %s closes it, or says why it leaves it", what, control.Clip(err.Error()), shellword.Word(run))
	}
	if len(records) == 0 {
		return fmt.Sprintf("%s stays open in Herdr (%s), and herdr-pi close will not know of it: close it in Herdr", what, control.Clip(err.Error()))
	}
	return fmt.Sprintf("%s stays open in Herdr (%s): herdr-pi close %s closes it", what, control.Clip(err.Error()), shellword.Word(run))
}

// forget removes the handoff's own records, and the run's too when nothing
// was launched (the placement was undone whole).
func (s *Service) forget(records []handoff.Record, launched bool) {
	for _, rec := range records {
		if rec.Handoff != "" || !launched {
			if err := s.cfg.Ledger.Remove(rec); err != nil {
				s.cfg.Logf("live: %v", err)
			}
		}
	}
}

// closeRemote closes the handoff's pane (its tab in a workspace) unless it
// was closed already; before the launch it undoes the whole placement —
// but a workspace it made that others have joined since it was recorded
// (an open or another handoff of the run found it in the ledger) stays,
// and kept says so: only the handoff's own tab closes. A pane, tab or
// workspace whose id a Herdr started afresh gave to another is left, said
// in the log. The error is Herdr's, when the pane may still be there.
func (s *Service) closeRemote(h Herdr, o *handoff.Opened, launched bool, ended string) (kept bool, err error) {
	if ended == string(handoff.PaneClosed) && launched {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), handoff.CloseBudget)
	defer cancel()
	if !launched {
		kept, err = o.UndoJoined(ctx, h)
		var fe *handoff.ForeignError
		if errors.As(err, &fe) {
			s.cfg.Logf("live: %v", fe)
			return false, nil
		}
	} else if n := len(o.Created); n > 0 {
		kind, id, _ := strings.Cut(o.Created[n-1], " ")
		why, gone := handoff.ForeignOrGone(ctx, h, kind, id, o.PaneID, o.Terminal)
		if why != "" {
			s.cfg.Logf("live: leaving %s %s open: %s", kind, id, why)
			return false, nil
		}
		if gone {
			return false, nil
		}
		err = closeThing(ctx, h, kind, id)
	}
	if err != nil && !notFound(err) {
		s.cfg.Logf("live: closing the handoff's pane: %v", err)
		return kept, err
	}
	return kept, nil
}

// paneGone is true when Herdr says it has no such pane.
func paneGone(ctx context.Context, h Herdr, pane string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handoff.CloseBudget)
	defer cancel()
	_, err := h.PaneGet(ctx, pane)
	return notFound(err)
}

// findAgent looks for the pane's Pi through its wrapper, for a cleanup
// that did not learn it at the launch.
func (s *Service) findAgent(r *run, pane string) *paneAgent {
	ep, st, ok := wrapperOf(r.ctx, s.cfg.RuntimeBase, r.opts.socket, pane)
	if !ok {
		return nil
	}
	return pinAgent(ep, st.ChildPID, s.cfg.Logf)
}

func closeThing(ctx context.Context, h Herdr, kind, id string) error {
	switch kind {
	case "workspace":
		return h.WorkspaceClose(ctx, id)
	case "tab":
		return h.TabClose(ctx, id)
	}
	return h.PaneClose(ctx, id)
}

// logBuild says in the log when the pane's wrapper runs another build
// than this one (build, as its status names it; "" from a build older
// than the field). The pane starts whatever herdr-pi is now at the path
// this wrapper found itself at (CheckSelf refuses only a missing one): an
// upgrade since puts a newer build there. That is not refused — the two
// talk through the control socket's versioned protocol, and each side
// names a skew it cannot bridge — but a difference in behaviour must be
// traceable to it.
func (s *Service) logBuild(r *run, pane, build string) {
	own := control.Build()
	switch {
	case build == own:
		return
	case build == "":
		build = "a build older than this one (it does not name itself)"
	default:
		build = "herdr-pi " + control.Clip(build)
	}
	s.cfg.Logf("live: handoff %s: pane %s runs %s from %s, not this wrapper's herdr-pi %s: the binary there was replaced since this wrapper started (an upgrade?)",
		r.id, pane, build, s.cfg.Self, own)
}

// paneStatus asks the herdr-pi wrapper in a pane for its status, through
// the pane registry.
func paneStatus(ctx context.Context, runtimeBase, herdrSocket, pane string) (control.Status, bool) {
	_, st, ok := wrapperOf(ctx, runtimeBase, herdrSocket, pane)
	return st, ok
}

// wrapperOf is the herdr-pi wrapper in a pane, as the pane registry
// names it, and its status.
func wrapperOf(ctx context.Context, runtimeBase, herdrSocket, pane string) (control.Endpoint, control.Status, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	ep, err := control.PaneRegistry(runtimeBase).Lookup(control.PaneKey(herdrSocket, pane))
	if err != nil {
		return ep, control.Status{}, false
	}
	c, err := control.Dial(ctx, ep.Socket, ep.Token)
	if err != nil {
		return ep, control.Status{}, false
	}
	defer c.Close()
	st, err := c.Status(ctx)
	return ep, st, err == nil
}
