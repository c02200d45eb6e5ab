package commands

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/internal/procstat"
	"github.com/herdr-pi/herdr-pi/pane/launch"
	agentsignals "github.com/herdr-pi/herdr-pi/pane/signals"
)

// resumeArgv is the command that resumes Pi's session file under
// herdr-pi: herdr-pi wrap, the user's --agent and --no-probe, the part of their command
// that starts Pi, and --session with the file (Pi's other arguments are
// left out, as Pi's own resume hint leaves them out). nil without a file.
func resumeArgv(opts *wrapOptions, c launch.Command, file string) []string {
	if file == "" {
		return nil
	}
	argv := wrapSelf(opts)
	start := c.Launch
	if c.Shape == launch.Opaque || len(start) == 0 {
		start = []string{"pi"}
	}
	if strings.HasPrefix(start[0], "-") {
		argv = append(argv, "--")
	}
	argv = append(argv, start...)
	return append(argv, "--session", file)
}

// herdrStatus is the signals' answer to `status` with what the Presence
// knows beside the sentence — how often it re-asserted the pane — what
// each notification channel did, and the names notifications give the
// pane.
type herdrStatus struct {
	*agentsignals.Signals
	presence *herdr.Presence
	notes    wrapNotifier
	names    notifyNames
}

func (s herdrStatus) Status() control.Status {
	st := s.Signals.Status()
	st.Label, st.Cwd = s.names.Label, s.names.Cwd
	st.HerdrReasserts, _ = s.presence.Reasserts()
	st.Notifications = s.notes.status()
	return st
}

// paneWrappers answers, for the wrapper self, which other herdr-pi
// wrappers of its pane matter to its presence in Herdr, from the pane's
// registry (see herdr.PaneWrappers): the newest holds the pane, as the
// pane's hooks reach it. A wrapper the registry does not name (it runs
// without its control socket) learns nothing, and reports as before.
// agentTerm is the device of self's agent's terminal (0 until the pty is
// open); parent is the wrapper self's own environment names
// (control.EndpointFromEnv), when there is one.
func paneWrappers(reg control.Registry, key string, self int, agentTerm func() uint64, parent control.Endpoint) func() herdr.PaneWrappers {
	return func() herdr.PaneWrappers {
		head, err := reg.Lookup(key)
		if err != nil {
			return herdr.PaneWrappers{}
		}
		if head.PID == self {
			if head.Previous == nil {
				return herdr.PaneWrappers{}
			}
			o := head.Previous
			// Inside the older one's agent: under it in the process tree,
			// or given its control socket by its agent (as tellSharing
			// judges it), which a setsid on the way does not change.
			nested := descendsFrom(self, o.PID) || (parent.Socket != "" && parent.Socket == o.Socket)
			return herdr.PaneWrappers{Older: &herdr.Wrapper{PID: o.PID, Nested: nested}}
		}
		for e := head.Previous; e != nil; e = e.Previous {
			if e.PID == self {
				nested := descendsFrom(head.PID, self) || (agentTerm != nil && onTerminal(head.PID, agentTerm()))
				return herdr.PaneWrappers{Holder: &herdr.Wrapper{PID: head.PID, Nested: nested}}
			}
		}
		return herdr.PaneWrappers{}
	}
}

// onTerminal says whether process pid runs on the terminal dev: its
// controlling terminal, or its stdin, stdout or stderr, is that device. A
// wrapper started in this one's agent through setsid and a fork has left
// the process tree (and has no controlling terminal), but still reads and
// draws on the agent's terminal. false for dev 0, or when /proc cannot
// say.
func onTerminal(pid int, dev uint64) bool {
	if dev == 0 {
		return false
	}
	if st, err := procstat.Read(pid); err == nil && st.TTYNr != 0 && ttyNrIs(st.TTYNr, dev) {
		return true
	}
	for fd := range 3 {
		var st unix.Stat_t
		err := unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == dev {
			return true
		}
	}
	return false
}

