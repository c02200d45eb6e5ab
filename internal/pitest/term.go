package pitest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/screen"
)

// Term is a program under a real pty whose output feeds a shadow terminal
// screen. The reader and exit-waiter goroutines are owned by Term; Close
// kills the program's process group and waits for both.
type Term struct {
	cmd    *exec.Cmd
	master *os.File

	mu  sync.Mutex
	scr *screen.Screen // the product's guarded shadow screen
	raw bytes.Buffer

	wg     sync.WaitGroup
	exited chan struct{}
	err    error
}

// StartTerm runs argv under a new rows×cols pty.
func StartTerm(t testing.TB, argv, env []string, dir string, rows, cols int) *Term {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	master, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := creackpty.Setsize(master, &creackpty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		master.Close()
		tty.Close()
		t.Fatal(err)
	}
	tty.Close()
	tm := &Term{cmd: cmd, master: master, scr: screen.New(rows, cols), exited: make(chan struct{})}
	tm.wg.Add(2)
	go func() {
		defer tm.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				tm.feed(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer tm.wg.Done()
		tm.err = cmd.Wait()
		close(tm.exited)
	}()
	t.Cleanup(tm.Close)
	return tm
}

func (tm *Term) feed(p []byte) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.raw.Write(p)
	_ = tm.scr.Write(p)
}

// Screen is the visible screen, trailing blanks trimmed.
func (tm *Term) Screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return strings.TrimRight(tm.scr.Snapshot().Text, "\n")
}

// Raw is every byte the program wrote so far.
func (tm *Term) Raw() []byte {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]byte(nil), tm.raw.Bytes()...)
}

// Send writes keys to the program.
func (tm *Term) Send(s string) error {
	_, err := tm.master.Write([]byte(s))
	return err
}

// Type types text, waits until it shows up on screen (keys sent while Pi
// is still starting are lost, so it types again once if needed), then
// presses Enter as a separate key (pi-agent.md §4.3).
func (tm *Term) Type(t testing.TB, text string) {
	t.Helper()
	before := strings.Count(tm.Screen(), text)
	echoed := func() bool { return strings.Count(tm.Screen(), text) > before }
	for try := 0; try < 2 && !echoed(); try++ {
		if err := tm.Send(text); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !echoed(); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !echoed() {
		t.Fatalf("typed %q, it never showed up; screen:\n%s", text, tm.Screen())
	}
	time.Sleep(50 * time.Millisecond)
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
}

// WaitFor polls the screen every 20 ms until cond holds; on timeout it
// fails the test with the screen.
func (tm *Term) WaitFor(t testing.TB, what string, timeout time.Duration, cond func(screen string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if cond(s) {
			return s
		}
		select {
		case <-tm.exited:
			t.Fatalf("waiting for %s: the program exited (%v); screen:\n%s", what, tm.err, tm.Screen())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v; screen:\n%s", what, timeout, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitText waits until the screen contains text.
func (tm *Term) WaitText(t testing.TB, text string, timeout time.Duration) string {
	t.Helper()
	return tm.WaitFor(t, fmt.Sprintf("%q on screen", text), timeout, func(s string) bool { return strings.Contains(s, text) })
}

// Exited returns a channel closed when the program has exited.
func (tm *Term) Exited() <-chan struct{} { return tm.exited }

// ExitCode waits up to timeout for the program to exit and returns its
// exit code (-1 when killed by a signal).
func (tm *Term) ExitCode(timeout time.Duration) (int, error) {
	select {
	case <-tm.exited:
	case <-time.After(timeout):
		return 0, fmt.Errorf("still running after %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(tm.err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, tm.err
}

// Close kills the program's process group (if it still runs), then waits
// for the reader and waiter.
func (tm *Term) Close() {
	select {
	case <-tm.exited:
	default:
		_ = unix.Kill(-tm.cmd.Process.Pid, unix.SIGKILL)
		<-tm.exited
	}
	// Whatever else of the program's session still runs holds the
	// terminal open (npx starts Pi in a process group of its own): it goes
	// too, or the reader would wait for an end of file that never comes.
	killSession(tm.cmd.Process.Pid)
	// Unblock the reader: closing the master ends its Read.
	_ = tm.master.Close()
	tm.wg.Wait()
	tm.scr.Close()
}

// killSession SIGKILLs every process of the session sid leads.
func killSession(sid int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}
