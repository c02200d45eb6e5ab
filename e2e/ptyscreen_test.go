package e2e

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
	"time"

	creackpty "github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/screen"
)

func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"ptyscreen": cmdPtyScreen,
		"herdrfake": cmdHerdrFake,
	}
}

// cmdPtyScreen runs a command under a real pty and makes the final screen,
// as a terminal emulator would show it, the script's stdout:
//
//	ptyscreen [-size RxC] [-exit N] [-raw FILE] [-timeout D] [-do ACTION]... -- cmd args…
//
// ACTIONs run in order while the command runs: wait=TEXT (until the screen
// shows TEXT), sleep=DUR, resize=RxC, send=TEXT (escapes as in fakeagent),
// kill=SIG (signal the command). The command must exit with status N
// (default 0; "! ptyscreen" must name its non-zero N). The terminal mode
// of the pty after the command exits must equal the mode before it started:
// a wrapper that leaves the terminal raw fails here.
func cmdPtyScreen(ts *testscript.TestScript, neg bool, args []string) {
	spec := ptySpec{Rows: 24, Cols: 80, Timeout: 20 * time.Second, WantExit: -1}
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			ts.Fatalf("ptyscreen: flag %s needs a value", args[0])
		}
		switch args[0] {
		case "-size":
			spec.Rows, spec.Cols = parseSize(ts, args[1])
		case "-exit":
			n, err := strconv.Atoi(args[1])
			ts.Check(err)
			spec.WantExit = n
		case "-raw":
			spec.RawFile = ts.MkAbs(args[1])
		case "-timeout":
			d, err := time.ParseDuration(args[1])
			ts.Check(err)
			spec.Timeout = d
		case "-do":
			spec.Actions = append(spec.Actions, args[1])
		default:
			ts.Fatalf("ptyscreen: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: ptyscreen [flags] -- cmd args…")
	}
	if neg && spec.WantExit <= 0 {
		// "Any failure" would let a wrapper that dies of the wrong cause
		// pass: a failing command names its exact status.
		ts.Fatalf("ptyscreen: ! ptyscreen needs -exit N (N > 0), the exact status expected")
	}
	spec.Argv = args[1:]
	// The script's environment, including what `env` lines set.
	ts.Check(ts.Exec("env"))
	spec.Env = strings.Split(strings.TrimRight(ts.ReadFile("stdout"), "\n"), "\n")
	spec.Dir = ts.MkAbs(".")

	res, err := runPtyScreen(spec)
	if err != nil {
		ts.Fatalf("ptyscreen: %v", err)
	}
	if spec.RawFile != "" {
		ts.Check(os.WriteFile(spec.RawFile, res.Raw, 0o644))
	}
	fmt.Fprint(ts.Stdout(), res.Screen)
	ts.Logf("ptyscreen: exit status %d", res.Exit)
	if res.TermiosChanged != "" {
		ts.Fatalf("ptyscreen: terminal mode not restored after exit: %s", res.TermiosChanged)
	}
	want := spec.WantExit
	if want < 0 {
		want = 0
	}
	if res.Exit != want {
		ts.Fatalf("ptyscreen: exit status %d, want %d\n%s", res.Exit, want, res.Screen)
	}
}

func parseSize(ts *testscript.TestScript, s string) (uint16, uint16) {
	r, c, ok := strings.Cut(s, "x")
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil || rows <= 0 || cols <= 0 {
		ts.Fatalf("ptyscreen: bad size %q (want ROWSxCOLS)", s)
	}
	return uint16(rows), uint16(cols)
}

type ptySpec struct {
	Argv       []string
	Env        []string
	Dir        string
	Rows, Cols uint16
	Timeout    time.Duration
	WantExit   int
	RawFile    string
	Actions    []string
}

type ptyResult struct {
	Screen         string
	Raw            []byte
	Exit           int
	TermiosChanged string
}

// shadow is the product's own guarded shadow screen (pane/screen) fed
// from the pty master, plus the raw bytes.
type shadow struct {
	mu  sync.Mutex
	scr *screen.Screen
	raw bytes.Buffer
}

func newShadow(rows, cols int) *shadow { return &shadow{scr: screen.New(rows, cols)} }

func (s *shadow) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(p)
	_ = s.scr.Write(p)
}

func (s *shadow) rawLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.Len()
}

func (s *shadow) resize(rows, cols int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.scr.Resize(rows, cols)
}

