package pty

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// procState is the state letter of a live process ('T' when stopped), or
// 0 when it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold anything: count from the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// A child that stops itself with SIGTSTP to its process group (as Pi does on
// Ctrl-Z) is really stopped, and the wrapper follows: it gives the terminal
// its mode back, stops itself, and once continued takes raw mode again and
// continues the child. A child stopped by SIGSTOP is followed the same way.
func TestChildStoppingItselfStopsTheWrapper(t *testing.T) {
	for _, stop := range []string{"kill -TSTP 0", "kill -STOP $$"} {
		t.Run(stop, func(t *testing.T) {
			o := newOuter(t, 24, 80)
			cooked := o.termios()
			var child atomic.Int64
			var stops atomic.Int32
			_, done := start(t, Options{
				Argv:  []string{"sh", "-c", "echo ready; " + stop + "; echo resumed; read x; exit 5"},
				Stdin: o.tty, Stdout: o.tty,
				Started: func(pid int) { child.Store(int64(pid)) },
				stopSelf: func() {
					stops.Add(1)
					if st := procState(int(child.Load())); st != 'T' {
						t.Errorf("the child is in state %q while the wrapper stops, want T (stopped)", st)
					}
					if o.termios() != cooked {
						t.Error("the wrapper stops with the terminal still raw")
					}
					if strings.Contains(o.output(), "resumed") {
						t.Error("the child went on before the wrapper stopped")
					}
				},
			})
			o.waitFor("resumed")
			if stops.Load() != 1 {
				t.Fatalf("the wrapper stopped %d times, want 1", stops.Load())
			}
			if after := o.termios(); after.Lflag&unix.ICANON != 0 {
				t.Fatal("the terminal is not raw again after the wrapper was continued")
			}
			if _, err := o.master.Write([]byte("x\r")); err != nil {
				t.Fatal(err)
			}
			if got := statusOfErr(t, wait(t, done)); got != 5 {
				t.Fatalf("exit status %d, want 5", got)
			}
			if o.termios() != cooked {
				t.Fatal("terminal mode not restored")
			}
		})
	}
}

