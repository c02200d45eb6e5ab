package pty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(wrapperEnv) == "1" {
		os.Exit(wrapperMain())
	}
	testenv.Main(m)
}

// wrapperEnv makes this test binary a wrapper: it runs its arguments under
// Run on its own stdin and stdout, for tests that need a wrapper process
// (one a shell can stop and continue).
const wrapperEnv = "HERDR_PI_PTY_TEST_WRAPPER"

// What such a wrapper writes to its stderr when Run calls its Suspending
// and Resumed.
const (
	suspendingMark = "<suspending>"
	resumedMark    = "<resumed>"
)

// suspendGateEnv names a fifo such a wrapper's Suspending reads a byte
// from before it returns.
const suspendGateEnv = "HERDR_PI_PTY_TEST_SUSPEND_GATE"

func wrapperMain() int {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, wrapperEnv+"=") })
	// The job-control frame shows on the screen, the terminal cooked
	// before a stop and raw after it.
	err := Run(context.Background(), Options{Argv: os.Args[1:], Env: env, Stdin: os.Stdin, Stdout: os.Stdout, SizeFrom: []*os.File{os.Stderr},
		Suspending: func() {
			fmt.Fprint(os.Stderr, suspendingMark+"\r\n")
			if fifo := os.Getenv(suspendGateEnv); fifo != "" {
				// A Herdr slow to answer: Suspending waits for the test.
				if f, err := os.Open(fifo); err == nil {
					_, _ = f.Read(make([]byte, 1))
					_ = f.Close()
				}
			}
		},
		Resumed: func() { fmt.Fprint(os.Stderr, resumedMark+"\r\n") },
	})
	if code, ok := exitCode(err); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// exitCode is the child's status in Run's result; ok is false when the
// result is another error.
func exitCode(err error) (code int, ok bool) {
	var es ExitStatus
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &es):
		return int(es), true
	}
	return 0, false
}

// wrapperCommand is this test binary as a wrapper of argv.
func wrapperCommand(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, argv...)
	// A race-enabled binary sleeps a second on exit unless told not to.
	cmd.Env = append(os.Environ(), wrapperEnv+"=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

// outer is a real terminal standing in for the user's: the test holds the
// master (the "screen and keyboard"), the wrapper gets the tty end.
type outer struct {
	t      *testing.T
	master *os.File
	tty    *os.File

	mu  sync.Mutex
	buf bytes.Buffer
	wg  sync.WaitGroup
}

func newOuter(t *testing.T, rows, cols uint16) *outer {
	t.Helper()
	m, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := creackpty.Setsize(m, &creackpty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	o := &outer{t: t, master: m, tty: tty}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		b := make([]byte, 32<<10)
		for {
			n, err := m.Read(b)
			o.mu.Lock()
			o.buf.Write(b[:n])
			o.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = o.tty.Close()
		_ = o.master.Close()
		o.wg.Wait()
	})
	return o
}

func (o *outer) output() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *outer) waitFor(s string) {
	o.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(o.output(), s) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.t.Fatalf("timed out waiting for %q; screen so far: %q", s, o.output())
}

// waitCount waits until s was written n times.
func (o *outer) waitCount(s string, n int) {
	o.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Count(o.output(), s) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.t.Fatalf("timed out waiting for %q written %d times; screen so far: %q", s, n, o.output())
}

func (o *outer) termios() unix.Termios {
	t, err := unix.IoctlGetTermios(int(o.tty.Fd()), unix.TCGETS)
	if err != nil {
		o.t.Fatal(err)
	}
	return *t
}

type result struct {
	err error
}

func start(t *testing.T, o Options) (sigs chan os.Signal, done chan result) {
	t.Helper()
	sigs = make(chan os.Signal, 4)
	o.Signals = sigs
	if o.Env == nil {
		o.Env = os.Environ()
	}
	done = make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		done <- result{err: Run(context.Background(), o)}
		close(finished)
	}()
	// A test that failed early leaves the wrapper running: hang it up, so
	// the outer terminal's cleanup does not wait on it forever.
	t.Cleanup(func() {
		select {
		case <-finished:
			return
		default:
		}
		sigs <- unix.SIGHUP
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Error("the wrapper still runs after a hangup")
		}
	})
	return sigs, done
}

func wait(t *testing.T, done chan result) error {
	t.Helper()
	select {
	case r := <-done:
		return r.err
	case <-time.After(2 * time.Minute): // a hang guard: a loaded box is slow
		t.Fatal("wrapper did not finish")
		return nil
	}
}

func statusOfErr(t *testing.T, err error) int {
	t.Helper()
	if code, ok := exitCode(err); ok {
		return code
	}
	t.Fatalf("unexpected error: %v", err)
	return -1
}

