// Package leader is the session leader a wrapped command runs under (see
// package pty, leader.go there, for why job control needs one). The leader
// is the herdr-pi binary itself, re-executed under the name [Arg0]; this
// package's init turns such a process into the leader before anything else
// of the program runs.
//
// It runs at every start of a wrapped command, so its imports are kept to
// the few packages Go initialises first: a package is initialised as soon
// as everything it imports is, so the fewer and more basic its imports,
// the earlier its init runs and the less of the program's own start-up a
// leader pays for (measured with perf stat, a static build: a leader's
// CPU from exec to exit went from ~14 to ~10 ms when it moved here from
// package pty, whose init ran after almost every other package's).
// Nothing here may import strings, strconv, fmt, os/exec,
// golang.org/x/sys/unix or any package of this module: each would put the
// init back behind most of the others (leader_test.go checks).
package leader

import (
	"bytes"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

// Arg0 is argv[0] of a re-executed binary that is to be the leader; it
// also names the process in ps.
const Arg0 = "herdr-pi-leader"

// The leader's arguments are Arg0, the descriptor of its start report,
// the command's resolved path and the command's argv. The report is the
// child's pid and a newline, or "!ERRNO message" when the child could not
// be started. Its descriptor is the wrapper's choice: the lowest one above
// 2 that the wrapper did not inherit, so that every descriptor the wrapper
// was started with reaches the child where it was.
func init() {
	if len(os.Args) >= 4 && os.Args[0] == Arg0 {
		nameSelf()
		code := 126
		if fd, ok := atoi(os.Args[1]); ok {
			code = run(fd, os.Args[2], os.Args[3:])
		}
		// exit_group directly: nothing to flush, and a race-enabled
		// binary would otherwise sleep a second on its way out.
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	}
}

// nameSelf gives the leader its name where ps, top and pstree show a
// process's short name, which the kernel took from the file exec ran:
// "exe", for /proc/self/exe. Package init runs on the main thread, whose
// name is the process's.
func nameSelf() {
	name := []byte(Arg0 + "\x00")
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0)
}

// forwarded are the signals the leader passes on to the child. SIGHUP is
// among them: the kernel sends it to the session leader when the wrapper
// closes the pty master.
var forwarded = []os.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT}

// run runs path with argv under the leader and returns the exit status to
// leave with.
func run(reportFd int, path string, argv []string) int {
	// The report pipe must not reach the child.
	syscall.CloseOnExec(reportFd)
	report := os.NewFile(uintptr(reportFd), "start report")
	// The stop below is sent to this thread, so it has happened (and
	// ended) when the call returns.
	runtime.LockOSThread()

	// A signal the wrapper was started with ignored (nohup) stays ignored
	// for the child, as it was before a leader stood between them.
	sigs := make(chan os.Signal, 8)
	for _, s := range forwarded {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}

	child, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   startEnviron(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Ctty is the leader's descriptor 0, the pty slave.
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0},
	})
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		_, _ = report.WriteString("!" + itoa(int(errno)) + " " + err.Error())
		_ = report.Close()
		return 126
	}
	pid := child.Pid
	_, _ = report.WriteString(itoa(pid) + "\n")
	_ = report.Close()

	// Go's Process signals through a pidfd: a signal can never reach a
	// process that reused the pid after the child was reaped.
	go func() {
		for s := range sigs {
			_ = child.Signal(s)
		}
	}()

	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if ws.Stopped() {
			// Stop with the child; the wrapper sees it and stops too.
			_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
			// Continued: continue the child's group, as a shell's fg does.
			_ = syscall.Kill(-pid, syscall.SIGCONT)
			continue
		}
		return Status(ws)
	}
}

// Status is the exit status a shell reports for a child that ended with
// ws: its code, or 128 plus the signal that killed it.
func Status(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	default:
		return 1
	}
}

// startEnviron is the environment this process was started with, for the
// child. Initialisers that run before the leader's may change the
// environment for this binary's own sake (the command line's sets CI while
// Bubble Tea initialises, so that it asks the terminal nothing, and puts it
// back later): the child must see what the wrapper passed, not that. The
// kernel keeps the environment as exec gave it in /proc/self/environ;
// without /proc the current one is all there is.
func startEnviron() []string {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return os.Environ()
	}
	var env []string
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if len(v) > 0 {
			env = append(env, string(v))
		}
	}
	return env
}

// atoi reads a descriptor's number: digits only, as itoa writes them.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// itoa is strconv.Itoa, which would put the init behind most others.
func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