// The whole thing under a person's shell, with real signals: the shell
// reports the wrapper stopped and lists it, fg continues it and the child.
func TestJobControlUnderAShell(t *testing.T) {
	o := jobShell(t)
	typeLine := func(s string) {
		t.Helper()
		if _, err := o.master.Write([]byte(s + "\r")); err != nil {
			t.Fatal(err)
		}
	}
	o.waitCount("jc$ ", 1)

	w := wrapperCommand(t, "sh", "-c", `echo ready; kill -TSTP 0; echo resumed-1; kill -STOP $$; echo resumed-2; exit 3`)
	var line []string
	for _, kv := range w.Env {
		if strings.HasPrefix(kv, wrapperEnv+"=") || strings.HasPrefix(kv, "GORACE=") {
			line = append(line, kv)
		}
	}
	// Quote the arguments for the shell.
	for _, a := range w.Args {
		line = append(line, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	w.Args[0] = w.Path
	typeLine(strings.Join(line, " "))

	o.waitCount("Stopped", 1)
	if strings.Contains(o.output(), "\nresumed-1") {
		t.Fatalf("the child went on instead of stopping: %q", o.output())
	}
	o.waitCount("jc$ ", 2)
	typeLine("jobs")
	o.waitCount("Stopped", 2)
	typeLine("fg")
	o.waitFor("\nresumed-1")
	o.waitCount("Stopped", 3) // SIGSTOP this time
	if strings.Contains(o.output(), "\nresumed-2") {
		t.Fatalf("the child went on instead of stopping: %q", o.output())
	}
	typeLine("fg")
	o.waitFor("\nresumed-2")
	// The shell took the terminal back twice: each stop was framed.
	if n, m := strings.Count(o.output(), suspendingMark), strings.Count(o.output(), resumedMark); n != 2 || m != 2 {
		t.Errorf("Suspending called %d times, Resumed %d, want 2 each; screen %q", n, m, o.output())
	}
	o.waitCount("jc$ ", 5) // the wrapper has exited: typing goes to the shell
	typeLine("echo EXIT=$?")
	o.waitFor("\nEXIT=3")
}

// A wrapper that no shell with job control started (Herdr runs it straight
// in a pane) is in an orphaned process group: the kernel discards its own
// stop, so it must continue the child at once instead of leaving it frozen.
func TestStoppingChildOfAnOrphanedWrapperGoesOn(t *testing.T) {
	o := newOuter(t, 24, 80)
	w := wrapperCommand(t, "sh", "-c", `echo ready; kill -TSTP 0; echo resumed; exit 4`)
	w.Stdin, w.Stdout, w.Stderr = o.tty, o.tty, o.tty
	w.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := w.Run(); w.ProcessState == nil || w.ProcessState.ExitCode() != 4 {
		t.Fatalf("wrapper: %v, want exit status 4; screen: %q", err, o.output())
	}
	o.waitFor("resumed")
	if out := o.output(); strings.Contains(out, suspendingMark) || strings.Contains(out, resumedMark) {
		t.Fatalf("the orphaned wrapper, which never stopped, called Suspending or Resumed: %q", out)
	}
}

// A signal the wrapper was started with ignored (nohup, a shell's &) stays
// ignored in the command, leader or not.
func TestIgnoredSignalsReachTheCommand(t *testing.T) {
	o := newOuter(t, 24, 80)
	w := wrapperCommand(t, "grep", "SigIgn", "/proc/self/status")
	w.Args = append([]string{"sh", "-c", `trap "" INT HUP; exec "$@"`, "sh", w.Path}, w.Args[1:]...)
	w.Path = "/bin/sh"
	w.Stdin, w.Stdout, w.Stderr = o.tty, o.tty, o.tty
	if err := w.Run(); err != nil {
		t.Fatalf("wrapper: %v; screen: %q", err, o.output())
	}
	o.waitFor("SigIgn:")
	var mask uint64
	out := o.output()
	if _, err := fmt.Sscanf(out[strings.Index(out, "SigIgn:"):], "SigIgn: %x", &mask); err != nil {
		t.Fatalf("no SigIgn in %q: %v", out, err)
	}
	for _, s := range []unix.Signal{unix.SIGINT, unix.SIGHUP} {
		if mask&(1<<(s-1)) == 0 {
			t.Errorf("%v is not ignored in the command (SigIgn %x)", s, mask)
		}
	}
}

// Suspending runs once the child stopped, with the caller's terminal
// cooked again and before this process stops; Resumed once it was
// continued, with the terminal raw again, before the child goes on.
func TestSuspendingAndResumedFrameTheStop(t *testing.T) {
	o := newOuter(t, 24, 80)
	cooked := o.termios()
	var order []string
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", "echo ready; kill -TSTP 0; echo resumed; exit 0"},
		Stdin: o.tty, Stdout: o.tty,
		Suspending: func() {
			order = append(order, "suspending")
			if o.termios() != cooked {
				t.Error("Suspending with the terminal still raw")
			}
		},
		stopSelf: func() { order = append(order, "stop") },
		orphaned: func() bool { return false }, // the stop is faked
		Resumed: func() {
			order = append(order, "resumed")
			if o.termios().Lflag&unix.ICANON != 0 {
				t.Error("Resumed with the terminal not raw again")
			}
			if strings.Contains(o.output(), "resumed") {
				t.Error("the child went on before Resumed")
			}
		},
	})
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	if got := strings.Join(order, " "); got != "suspending stop resumed" {
		t.Fatalf("calls %q, want suspending, stop, resumed", got)
	}
}

