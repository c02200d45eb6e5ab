package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	master, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	var child atomic.Int64
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `trap 'exit 42' INT; while :; do echo flooding the terminal; done`},
		Stdin: tty, Stdout: tty, Started: func(pid int) { child.Store(int64(pid)) },
	})
	// Once the terminal is full, the wrapper waits to write and reads no
	// more of the child's output; the child then waits in its own write
	// to its full pty (the kernel says where it sleeps).
	var where string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pid := child.Load(); pid != 0 {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
			where = string(b)
		}
		if where == "n_tty_write" || where == "wait_woken" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never waited on its full terminal (it sleeps in %q)", where)
		}
	}
	if _, err := master.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	gone := false
	for deadline := time.Now().Add(10 * time.Second); !gone && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		gone = errors.Is(unix.Kill(int(child.Load()), 0), unix.ESRCH)
	}
	// Let the wrapper finish: read the terminal again.
	go func() { _, _ = io.Copy(io.Discard, master) }()
	r := wait(t, done)
	if !gone {
		t.Fatalf("Ctrl-C did not reach the child while the terminal took no output (it ended once read again: %v)", r)
	}
	if got := statusOfErr(t, r); got != 42 {
		t.Fatalf("exit status %d, want the child's 42 from its INT trap", got)
	}
}
