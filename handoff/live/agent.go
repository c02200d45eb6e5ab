package live

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/handoff"
)

// paneAgent is the pane's Pi as the local process it is. Herdr's word that
// the pane closed is not enough to hand the attempt back: a pane.close that
// failed, or one Herdr answers before the process is dead, would leave the
// pane's Pi writing the attempt's session file while the owner resumes it
// (docs/open.md: two Pis never share the session file). So the handoff
// follows the process itself, and makes sure it is gone before the owner
// gets its session back.
//
// The pid comes from the pane's herdr-pi wrap (its status), and is pinned
// with a pidfd at once, so no signal can reach a process that reused the
// pid later. It is trusted only when the process descends from that
// wrapper (wrapper → session leader → agent): a wrapper in another pid
// namespace names pids that mean nothing here. Without a pinned pid (no
// pidfd, or the descent does not hold) the pane's wrapper stands in for
// it: the wrapper outlives its agent, and its run directory's lock says
// whether it still runs, in any pid namespace.
type paneAgent struct {
	pid int
	fd  int // the pidfd; -1 when the pid could not be pinned
	// wrapperDir and wrapperPID are the pane's wrapper, judged as
	// control.WrapperAlive judges it.
	wrapperDir string
	wrapperPID int
}

// pinAgent pins the agent childPID of the pane's wrapper ep.
func pinAgent(ep control.Endpoint, childPID int, logf func(string, ...any)) *paneAgent {
	a := &paneAgent{pid: childPID, fd: -1, wrapperDir: filepath.Dir(ep.Socket), wrapperPID: ep.PID}
	if childPID <= 0 {
		return a
	}
	fd, err := unix.PidfdOpen(childPID, 0)
	if err != nil {
		logf("live: the pane's Pi (pid %d) cannot be followed by its pid (%v): its wrapper (pid %d) stands in for it", childPID, err, ep.PID)
		return a
	}
	// Read after the pidfd is open: if the pid was reused before, the
	// ancestry is the new process's and does not match; if the process
	// dies after, the pidfd says so and nothing is signalled.
	if !descendsFrom(childPID, ep.PID) {
		logf("live: pid %d is not the agent of the pane's wrapper (pid %d) as this process sees pids (another pid namespace?): the wrapper stands in for it", childPID, ep.PID)
		_ = unix.Close(fd)
		return a
	}
	a.fd = fd
	return a
}

// descendsFrom is true when pid's parent's parent is ancestor: the agent
// runs under the wrapper's session leader (pane/pty).
func descendsFrom(pid, ancestor int) bool {
	leader, err := handoff.ParentOf(pid)
	if err != nil {
		return false
	}
	wrapper, err := handoff.ParentOf(leader)
	return err == nil && wrapper == ancestor
}

// gone says whether the agent no longer runs.
func (a *paneAgent) gone() bool {
	if a.fd >= 0 {
		return control.PidfdExited(a.fd, 0)
	}
	return !control.WrapperAlive(a.wrapperDir, a.wrapperPID)
}

// awaitGone waits up to d for the agent to be gone.
func (a *paneAgent) awaitGone(d time.Duration) bool {
	if a.fd >= 0 {
		return control.PidfdExited(a.fd, d)
	}
	if a.gone() {
		return true
	}
	// Followed through its wrapper's lock, as open --wait follows one.
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	gone, done := handoff.WatchWrapper(ctx, a.wrapperPID, a.wrapperDir)
	defer func() { cancel(); <-done }()
	select {
	case <-gone:
		return true
	case <-ctx.Done():
		return a.gone()
	}
}

// Grace periods of the agent's stop. A Pi whose pane Herdr closed gets a
// hangup from its pty and exits within a second or two: the pane's
// herdr-pi wrap hangs it up and kills it 2 s later (pane/pty KillGrace),
// so one that outlives closeGrace has a wrapper that could not; a loaded
// machine gets room to spare. The handback waits through all of it (two
// Pis never share the session file), at most closeGrace and three
// signalGraces (HUP, TERM, KILL; only the last two after a close, which
// hung it up already), and says so once the wait is longer than a normal
// exit (stopNotice).
var (
	// closeGrace is how long the agent may take to exit after Herdr
	// closed its pane.
	closeGrace = 5 * time.Second
	// signalGrace is how long it may take after each signal.
	signalGrace = 5 * time.Second
	// stopNotice is how long the agent may take to exit before the wait
	// is told (the asker, the owner's status line): past its pane
	// wrapper's own kill, so no exit that went as it should is told.
	stopNotice = 3 * time.Second
)

// stop makes sure the agent is gone before its attempt goes back: it
// waits for it after Herdr closed its pane (closed: the close succeeded,
// or the pane had closed), else — or when it outlives the wait — stops
// it: a hangup (only when no close gave it one), a terminate, and last a
// kill. stopping, when not nil, is called once, as soon as the wait is
// longer than a normal exit: the person is told why the handback waits.
// The error says why it may still run: the owner must not reopen the
// session file.
func (a *paneAgent) stop(closed bool, logf func(string, ...any), stopping func()) error {
	if a == nil {
		return nil
	}
	told := false
	tell := func() {
		if !told && stopping != nil {
			told = true
			stopping()
		}
	}
	signals := []unix.Signal{unix.SIGHUP, unix.SIGTERM, unix.SIGKILL}
	if closed {
		if a.awaitGone(min(stopNotice, closeGrace)) {
			return nil
		}
		tell()
		if a.awaitGone(closeGrace - min(stopNotice, closeGrace)) {
			return nil
		}
		// Its pty hung it up when the pane closed: another hangup is a
		// wait for nothing.
		signals = signals[1:]
	} else if a.awaitGone(0) {
		return nil
	}
	tell()
	if a.fd < 0 {
		return fmt.Errorf("the pane's Pi still runs: its herdr-pi wrap (pid %d) has not exited, and the Pi cannot be signalled from here (its pid %d could not be pinned to that wrapper)", a.wrapperPID, a.pid)
	}
	for _, sig := range signals {
		logf("live: the pane's Pi (pid %d) still runs after its pane was to close: sending %v", a.pid, sig)
		if err := unix.PidfdSendSignal(a.fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("the pane's Pi (pid %d) still runs and cannot be signalled: %w", a.pid, err)
		}
		if a.awaitGone(signalGrace) {
			return nil
		}
	}
	return fmt.Errorf("the pane's Pi (pid %d) still runs %v after SIGKILL", a.pid, signalGrace)
}

// release lets go of the pidfd.
func (a *paneAgent) release() {
	if a != nil && a.fd >= 0 {
		_ = unix.Close(a.fd)
		a.fd = -1
	}
}

// watch closes the returned channel once the agent is gone, or never;
// it stops when ctx ends. Owned by the caller, which waits on stopped
// after ending ctx.
func (a *paneAgent) watch(ctx context.Context) (gone <-chan struct{}, stopped <-chan struct{}) {
	g, s := make(chan struct{}), make(chan struct{})
	if a == nil {
		close(s)
		return g, s
	}
	go func() { // nothing in it can panic: polls and a close
		defer close(s)
		for ctx.Err() == nil {
			if a.awaitGone(agentWatchEvery) {
				close(g)
				return
			}
		}
	}()
	return g, s
}

// agentWatchEvery is how often the watch looks up from the agent to see
// whether the handoff still needs it: the bound on how long its end takes.
const agentWatchEvery = 250 * time.Millisecond
