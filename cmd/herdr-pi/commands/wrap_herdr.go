package commands

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/guard"
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
func paneWrappers(reg control.Registry, key string, self int) func() herdr.PaneWrappers {
	return func() herdr.PaneWrappers {
		head, err := reg.Lookup(key)
		if err != nil {
			return herdr.PaneWrappers{}
		}
		if head.PID == self {
			if head.Previous == nil {
				return herdr.PaneWrappers{}
			}
			o := head.Previous.PID
			return herdr.PaneWrappers{Older: &herdr.Wrapper{PID: o, Nested: descendsFrom(self, o)}}
		}
		for e := head.Previous; e != nil; e = e.Previous {
			if e.PID == self {
				return herdr.PaneWrappers{Holder: &herdr.Wrapper{PID: head.PID, Nested: descendsFrom(head.PID, self)}}
			}
		}
		return herdr.PaneWrappers{}
	}
}

// descendsFrom says whether process pid runs under ancestor (its parent,
// or its parent's, …), as /proc says; false when that cannot be read.
func descendsFrom(pid, ancestor int) bool {
	for range 64 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// The parent follows the state, after the command's name in
		// parentheses, which may itself hold ") ".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			return false
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil || ppid <= 1 {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// awaitEnd is herdr.PresenceConfig.AwaitEnd: it returns once process pid
// has exited (followed with a pidfd in Go's poller), or ctx has ended; at
// once when pid cannot be followed.
func awaitEnd(logf func(string, ...any)) func(ctx context.Context, pid int) {
	return func(ctx context.Context, pid int) {
		fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
		if err != nil {
			logf("herdr: cannot follow the wrapper pid %d that holds the pane (%v): this one reports again at the pane's next change or its own", pid, err)
			return
		}
		awaitPidfd(ctx, os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid)), logf)
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
