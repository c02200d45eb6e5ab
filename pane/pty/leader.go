package pty

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/pty/leader"
)

// Job control needs a process between the wrapper and the child.
//
// The child's terminal is our pty, so the child lives in a session of its
// own. Were the child that session's leader (as creack/pty's Start makes
// it), its process group would be orphaned: the parent of every member is
// outside the session. The kernel discards SIGTSTP, SIGTTIN and SIGTTOU sent
// to an orphaned group, so a program that suspends itself (Pi on Ctrl-Z
// sends SIGTSTP to its group, pi-agent.md §4.2) is never stopped and waits
// forever for a SIGCONT.
//
// So a small leader leads the session instead, as a shell would: it is this
// very binary, re-executed under the name leader.Arg0 (package leader's
// init turns it into the leader before main runs). It starts the child in a
// process group of its own and makes that group the pty's foreground, so
// the group has a parent in the same session and stops work. When the child
// stops, the leader stops itself (SIGSTOP: the leader's own group is
// orphaned) and the wrapper, which waits for it with WUNTRACED, follows; on
// SIGCONT the leader continues the child's group. The leader also passes on
// the signals the wrapper forwards and exits with the child's status in the
// shell's convention. It never touches the terminal's data: output goes
// from the child straight to the pty master.

// selfExe re-executes this binary. The kernel's link works even when the
// file was replaced or deleted since we started (an upgrade under a
// running wrapper).
const selfExe = "/proc/self/exe"

// leaderCommand is the command that runs argv (path is argv[0] resolved)
// under a leader, which writes its start report to report. The descriptors
// this process inherited open across exec (a jobserver's, `3>log` on the
// command line) stay where they are for the leader and so for the child,
// as for the bare command: the report takes the lowest number above them.
func leaderCommand(path string, argv []string, report *os.File) *exec.Cmd {
	var extra []*os.File
	fd := 3
	for ; inheritedOpen(fd); fd++ {
		extra = append(extra, inheritedFile(fd))
	}
	extra = append(extra, report)
	return &exec.Cmd{Path: selfExe, Args: append([]string{leader.Arg0, strconv.Itoa(fd), path}, argv...), ExtraFiles: extra}
}

// inherited holds the *os.File made for each inherited descriptor, for
// the life of the process: a File nobody refers to is closed by its
// finalizer, and the descriptor is the process's, not Run's.
var inherited struct {
	sync.Mutex
	files map[int]*os.File
}

func inheritedFile(fd int) *os.File {
	inherited.Lock()
	defer inherited.Unlock()
	if f, ok := inherited.files[fd]; ok {
		return f
	}
	if inherited.files == nil {
		inherited.files = map[int]*os.File{}
	}
	f := os.NewFile(uintptr(fd), "inherited")
	inherited.files[fd] = f
	return f
}

// inheritedOpen reports whether fd is open and stays open across exec:
// one this process was started with (every descriptor Go opens is
// close-on-exec).
func inheritedOpen(fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil && flags&unix.FD_CLOEXEC == 0
}

// readLeaderReport reads the leader's start report: the child's pid, or a
// *StartError for argv0 when the child could not be started.
func readLeaderReport(r io.Reader, argv0 string) (int, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("pty: read the session leader's start report: %w", err)
	}
	s := string(b)
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		num, msg, _ := strings.Cut(rest, " ")
		n, _ := strconv.Atoi(num)
		return 0, startFailure(argv0, &leaderStartError{msg: msg, errno: syscall.Errno(n)})
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(s, "\n"))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pty: the session leader (%s re-executed as %s) did not start the command; its report was %q", selfExe, leader.Arg0, s)
	}
	return pid, nil
}

// leaderStartError is the leader's exec failure as the wrapper sees it:
// the leader's message, and its errno for errors.Is.
type leaderStartError struct {
	msg   string
	errno syscall.Errno
}

func (e *leaderStartError) Error() string { return e.msg }
func (e *leaderStartError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}
