package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
// very binary, re-executed under the name leaderArg0 (the package's init
// turns it into the leader before main runs). It starts the child in a
// process group of its own and makes that group the pty's foreground, so
// the group has a parent in the same session and stops work. When the child
// stops, the leader stops itself (SIGSTOP: the leader's own group is
// orphaned) and the wrapper, which waits for it with WUNTRACED, follows; on
// SIGCONT the leader continues the child's group. The leader also passes on
// the signals the wrapper forwards and exits with the child's status in the
// shell's convention. It never touches the terminal's data: output goes
// from the child straight to the pty master.

// leaderArg0 is argv[0] of a re-executed binary that is to be the leader;
// it also names the process in ps.
const leaderArg0 = "herdr-pi-leader"

// leaderReportFd is the leader's descriptor for the start report: the
// child's pid, or why it could not be started.
const leaderReportFd = 3

// selfExe re-executes this binary. The kernel's link works even when the
// file was replaced or deleted since we started (an upgrade under a
// running wrapper).
const selfExe = "/proc/self/exe"

func init() {
	if len(os.Args) >= 3 && os.Args[0] == leaderArg0 {
		// exit_group directly: nothing to flush, and a race-enabled
		// binary would otherwise sleep a second on its way out.
		unix.Exit(leaderMain(os.Args[1], os.Args[2:]))
	}
}

// leaderCommand is the command that runs argv (path is argv[0] resolved)
// under a leader.
func leaderCommand(path string, argv []string) *exec.Cmd {
	return &exec.Cmd{Path: selfExe, Args: append([]string{leaderArg0, path}, argv...)}
}

// forwardedByLeader are the signals the leader passes on to the child.
// SIGHUP is among them: the kernel sends it to the session leader when the
// wrapper closes the pty master.
var forwardedByLeader = []os.Signal{unix.SIGHUP, unix.SIGTERM, unix.SIGINT, unix.SIGQUIT}

// leaderMain runs path with argv under the leader and returns the exit
// status to leave with.
func leaderMain(path string, argv []string) int {
	// The report pipe must not reach the child.
	unix.CloseOnExec(leaderReportFd)
	report := os.NewFile(leaderReportFd, "start report")
	// The stop below is sent to this thread, so it has happened (and
	// ended) when the call returns.
	runtime.LockOSThread()

	// A signal the wrapper was started with ignored (nohup) stays ignored
	// for the child, as it was before a leader stood between them.
	sigs := make(chan os.Signal, 8)
	for _, s := range forwardedByLeader {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}

	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: startEnviron(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		// Ctty is the leader's descriptor 0, the pty slave.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0},
	}
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Fprintf(report, "!%d %s", int(errno), err)
		_ = report.Close()
		return 126
	}
	pid := cmd.Process.Pid
	fmt.Fprintf(report, "%d\n", pid)
	_ = report.Close()

	// Go's Process signals through a pidfd: a signal can never reach a
	// process that reused the pid after the child was reaped.
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()

	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if ws.Stopped() {
			// Stop with the child; the wrapper sees it and stops too.
			_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
			// Continued: continue the child's group, as a shell's fg does.
			_ = unix.Kill(-pid, unix.SIGCONT)
			continue
		}
		return statusOf(syscall.WaitStatus(ws))
	}
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
		return 0, fmt.Errorf("pty: the session leader (%s re-executed as %s) did not start the command; its report was %q", selfExe, leaderArg0, s)
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

// startEnviron is the environment this process was started with, for the
// child. The leader runs inside its package's init, and initialisers that
// ran before it may have changed the environment for this binary's own sake
// (the command line's sets CI while Bubble Tea initialises, so that it asks
// the terminal nothing, and puts it back only after this init has run): the
// child must see what the wrapper passed, not that. The kernel keeps the
// environment as exec gave it in /proc/self/environ; without /proc the
// current one is all there is.
func startEnviron() []string {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return os.Environ()
	}
	env := strings.Split(string(b), "\x00")
	if n := len(env); n > 0 && env[n-1] == "" {
		env = env[:n-1]
	}
	return env
}
