// Package pickertest gives tests a real terminal to run a picker on: a
// pty whose far end feeds a shadow screen, and keys to press. It is for
// tests only.
package pickertest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/herdr-pi/herdr-pi/pane/screen"
)

// Keys as a terminal sends them.
const (
	Up    = "\x1b[A"
	Down  = "\x1b[B"
	End   = "\x1b[F"
	Enter = "\r"
	Esc   = "\x1b"
	CtrlC = "\x03"
)

// Term is a pty: TTY is the end a program reads keys from and draws on,
// the test holds the other. The reader goroutine is owned by Term and
// ends in Close, which the test's cleanup calls.
type Term struct {
	TTY    *os.File
	master *os.File

	mu  sync.Mutex
	scr *screen.Screen
	raw strings.Builder
	wg  sync.WaitGroup
}

// Open makes a rows×cols terminal.
func Open(t testing.TB, rows, cols int) *Term {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	tm := &Term{TTY: tty, master: master, scr: screen.New(rows, cols)}
	tm.wg.Add(1)
	go func() {
		defer tm.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				tm.mu.Lock()
				tm.raw.Write(buf[:n])
				_ = tm.scr.Write(buf[:n])
				tm.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(tm.Close)
	return tm
}

// Screen is what the terminal shows, trailing blank lines trimmed.
func (tm *Term) Screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return strings.TrimRight(tm.scr.Snapshot().Text, "\n")
}

// Raw is every byte drawn so far.
func (tm *Term) Raw() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.raw.String()
}

// Press sends keys, as typed.
func (tm *Term) Press(t testing.TB, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := tm.master.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
}

// WaitFor polls the screen until cond holds, failing the test with the
// screen after timeout (a guard against a hang, not a measurement).
func (tm *Term) WaitFor(t testing.TB, what string, cond func(screen string) bool) string {
	t.Helper()
	const timeout = 20 * time.Second
	deadline := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v; screen:\n%s", what, timeout, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitLine waits until a line of the screen contains every part.
func (tm *Term) WaitLine(t testing.TB, parts ...string) string {
	t.Helper()
	return tm.WaitFor(t, fmt.Sprintf("a line with %q", parts), func(s string) bool { return LineWith(s, parts...) != "" })
}

// LineWith is the first line of screen that contains every part.
func LineWith(screen string, parts ...string) string {
	for _, line := range strings.Split(screen, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

// Close closes both ends and waits for the reader.
func (tm *Term) Close() {
	tm.TTY.Close()
	tm.master.Close()
	tm.wg.Wait()
	tm.scr.Close()
}

// WaitText waits until the screen shows text.
func (tm *Term) WaitText(t testing.TB, text string) string {
	t.Helper()
	return tm.WaitFor(t, fmt.Sprintf("%q on screen", text), func(s string) bool { return strings.Contains(s, text) })
}

// WaitRaw waits until the bytes drawn so far contain seq: what a program
// wrote before it returned may still be on its way through the pty.
func (tm *Term) WaitRaw(t testing.TB, seq string) {
	t.Helper()
	const timeout = 20 * time.Second
	for deadline := time.Now().Add(timeout); !strings.Contains(tm.Raw(), seq); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never drawn (within %v): %q", seq, timeout, tm.Raw())
		}
	}
}