func (s *shadow) screen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimRight(s.scr.Snapshot().Text, "\n") + "\n"
}

func (s *shadow) close() { s.scr.Close() }

// openPollablePty opens a pty pair whose master supports deadlines: creack
// leaves the master in blocking mode, so it is re-made non-blocking and
// handed to the runtime poller.
func openPollablePty() (master, tty *os.File, err error) {
	m, tty, err := creackpty.Open()
	if err != nil {
		return nil, nil, err
	}
	defer m.Close()
	// Close-on-exec from the start: a plain dup would leak the master into
	// every command started meanwhile (this one's included), and a master
	// its own wrapper holds never hangs up when the test closes it.
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "ptmx"), tty, nil
}

func setSize(f *os.File, rows, cols uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return err
	}
	return ierr
}

func runPtyScreen(spec ptySpec) (ptyResult, error) {
	master, tty, err := openPollablePty()
	if err != nil {
		return ptyResult{}, err
	}
	defer master.Close()
	defer tty.Close()
	if err := setSize(master, spec.Rows, spec.Cols); err != nil {
		return ptyResult{}, err
	}
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		return ptyResult{}, err
	}

	path, err := lookPathIn(spec.Argv[0], spec.Env)
	if err != nil {
		return ptyResult{}, err
	}
	cmd := exec.Command(path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		return ptyResult{}, err
	}

	sh := newShadow(int(spec.Rows), int(spec.Cols))
	defer sh.close()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				sh.write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.Now().Add(spec.Timeout)
	actionErr := runActions(spec.Actions, sh, master, cmd.Process, deadline, exited)

	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(time.Until(deadline)):
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-exited
		actionErr = errors.Join(actionErr, fmt.Errorf("timed out after %v; screen:\n%s", spec.Timeout, sh.screen()))
	}
	// The command is gone; what it wrote is in the master's buffer. Read
	// until it stays quiet (our tty fd keeps the master from EOF).
	quiet := time.Now().Add(300 * time.Millisecond)
	for total := sh.rawLen(); time.Now().Before(quiet); {
		time.Sleep(30 * time.Millisecond)
		if n := sh.rawLen(); n != total {
			total, quiet = n, time.Now().Add(100*time.Millisecond)
		}
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		return ptyResult{}, err
	}
	_ = master.SetReadDeadline(time.Now())
	<-readerDone

	res := ptyResult{Screen: sh.screen(), Exit: exitStatus(waitErr)}
	sh.mu.Lock()
	res.Raw = append([]byte(nil), sh.raw.Bytes()...)
	sh.mu.Unlock()
	if *before != *after {
		res.TermiosChanged = fmt.Sprintf("before %+v, after %+v", *before, *after)
	}
	return res, actionErr
}

func runActions(actions []string, sh *shadow, master *os.File, proc *os.Process, deadline time.Time, exited chan error) error {
	for _, a := range actions {
		kind, val, _ := strings.Cut(a, "=")
		switch kind {
		case "wait":
			for !strings.Contains(sh.screen(), val) {
				if time.Now().After(deadline) {
					return fmt.Errorf("wait=%q: not on screen before the timeout:\n%s", val, sh.screen())
				}
				select {
				case err := <-exited:
					exited <- err
					if !strings.Contains(sh.screen(), val) {
						return fmt.Errorf("wait=%q: command exited first (%v):\n%s", val, err, sh.screen())
					}
				case <-time.After(10 * time.Millisecond):
				}
			}
		case "sleep":
			d, err := time.ParseDuration(val)
			if err != nil {
				return err
			}
			time.Sleep(d)
		case "resize":
			r, c, _ := strings.Cut(val, "x")
			rows, _ := strconv.Atoi(r)
			cols, _ := strconv.Atoi(c)
			sh.resize(rows, cols)
			if err := setSize(master, uint16(rows), uint16(cols)); err != nil {
				return err
			}
		case "send":
			if _, err := master.Write([]byte(unescape(val))); err != nil {
				return err
			}
		case "kill":
			if err := proc.Signal(signalNamed(val)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown action %q", a)
		}
	}
	return nil
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range strings.Split(p, ":") {
				if fi, err := os.Stat(dir + "/" + name); err == nil && fi.Mode()&0o111 != 0 && !fi.IsDir() {
					return dir + "/" + name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: not found in the script's PATH", name)
}