// ttyNrIs says whether tty_nr, as /proc/<pid>/stat writes it (the
// kernel's encoding: the minor's low 8 bits, then 12 bits of major, then
// the minor's upper bits), is the device dev.
func ttyNrIs(nr, dev uint64) bool {
	major := (nr >> 8) & 0xfff
	minor := nr&0xff | (nr>>12)&0xfff00
	return uint32(major) == unix.Major(dev) && uint32(minor) == unix.Minor(dev)
}

// descendsFrom says whether process pid runs under ancestor (its parent,
// or its parent's, …), as /proc says; false when that cannot be read.
func descendsFrom(pid, ancestor int) bool {
	for range 64 {
		st, err := procstat.Read(pid)
		if err != nil {
			return false
		}
		ppid := st.PPID // 0 when the line has none
		if ppid <= 1 {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// procStarted is when process pid started, in clock ticks after boot
// (/proc/<pid>/stat's 22nd field): with the pid, it names one process,
// never a later one given the same pid. ok is false once pid is gone (a
// zombie counts as gone: it runs no more).
func procStarted(pid int) (uint64, bool) {
	st, err := procstat.Read(pid)
	if err != nil || st.Fields < 20 || st.State == 'Z' || st.State == 'X' {
		return 0, false
	}
	return st.Start, true
}

// suspendReportWait bounds how long a Ctrl-Z waits for Herdr to show the
// stopped agent idle before the wrapper stops: the shell's prompt waits
// as long.
const suspendReportWait = 500 * time.Millisecond

// holderLookEvery is how often a wrapper standing aside looks whether the
// wrapper holding the pane still runs, when it cannot follow that one's
// end with a pidfd: the pane shows this wrapper's state again at most this
// long after the holder ended, instead of at the next change of either.
const holderLookEvery = 2 * time.Second

// endWatch follows the end of the wrapper that holds the pane.
type endWatch struct {
	// pidfd opens a non-blocking pidfd on pid. It fails on a kernel older
	// than 5.3, under a seccomp filter that forbids it, or for a pid of
	// another pid namespace; tests make it fail so.
	pidfd func(pid int) (int, error)
	// started is procStarted.
	started func(pid int) (uint64, bool)
	// every is holderLookEvery.
	every time.Duration
	logf  func(string, ...any)
}

// awaitEnd is herdr.PresenceConfig.AwaitEnd: it returns once process pid
// has exited, or ctx has ended.
func awaitEnd(logf func(string, ...any)) func(ctx context.Context, pid int) {
	return endWatch{
		pidfd:   func(pid int) (int, error) { return unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK) },
		started: procStarted,
		every:   holderLookEvery,
		logf:    logf,
	}.await
}

// await returns once process pid has exited, or ctx has ended. The end is
// followed with a pidfd in Go's poller; without one, pid is looked at
// every w.every, with its start time, so that a pid the kernel gave to
// another process after the holder ended counts as the holder's end.
func (w endWatch) await(ctx context.Context, pid int) {
	fd, err := w.pidfd(pid)
	if err == nil {
		awaitPidfd(ctx, os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid)), w.logf)
		return
	}
	start, alive := w.started(pid)
	if !alive {
		return
	}
	w.logf("herdr: cannot follow the wrapper pid %d that holds the pane with a pidfd (%v): looking whether it still runs every %v", pid, err, w.every)
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if now, alive := w.started(pid); !alive || now != start {
			return
		}
	}
}

// awaitPidfd waits on f, a pidfd, until its process exits or ctx ends,
// and closes it.
func awaitPidfd(ctx context.Context, f *os.File, logf func(string, ...any)) {
	// Closing the pidfd ends the wait below.
	stop := context.AfterFunc(ctx, guard.Func(logf, "herdr: ending the wait for the pane's holder", "the wait ends with the wrapper", func() { _ = f.Close() }))
	defer func() {
		if stop() {
			_ = f.Close()
		}
	}()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool { return control.PidfdExited(int(fd), 0) })
}