// A wrapper whose parent is in its own job (sh -c 'wrapper; …', sudo)
// is in a group that is not orphaned, held by that parent's shell: its
// stop happens, and is framed. (sh, unlike sudo, does not stop with it:
// the test continues the job, as kill -CONT would.)
func TestAWrapperUnderAnotherProcessOfItsJobFramesTheStop(t *testing.T) {
	o := jobShell(t)
	o.waitCount("jc$ ", 1)
	w := wrapperCommand(t, "sh", "-c", `kill -TSTP 0; echo resumed; exit 3`)
	line := []string{wrapperEnv + "=1", "GORACE=atexit_sleep_ms=0", "sh", "-c", `'"$0" "$@"; echo after=$?'`}
	for _, a := range append([]string{w.Path}, w.Args[1:]...) {
		line = append(line, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	if _, err := o.master.Write([]byte(strings.Join(line, " ") + "\r")); err != nil {
		t.Fatal(err)
	}
	o.waitFor(suspendingMark)

	// The job's group leads with sh; its child, the wrapper, stops.
	job, err := unix.IoctlGetInt(int(o.master.Fd()), unix.TIOCGPGRP)
	if err != nil {
		t.Fatal(err)
	}
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", job, job))
	if err != nil {
		testenv.Missing(t, "/proc/PID/task/TID/children", "a kernel with CONFIG_PROC_CHILDREN")
	}
	var wrapper int
	if _, err := fmt.Sscan(string(kids), &wrapper); err != nil {
		t.Fatalf("no child of the job's sh %d: %q", job, kids)
	}
	deadline := time.Now().Add(10 * time.Second)
	for procState(wrapper) != 'T' {
		if time.Now().After(deadline) {
			t.Fatalf("the wrapper %d is in state %q after Suspending, want T (stopped)", wrapper, procState(wrapper))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := unix.Kill(-job, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	o.waitFor("after=3")
	if !strings.Contains(o.output(), resumedMark) {
		t.Errorf("the wrapper went on without Resumed; screen %q", o.output())
	}
}

// A second Ctrl-Z while the first one's Suspending still runs (Herdr slow
// to show the pane idle: the terminal is cooked again, the prompt not yet
// back) is the same stop, not a second one: a single fg brings the agent
// back. It used to stop the wrapper there, and stop it again at fg.
func TestCtrlZWhileSuspendingIsOneStop(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := unix.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	o := jobShell(t)
	o.waitCount("jc$ ", 1)
	w := wrapperCommand(t, "sh", "-c", `kill -TSTP 0; echo resumed; exit 3`)
	line := []string{wrapperEnv + "=1", "GORACE=atexit_sleep_ms=0", suspendGateEnv + "=" + gate}
	for _, a := range append([]string{w.Path}, w.Args[1:]...) {
		line = append(line, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	if _, err := o.master.Write([]byte(strings.Join(line, " ") + "\r")); err != nil {
		t.Fatal(err)
	}
	o.waitFor(suspendingMark)
	if _, err := o.master.Write([]byte("\x1a")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("^Z") // echoed once the terminal sent its SIGTSTP
	// Read-write: the open waits for no reader, and the byte stays for
	// the wrapper however late it opens the gate.
	g, err := os.OpenFile(gate, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	o.waitCount("Stopped", 1)
	o.waitCount("jc$ ", 2)
	if _, err := o.master.Write([]byte("fg\r")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("\nresumed")
	if n := strings.Count(o.output(), "Stopped"); n != 1 {
		t.Errorf("the shell saw %d stops, want 1; screen %q", n, o.output())
	}
}

// jobShell starts an interactive bash with job control on a real terminal
// standing in for the person's (its prompt is "jc$ "), for the tests that
// run the wrapper as one of its jobs; it is killed when the test ends.
func jobShell(t *testing.T) *outer {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	o := newOuter(t, 24, 200)
	sh := exec.Command(bash, "--norc", "--noprofile", "-i")
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "PS1=jc$ ", "TERM=dumb"}
	sh.Stdin, sh.Stdout, sh.Stderr = o.tty, o.tty, o.tty
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sh.Process.Kill()
		_ = sh.Wait()
	})
	return o
}
