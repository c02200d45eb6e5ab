package pty

import (
	"os"

	"github.com/herdr-pi/herdr-pi/internal/procstat"
	"golang.org/x/sys/unix"
)

// groupOrphaned reports whether this process's group is orphaned as the
// kernel judges it for a stop: no member has a parent in the same session
// but another group (a shell with job control that would take the
// terminal back). The kernel then discards this process's SIGTSTP, and a
// Ctrl-Z in the child stops nothing but the child, for an instant (see
// suspend). Herdr running the wrapper straight in a pane is such a case.
//
// Only this process and the ancestors in its group are looked at (a
// sudo, a nice or a timeout between the shell and the wrapper), not every
// process on the machine: a group held together by another member alone
// counts as orphaned, and any doubt does too.
func groupOrphaned() bool {
	pgrp := unix.Getpgrp()
	sid, err := unix.Getsid(0)
	if err != nil {
		return true
	}
	pid, ppid := os.Getpid(), os.Getppid()
	for range 64 {
		if ppid <= 0 {
			return true
		}
		ppg, err := unix.Getpgid(ppid)
		if err != nil {
			return true
		}
		psid, err := unix.Getsid(ppid)
		if err != nil {
			return true
		}
		switch {
		case psid == sid && ppg != pgrp:
			return false // a parent that takes the terminal back
		case ppg != pgrp:
			return true // the group ends here, its parent elsewhere
		}
		pid = ppid
		if ppid = parentOf(pid); ppid == pid {
			return true
		}
	}
	return true
}

// parentOf is pid's parent as /proc/PID/stat has it, or 0 when it
// cannot be read.
func parentOf(pid int) int {
	st, err := procstat.Read(pid)
	if err != nil {
		return 0
	}
	return st.PPID // 0 when the line has none
}
