package pty

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// failingPoll is a ppoll that fails once armed, as a broken poll would.
type failingPoll struct {
	armed atomic.Bool
	err   error
}

func (f *failingPoll) ppoll(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
	if f.armed.Load() {
		return 0, f.err
	}
	return unix.Ppoll(fds, ts, sm)
}

// breakLoop arms the failure and wakes the copy loop with a keystroke so it
// polls again.
func (f *failingPoll) breakLoop(t *testing.T, o *outer) {
	t.Helper()
	f.armed.Store(true)
	if _, err := o.master.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

var errInjected = errors.New("injected poll failure")

// When the copy loop fails, the caller's terminal gets its mode back at
// once, before the child has ended (here it ignores the hangup and lives
// until the test kills it), and Run returns the failure.
func TestLoopFailureRestoresTerminalAtOnce(t *testing.T) {
	o := newOuter(t, 24, 80)
	cooked := o.termios()
	fp := &failingPoll{err: errInjected}
	var child atomic.Int64
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `trap "" HUP; echo ready; exec sleep 1000`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: time.Hour, ppoll: fp.ppoll,
		Started: func(pid int) { child.Store(int64(pid)) },
	})
	o.waitFor("ready")
	fp.breakLoop(t, o)
	for deadline := time.Now().Add(10 * time.Second); o.termios() != cooked; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the terminal is still raw after the copy loop failed")
		}
	}
	select {
	case r := <-done:
		t.Fatalf("Run returned (%v) while the child ignoring SIGHUP still ran", r.err)
	default:
	}
	if err := unix.Kill(int(child.Load()), unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); !errors.Is(err, errInjected) {
		t.Fatalf("Run returned %v, want the poll failure", err)
	}
}

// The failure hangs the child up: a child that ends on SIGHUP ends, without
// waiting for the kill grace.
func TestLoopFailureHangsUpTheChild(t *testing.T) {
	o := newOuter(t, 24, 80)
	fp := &failingPoll{err: errInjected}
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `echo ready; exec sleep 1000`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: time.Hour, ppoll: fp.ppoll,
	})
	o.waitFor("ready")
	fp.breakLoop(t, o)
	if err := wait(t, done); !errors.Is(err, errInjected) {
		t.Fatalf("Run returned %v, want the poll failure", err)
	}
}

// A child that ignores both SIGHUP and SIGTERM is killed after the grace,
// its whole process group with it.
func TestLoopFailureKillsAStubbornChild(t *testing.T) {
	o := newOuter(t, 24, 80)
	fp := &failingPoll{err: errInjected}
	var child atomic.Int64
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `trap "" HUP TERM; sleep 1000 & echo "ready $!"; wait`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: 10 * time.Millisecond, ppoll: fp.ppoll,
		Started: func(pid int) { child.Store(int64(pid)) },
	})
	o.waitFor("ready ")
	o.waitFor("\r\n")
	var bg int
	if _, err := fmt.Sscanf(o.output()[strings.Index(o.output(), "ready "):], "ready %d", &bg); err != nil {
		t.Fatalf("no background pid in %q: %v", o.output(), err)
	}
	fp.breakLoop(t, o)
	if err := wait(t, done); !errors.Is(err, errInjected) {
		t.Fatalf("Run returned %v, want the poll failure", err)
	}
	// The shell and its background sleep were killed; reparented, they
	// may linger as zombies for a moment.
	for _, pid := range []int{int(child.Load()), bg} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if st := procState(pid); st == 0 || st == 'Z' {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d outlived the kill", pid)
			}
		}
	}
}

// A failed loop still tells the child's exit (Exited), once, when it has
// reaped it: Exited's caller must not take the child for alive while Run
// ends, nor learn of its end only from Run's return.
func TestLoopFailureStillTellsTheExit(t *testing.T) {
	o := newOuter(t, 24, 80)
	fp := &failingPoll{err: errInjected}
	var exited atomic.Int32
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `echo ready; exec sleep 1000`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: time.Hour, ppoll: fp.ppoll,
		Exited: func() { exited.Add(1) },
	})
	o.waitFor("ready")
	fp.breakLoop(t, o)
	if err := wait(t, done); !errors.Is(err, errInjected) {
		t.Fatalf("Run returned %v, want the poll failure", err)
	}
	if n := exited.Load(); n != 1 {
		t.Fatalf("Exited was told %d times for a child the failed loop hung up and reaped, want 1", n)
	}
}

// So does a copy loop that panicked: the child is killed, and its exit
// told once it is reaped.
func TestLoopPanicStillTellsTheExit(t *testing.T) {
	o := newOuter(t, 24, 80)
	var armed atomic.Bool
	panicking := func(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
		if armed.Load() {
			panic("injected poll panic")
		}
		return unix.Ppoll(fds, ts, sm)
	}
	var exited atomic.Int32
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `echo ready; exec sleep 1000`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: time.Hour, ppoll: panicking,
		Exited: func() { exited.Add(1) },
	})
	o.waitFor("ready")
	armed.Store(true)
	if _, err := o.master.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err == nil || !strings.Contains(err.Error(), "copy loop panic: injected poll panic") {
		t.Fatalf("Run returned %v, want the copy loop's panic", err)
	}
	if n := exited.Load(); n != 1 {
		t.Fatalf("Exited was told %d times for a child the panicked loop killed and reaped, want 1", n)
	}
}
