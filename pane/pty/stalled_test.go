package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// A terminal that stops taking output (paused, or too slow for a flood)
// still takes keys: on a bare terminal Ctrl-C reaches a flooding child
// however full the screen's side is, and through the wrapper it must too,
// not wait until the terminal reads again. The test reads nothing until the
// child has gone.
func TestKeysReachTheChildWhileTheTerminalTakesNoOutput(t *testing.T) {
	stalled(t, func(master *os.File, _ chan os.Signal) {
		if _, err := master.Write([]byte{3}); err != nil {
			t.Fatal(err)
		}
	}, "Ctrl-C", 42)
}

// Signals too: a SIGTERM to the wrapper reaches the child while the
// terminal takes no output, as it would reach a bare agent. (A trap could
// not run before the child's write to its full terminal ends, bare or
// not: the child dies of the signal.)
func TestSignalsReachTheChildWhileTheTerminalTakesNoOutput(t *testing.T) {
	stalled(t, func(_ *os.File, sigs chan os.Signal) { sigs <- unix.SIGTERM }, "SIGTERM", 128+15)
}

// stalled runs a flooding child whose terminal reads nothing, does what
// poke does once the child is held by the full terminal, and checks that
// the child ended with status want before the terminal read again, and
// that its exit was told (Exited) before then too: a terminal that takes
// no output holds the drain, and wrap's state machine must not take the
// agent for alive meanwhile.
func stalled(t *testing.T, poke func(master *os.File, sigs chan os.Signal), what string, want int) {
	master, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	var child atomic.Int64
	var exited atomic.Bool
	sigs, done := start(t, Options{
		Argv:  []string{"sh", "-c", `trap 'exit 42' INT; while :; do echo flooding the terminal; done`},
		Stdin: tty, Stdout: tty, Started: func(pid int) { child.Store(int64(pid)) },
		Exited: func() { exited.Store(true) },
	})
	// Once the terminal is full, the wrapper waits to write and reads no
	// more of the child's output; the child then waits in its own write
	// to its full pty (the kernel says which call a process sleeps in).
	var where string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pid := child.Load(); pid != 0 {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
			where, _, _ = strings.Cut(string(b), " ")
		}
		if where == strconv.Itoa(unix.SYS_WRITE) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never waited on its full terminal (/proc/PID/syscall begins %q)", where)
		}
	}
	poke(master, sigs)
	gone := false
	for deadline := time.Now().Add(10 * time.Second); !gone && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		gone = errors.Is(unix.Kill(int(child.Load()), 0), unix.ESRCH)
	}
	told := false
	for deadline := time.Now().Add(10 * time.Second); gone && !told && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		told = exited.Load()
	}
	// Let the wrapper finish: read the terminal again.
	go func() { _, _ = io.Copy(io.Discard, master) }()
	r := wait(t, done)
	if !gone {
		t.Fatalf("%s did not reach the child while the terminal took no output (it ended once read again: %v)", what, r)
	}
	if got := statusOfErr(t, r); got != want {
		t.Fatalf("exit status %d, want %d", got, want)
	}
	if !told {
		t.Fatalf("the child's exit was not told (Exited) while the terminal took no output (told once it read again: %v)", exited.Load())
	}
}