func TestSizeExitCodeAndResize(t *testing.T) {
	o := newOuter(t, 33, 101)
	before := o.termios()
	sigs, done := start(t, Options{
		Argv:  []string{"sh", "-c", `printf "size:%s\n" "$(stty size)"; read x; printf "after:%s\n" "$(stty size)"; exit 7`},
		Stdin: o.tty, Stdout: o.tty,
	})
	o.waitFor("size:33 101")
	if err := creackpty.Setsize(o.master, &creackpty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	sigs <- unix.SIGWINCH
	time.Sleep(50 * time.Millisecond)
	if _, err := o.master.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("after:40 120")
	if got := statusOfErr(t, wait(t, done)); got != 7 {
		t.Fatalf("exit status %d, want 7", got)
	}
	if after := o.termios(); after != before {
		t.Fatalf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// A key typed after the window changed size reaches the child after the
// new size, as on a bare terminal, where the size is set at once: the
// kernel's SIGWINCH to the wrapper comes through Go's signal machinery, and
// the keystroke may well be read before it. Here the signal comes only
// after the child answered, the way it can come late.
func TestResizeComesBeforeTheKeysTypedAfterIt(t *testing.T) {
	o := newOuter(t, 33, 101)
	sigs, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; echo ready; while read x; do [ "$x" = end ] && exit 0; printf "size:%s;\n" "$(stty size)"; done`},
		Stdin: o.tty, Stdout: o.tty,
	})
	o.waitFor("ready")
	for i, s := range []creackpty.Winsize{{Rows: 1, Cols: 1}, {Rows: 40, Cols: 120}, {Rows: 500, Cols: 1000}} {
		if err := creackpty.Setsize(o.master, &s); err != nil {
			t.Fatal(err)
		}
		if _, err := o.master.Write([]byte("x\r")); err != nil {
			t.Fatal(err)
		}
		o.waitCount("size:", i+1)
		sigs <- unix.SIGWINCH
		want := fmt.Sprintf("size:%d %d;", s.Rows, s.Cols)
		if got := o.output(); !strings.HasSuffix(strings.TrimRight(got, "\r\n"), want) {
			t.Fatalf("the child, asked after the resize, answered %q, want %q", got[strings.LastIndex(got, "size:"):], want)
		}
	}
	if _, err := o.master.Write([]byte("end\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestChildKilledBySignal(t *testing.T) {
	o := newOuter(t, 24, 80)
	before := o.termios()
	_, done := start(t, Options{Argv: []string{"sh", "-c", `echo ready; kill -TERM $$; sleep 5`}, Stdin: o.tty, Stdout: o.tty})
	if got := statusOfErr(t, wait(t, done)); got != 143 {
		t.Fatalf("exit status %d, want 143", got)
	}
	if after := o.termios(); after != before {
		t.Fatal("terminal mode not restored")
	}
}

func TestForwardsSIGTERM(t *testing.T) {
	o := newOuter(t, 24, 80)
	sigs, done := start(t, Options{Argv: []string{"sh", "-c", `trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.05; done`}, Stdin: o.tty, Stdout: o.tty})
	o.waitFor("ready")
	sigs <- unix.SIGTERM
	if got := statusOfErr(t, wait(t, done)); got != 9 {
		t.Fatalf("exit status %d, want 9 (child's TERM handler)", got)
	}
	o.waitFor("got-term")
}

func TestHangupEndsChildThatIgnoresSIGHUP(t *testing.T) {
	o := newOuter(t, 24, 80)
	before := o.termios()
	sigs, done := start(t, Options{
		Argv:  []string{"sh", "-c", `trap "" HUP; echo ready; while :; do echo tick || exit 3; sleep 0.05; done`},
		Stdin: o.tty, Stdout: o.tty, KillGrace: 3 * time.Second,
	})
	o.waitFor("ready")
	sigs <- unix.SIGHUP
	err := wait(t, done) // it ends: killed after KillGrace
	if err == nil {
		t.Fatal("want a non-zero status after hangup")
	}
	if after := o.termios(); after != before {
		t.Fatal("terminal mode not restored")
	}
}

func TestNotFoundAndNotExecutable(t *testing.T) {
	o := newOuter(t, 24, 80)
	err := Run(context.Background(), Options{Argv: []string{"no-such-cmd-herdr"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: o.tty, Stdout: o.tty})
	var se *StartError
	if !errors.As(err, &se) || se.Code != 127 || !strings.Contains(err.Error(), "no-such-cmd-herdr") || !strings.Contains(err.Error(), "PATH=/usr/bin:/bin") {
		t.Fatalf("got %v, want a 127 StartError naming the command and PATH", err)
	}
	f := t.TempDir() + "/script"
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Options{Argv: []string{f}, Env: os.Environ(), Stdin: o.tty, Stdout: o.tty})
	if !errors.As(err, &se) || se.Code != 126 || !strings.Contains(err.Error(), "chmod +x") {
		t.Fatalf("got %v, want a 126 StartError with a chmod hint", err)
	}
}

// A program found on PATH without its execute bit is what a shell reports
// as "Permission denied", 126: named where it was found, with the way out,
// not "command not found" about a file that is there.
func TestFoundOnPathButNotExecutable(t *testing.T) {
	o := newOuter(t, 24, 80)
	dir := t.TempDir()
	f := dir + "/mytool"
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Options{Argv: []string{"mytool"}, Env: []string{"PATH=" + dir + ":/usr/bin:/bin"}, Stdin: o.tty, Stdout: o.tty})
	var se *StartError
	if !errors.As(err, &se) || se.Code != 126 || !strings.Contains(err.Error(), "chmod +x "+f) {
		t.Fatalf("got %v, want a 126 StartError naming %s with a chmod hint", err, f)
	}
}

// The "try: chmod +x …" a not-executable program's error offers is the
// command meant when pasted, whatever the program's path holds: named
// on the command line or found on PATH, in a directory with a space and
// a shell's metacharacters in its name.
func TestNotExecutableHintIsACommandThatFixesIt(t *testing.T) {
	o := newOuter(t, 24, 80)
	dir := t.TempDir() + "/my tools; $(touch INJECTED) #1"
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, argv0, path string }{
		{"named", dir + "/named tool", "/usr/bin:/bin"},
		{"on PATH", "found", dir + ":/usr/bin:/bin"},
	} {
		f := dir + "/" + strings.TrimPrefix(tc.argv0, dir+"/")
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Run(context.Background(), Options{Argv: []string{tc.argv0}, Env: []string{"PATH=" + tc.path}, Stdin: o.tty, Stdout: o.tty})
		// "… (try: CMD)": the path in CMD may hold a ')' too.
		msg := fmt.Sprint(err)
		start, end := strings.Index(msg, "(try: "), strings.LastIndex(msg, ")")
		if start < 0 || end < start {
			t.Fatalf("%s: %v: no hint", tc.name, err)
		}
		hint := msg[start+len("(try: ") : end]
		c := exec.Command("sh", "-c", hint)
		c.Dir = t.TempDir()
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: the hint %q failed: %v\n%s", tc.name, hint, err, out)
		}
		if fi, err := os.Stat(f); err != nil || fi.Mode()&0o100 == 0 {
			t.Fatalf("%s: after the hint %q, %s is %v (%v), want executable", tc.name, hint, f, fi.Mode(), err)
		}
		if _, err := os.Stat(c.Dir + "/INJECTED"); err == nil {
			t.Fatalf("%s: the hint %q ran what the path holds", tc.name, hint)
		}
	}
}

// A program the kernel refuses although it looks executable (its
// interpreter is missing) is reported like one that was not found, with the
// exec error in the reason.
func TestMissingInterpreter(t *testing.T) {
	o := newOuter(t, 24, 80)
	f := t.TempDir() + "/script"
	if err := os.WriteFile(f, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var started, exited bool
	err := Run(context.Background(), Options{Argv: []string{f}, Env: os.Environ(), Stdin: o.tty, Stdout: o.tty,
		Started: func(int) { started = true }, Exited: func() { exited = true }})
	var se *StartError
	if !errors.As(err, &se) || se.Code != 127 || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "cannot execute: fork/exec "+f+": no such file or directory") {
		t.Fatalf("got %v, want a 127 StartError with the exec error", err)
	}
	if started || exited {
		t.Fatalf("Started (%v) or Exited (%v) was called for a command that never ran", started, exited)
	}
}

// Exited tells the child's exit when it is seen, once, after Started and
// before the output it left is drained (the tap closes at the drain's
// end): wrap's state machine must know the agent is gone while the way out
// still runs, not only once Run has returned.
func TestExitedIsToldBeforeTheDrain(t *testing.T) {
	o := newOuter(t, 24, 80)
	tap := NewTap(0)
	var calls []string
	var closedAtExit bool
	_, done := start(t, Options{Argv: []string{"sh", "-c", "echo bye; exit 3"}, Stdin: o.tty, Stdout: o.tty, Tap: tap,
		Started: func(int) { calls = append(calls, "started") },
		Exited: func() {
			calls = append(calls, "exited")
			closedAtExit = tap.Take().Closed
		}})
	if got := statusOfErr(t, wait(t, done)); got != 3 {
		t.Fatalf("exit %d, want 3", got)
	}
	if got := strings.Join(calls, " "); got != "started exited" {
		t.Fatalf("calls %q, want \"started exited\"", got)
	}
	if closedAtExit {
		t.Fatal("Exited came after the drain: the tap was closed already")
	}
}

func TestPipedStdinEOF(t *testing.T) {
	o := newOuter(t, 24, 80)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, done := start(t, Options{Argv: []string{"sh", "-c", `n=0; while read l; do n=$((n+1)); done; echo "lines:$n"`}, Stdin: r, Stdout: o.tty})
	_, _ = io.WriteString(w, "a\nb\nc")
	_ = w.Close()
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("exit %d", got)
	}
	o.waitFor("lines:2")
	if strings.Contains(o.output(), "a\r\nb") {
		t.Fatalf("piped input was echoed: %q", o.output())
	}
}

// coreutils cat closes fds 0-2 before it exits: the master reports EIO while
// the child still lives, and closing the master then would kill it with
// SIGHUP. Run after other tests so pty numbers are reused, as in real life.
func TestDevNullStdin(t *testing.T) {
	o := newOuter(t, 24, 80)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	_, done := start(t, Options{Argv: []string{"cat"}, Stdin: null, Stdout: o.tty, Logf: t.Logf})
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("cat with /dev/null stdin: exit %d", got)
	}
}

func TestTapGetsOutputAfterTerminal(t *testing.T) {
	o := newOuter(t, 24, 80)
	tap := NewTap(1 << 20)
	_, done := start(t, Options{Argv: []string{"sh", "-c", `printf 'hello tap'`}, Stdin: o.tty, Stdout: o.tty, Tap: tap})
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	b := tap.Take()
	var got []byte
	for _, s := range b.Segments {
		got = append(got, s.Data...)
	}
	if string(got) != "hello tap" || !b.Closed {
		t.Fatalf("tap got %q closed=%v", got, b.Closed)
	}
}

// `herdr-pi wrap -- cmd | head`: the reader of our stdout goes away and
// the child, hung up for it, dies of our SIGHUP. The pipeline's status is
// what the shell gives a command killed by the closed pipe (128+SIGPIPE,
// as bare `cmd | head` and util-linux script give), not 129, which reads
// as the terminal hanging up.
func TestAClosedPipeOnStdoutExitsAsSIGPIPE(t *testing.T) {
	o := newOuter(t, 24, 80)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, done := start(t, Options{Argv: []string{"yes"}, Stdin: o.tty, Stdout: w})
	if _, err := io.ReadFull(r, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	res := wait(t, done)
	w.Close()
	if got, want := statusOfErr(t, res), 128+int(unix.SIGPIPE); got != want {
		t.Fatalf("exit %d after the pipe's reader went away, want %d (128+SIGPIPE)", got, want)
	}
}

// A child that takes the hangup and chooses its own status keeps it: only
// a death the wrapper caused is put down to the closed pipe.
func TestAClosedPipeOnStdoutKeepsTheChildsOwnStatus(t *testing.T) {
	o := newOuter(t, 24, 80)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, done := start(t, Options{Argv: []string{"sh", "-c", `trap 'exit 5' HUP; while :; do echo y; done`}, Stdin: o.tty, Stdout: w})
	if _, err := io.ReadFull(r, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	res := wait(t, done)
	w.Close()
	if got := statusOfErr(t, res); got != 5 {
		t.Fatalf("exit %d, want the child's own 5", got)
	}
}

// Terminal names the device the child has as its terminal, before the
// child starts: the child reads the same major and minor off its stdin.
func TestTerminalIsTheChildsOwnDevice(t *testing.T) {
	o := newOuter(t, 24, 80)
	var dev uint64
	told := 0
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stat -L -c 'dev:%t:%T:' /dev/stdin`},
		Stdin: o.tty, Stdout: o.tty,
		Terminal: func(d uint64) { dev = d; told++ },
		Started: func(int) {
			if told != 1 {
				t.Errorf("Terminal was told %d times before the child started, want once", told)
			}
		},
	})
	if got := statusOfErr(t, wait(t, done)); got != 0 {
		t.Fatalf("exit status %d; screen %q", got, o.output())
	}
	want := fmt.Sprintf("dev:%x:%x:", unix.Major(dev), unix.Minor(dev))
	o.waitFor("dev:")
	if !strings.Contains(o.output(), want) || dev == 0 {
		t.Fatalf("Terminal said %d (%s), the child's stdin is: %q", dev, want, o.output())
	}
}
