package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// openLiveFormat names the lines of `open --json` on a live attempt
// (docs/open.md): one JSON object per change.
const openLiveFormat = "herdr-pi.open-live/1"

// openLiveLine is one line of `open --json` on a live attempt.
type openLiveLine struct {
	Format  string `json:"format"`
	Attempt string `json:"attempt"`
	control.Progress
	// PrefixAlsoMatches (the first line only): the runs of other
	// projects the run named (a prefix) passed over for this one.
	PrefixAlsoMatches []handoff.OtherMatch `json:"prefix_also_matches,omitempty"`
}

// openLive takes a live attempt over: it finds the herdr-pi wrap of the
// owner Pi (lease pid → the wrapper above it), asks it for the handoff and
// follows it to the handback, saying each change. Ctrl-C, SIGTERM or a
// hangup give the attempt back at once (the wrapper closes the pane).
// reread reads the attempt again from the store, for when the owner
// answers that it runs no such attempt.
func openLive(ctx context.Context, f *Factory, opts *openOptions, a *store.Attempt, lease *store.Lease, reread func() (*store.Attempt, error)) error {
	io := f.IO
	paths := f.Paths()
	opts.live = true
	if a.Record.Session == nil || a.Record.Session.SessionID == "" {
		return fmt.Errorf("%s is live but the store names no session for it yet; try again in a moment, or add --inspect", a)
	}
	ep, err := handoff.OwnerWrapper(paths.RuntimeBase, lease.PID)
	if errors.Is(err, handoff.ErrNotWrapped) {
		// Still ErrNotWrapped underneath: --json codes it for a script
		// that falls back to --inspect.
		return &wrappedError{err: err, msg: fmt.Sprintf("%s is live in its owner Pi (pid %d), which does not run under herdr-pi wrap, so nothing can ask "+
			"it to hand the attempt over; start the owner with 'herdr-pi wrap pi' (its /workflow menu then offers the handoff too), "+
			"or add --inspect to open a read-only fork of what is there so far", a, lease.PID)}
	}
	if err != nil {
		return fmt.Errorf("%s: %w; add --inspect to open a read-only fork of what is there so far", a, err)
	}
	ask := control.HandoffAsk{RunID: a.Run.ID, SessionID: a.Record.Session.SessionID, OwnerPID: lease.PID,
		Hold: opts.Hold, Place: opts.Place, Label: fmt.Sprintf("herdr-pi open (pid %d)", os.Getpid())}
	if a.Run.Record != nil && a.Run.Record.ID != "" {
		ask.RunID = a.Run.Record.ID
	}
	if h, _, ok := f.Herdr(); ok {
		ask.CallerPane, ask.HerdrSocket = h.PaneID, h.SocketPath
	}
	dctx, cancel := context.WithTimeout(ctx, requestTimeout)
	c, err := control.DialHandoff(dctx, ep.Socket, ep.Token)
	cancel()
	if err != nil {
		return fmt.Errorf("cannot reach the herdr-pi wrap (pid %d) of %s's owner at %s: %v; add --inspect to open a read-only fork instead", ep.PID, a, ep.Socket, err)
	}
	defer c.Close()

	sctx, stop := signal.NotifyContext(ctx, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer stop()
	// Lines nobody can read end the handoff as a hangup does: hctx ends
	// with the first write error, and the wrapper gives the attempt back.
	hctx, unseen := context.WithCancelCause(sctx)
	defer unseen(nil)
	pane := "" // the handoff's pane, once launched
	var writeErr error
	// follow shows each progress line (say, below, is the writer that
	// returns its error).
	follow := func(p control.Progress) {
		if p.PaneID != "" && p.Event != control.ProgressHandback {
			// From launched on; a joined line says it too.
			pane = p.PaneID
		}
		if writeErr != nil {
			return
		}
		if !opts.JSON && notHandedOff(p) {
			writeErr = say(io.Out, "not handed off: %s\n", p.Error)
		} else if opts.JSON {
			writeErr = render.JSONLine(io.Out, openLiveLine{Format: openLiveFormat, Attempt: a.Name(), Progress: p, PrefixAlsoMatches: opts.alsoMatches})
			opts.alsoMatches = nil // said once, not on a failure line either
		} else if p.Joined {
			writeErr = say(io.Out, "%s\n", joinedWords(a, p, time.Now()))
		} else {
			writeErr = say(io.Out, "%s\n", liveWords(a, p))
		}
		if writeErr != nil {
			unseen(writeErr)
		}
	}
	final, err := c.Handoff(hctx, ask, follow)
	if err != nil {
		if writeErr != nil && !errors.Is(err, writeErr) {
			// The wrapper answered with words of its own, not a handback:
			// this open only joined a handoff another asked for (which goes
			// on, and the words say so), or the handoff ended without one
			// (refused). open gave nothing up; it stopped following.
			return fmt.Errorf("%s: its lines could not be written (%w), so open stopped following the handoff; the owner's wrapper says: %v", a, writeErr, err)
		}
		if writeErr != nil {
			return fmt.Errorf("%s: its lines could not be written (%w), so open gave the handoff up, and the wrapper "+
				"did not confirm it gave the attempt back: %v", a, writeErr, err)
		}
		if sctx.Err() != nil && ctx.Err() == nil {
			tell(io.Err, "herdr-pi open: interrupted; %v\n", err)
			return silentExit(exitInterrupted)
		}
		if wrapperDied(ep) {
			return ownerWrapperDied(a, ep.PID, pane, err)
		}
		if how := endedMeanwhile(reread); how != "" {
			// open read the store a moment before the engine wrote the
			// attempt's end: the owner's words name a session it no longer
			// runs; the person needs the attempt's story and the way on.
			return fmt.Errorf("%s %s while open asked its owner for it (%v); `herdr-pi open %s %s` opens what it left, read-only",
				a, how, err, shellword.Word(a.Run.Short()), shellword.Word(a.Name()))
		}
		return fmt.Errorf("%s: %w", a, err)
	}
	gaveUp := writeErr != nil
	follow(final)
	switch {
	case gaveUp && final.Reason != control.HandbackAborted:
		// The handoff ended by itself as open left it: not open's doing.
		return fmt.Errorf("%s: its lines could not be written (%w), so nobody could follow the handoff, "+
			"which ended meanwhile (%s)", a, writeErr, final)
	case gaveUp:
		return fmt.Errorf("%s: its lines could not be written (%w), so nobody could follow the handoff: "+
			"open gave it up, and the wrapper gave the attempt back to its owner (%s)", a, writeErr, final)
	case writeErr != nil:
		return fmt.Errorf("%s: its last line (%s) could not be written: %w", a, liveWords(a, final), writeErr)
	}
	if final.OwnerGone {
		// Not a handback: nobody has the attempt, and nothing will finish
		// it. A script's `open && …` must not go on as if it were back;
		// its last line (owner_gone) says so already, as a failed launch's does.
		tell(io.Err, "herdr-pi open: %s: its owner Pi (pid %d) went away or ended its session during the handoff, so nobody has the attempt back and it will not "+
			"finish; `herdr-pi open %s %s` opens what it left, read-only\n",
			a, lease.PID, shellword.Word(a.Run.Short()), shellword.Word(a.Name()))
		return silentExit(exitError)
	}
	if sctx.Err() != nil {
		tell(io.Err, "herdr-pi open: interrupted; the pane is closed and the attempt is back with its owner\n")
		return silentExit(exitInterrupted)
	}
	if notHandedOff(final) {
		// The owner gave the order up before the turn boundary (the
		// attempt ended there, its run was cancelled): the person's
		// takeover did not happen, and `open && …` must not go on as if
		// it had. The store says how the attempt stands, once the engine
		// has written it.
		way := fmt.Sprintf("`herdr-pi open --list %s` says where it stands", shellword.Word(a.Run.Short()))
		if how := endedMeanwhileWait(reread); how != "" {
			way = fmt.Sprintf("%s %s; `herdr-pi open %s %s` opens what it left, read-only", a.Name(), how, shellword.Word(a.Run.Short()), shellword.Word(a.Name()))
		}
		// Its last line (the handback) said it already: stderr only.
		tell(io.Err, "herdr-pi open: %s: nothing was handed off (%s); %s\n", a, final.Error, way)
		return silentExit(exitError)
	}
	if final.Reason == control.HandbackFailed {
		return silentExit(exitError)
	}
	return nil
}

// endedMeanwhile says how the attempt stopped being live since open read
// the store ("finished", "lost its owner Pi"), or "" when it still is, or
// cannot be read again.
func endedMeanwhile(reread func() (*store.Attempt, error)) string {
	a, err := reread()
	if err != nil {
		return ""
	}
	live, _, err := a.Live()
	switch {
	case err != nil || live:
		return ""
	case a.Settled():
		return "finished"
	case a.Run.State() == "interrupted":
		return "was interrupted with its run"
	}
	return "lost its owner Pi"
}

// notHandedOff says whether p, the handback, ends an order its owner gave
// up before the attempt's turn boundary: nothing was suspended or handed
// off (a close or an interrupted asker giving it up is said otherwise).
func notHandedOff(p control.Progress) bool {
	return p.Event == control.ProgressHandback && p.Reason == control.HandbackAborted && !p.Transferred && !p.OwnerGone &&
		strings.HasPrefix(p.Error, (&control.HandoffCancelled{}).Error())
}

// endedMeanwhileWait is endedMeanwhile given a moment: the owner gives an
// order up as the attempt ends, which the engine writes to the store
// about then.
func endedMeanwhileWait(reread func() (*store.Attempt, error)) string {
	for range 30 {
		if how := endedMeanwhile(reread); how != "" {
			return how
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// liveWords is one change of a live handoff in words.
func liveWords(a *store.Attempt, p control.Progress) string {
	switch p.Event {
	case control.ProgressOrdered:
		what := fmt.Sprintf("%s of run %s", a.Name(), a.Run.Short())
		if wf := a.Run.Workflow(); wf != "" {
			what += " (" + wf + ")"
		}
		return "handing off " + what + " at the end of its current turn…"
	case control.ProgressLaunched:
		return fmt.Sprintf("%s runs in pane %s, under herdr-pi wrap", a.Name(), p.PaneID)
	case control.ProgressHandback, control.ProgressStopping:
		return p.String()
	case control.ProgressFocused:
		return fmt.Sprintf("%s works in tab %s of its run's workspace (fully inspectable mode): focused it", a.Name(), p.TabID)
	}
	return fmt.Sprintf("pane %s: %s", p.PaneID, p.Event)
}

// joinedWords is where a handoff this open joined stands (its first line):
// whose handoff it follows, and the handoff's latest change with when it
// came — not that change's own words, which said it as news: "handing
// off … at the end of its current turn" for an attempt long in its pane.
func joinedWords(a *store.Attempt, p control.Progress, now time.Time) string {
	head := "following handoff " + p.Handoff
	if p.AskedBy != "" {
		head += ", asked for by " + render.Clean(p.AskedBy)
	}
	when := func(what string) string {
		if p.Since.IsZero() {
			return ""
		}
		return fmt.Sprintf(" (%s %s ago, at %s)", what, render.Age(now.Sub(p.Since)), render.Clock(p.Since, now))
	}
	switch p.Event {
	case control.ProgressOrdered:
		return head + ": " + strings.TrimSuffix(liveWords(a, p), "…") + when("ordered") + "…"
	case control.ProgressLaunched:
		return head + ": " + liveWords(a, p) + when("launched")
	case control.ProgressWorking, control.ProgressIdle, control.ProgressBlocked:
		state := fmt.Sprintf("%s runs in pane %s: %s", a.Name(), p.PaneID, p.Event)
		if !p.Since.IsZero() {
			state += fmt.Sprintf(" for %s (since %s)", render.Age(now.Sub(p.Since)), render.Clock(p.Since, now))
		}
		return head + ": " + state
	}
	return head + ": " + liveWords(a, p)
}

// wrapperDied says whether the owner's wrapper is gone, after its
// connection failed: judged by its run directory's lock, which the kernel
// lets go as the process dies — possibly a moment after it closed the
// connection, so it gets a little while.
func wrapperDied(ep control.Endpoint) bool {
	dir := filepath.Dir(ep.Socket)
	for range 20 {
		if !control.WrapperAlive(dir, ep.PID) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// ownerWrapperDied is the error of a handoff whose owner's wrapper died
// (killed, crashed): nothing follows the pane any more, nor will anything
// close it, and the person must.
func ownerWrapperDied(a *store.Attempt, pid int, pane string, err error) error {
	where := "no pane had started the attempt yet, but one may have opened"
	if pane != "" {
		// The owner Pi leaves the session to the pane (the probe, on
		// losing its link, does not reopen it): two writers never share it.
		where = fmt.Sprintf("pane %s still runs the attempt's Pi, which nothing follows or closes now, "+
			"and the owner Pi does not take the attempt back while that Pi may write its session", pane)
	}
	return fmt.Errorf("%s: the owner's herdr-pi wrap (pid %d) died during the handoff (%v); %s; run `herdr-pi close %s` "+
		"(it also removes what the dead wrapper left)", a, pid, err, where, shellword.Word(a.Run.Short()))
}
