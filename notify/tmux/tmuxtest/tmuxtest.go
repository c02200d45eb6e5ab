// Package tmuxtest runs private tmux servers for tests: each on its own
// socket in a short temporary directory, attached through a real pty the
// test owns when it needs a terminal outside, and killed in cleanup. It is
// imported only by tests.
package tmuxtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Require ends the test through testenv.Missing when tmux is not installed.
func Require(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		testenv.Missing(t, "tmux", "apt-get install tmux (CI installs it in .ci/run)")
	}
	return path
}

// Server is one private tmux server.
type Server struct {
	Bin    string
	Socket string
	// Conf is the configuration file the server starts with.
	Conf string
	dir  string
}

// New prepares a server whose configuration is conf; it starts with the
// first session. Its socket lives in a fresh directory under /tmp, short
// enough for a unix socket path. Cleanup kills the server.
func New(t testing.TB, conf string) *Server {
	t.Helper()
	bin := Require(t)
	dir, err := os.MkdirTemp("/tmp", "hpt")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Bin: bin, Socket: filepath.Join(dir, "s"), Conf: filepath.Join(dir, "tmux.conf"), dir: dir}
	if err := os.WriteFile(s.Conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = exec.CommandContext(ctx, bin, "-S", s.Socket, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	return s
}

// Args are the tmux arguments that reach this server with its config.
func (s *Server) Args(args ...string) []string {
	return append([]string{"-S", s.Socket, "-f", s.Conf}, args...)
}

// Tmux runs a tmux command against the server and returns its output.
func (s *Server) Tmux(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(s.Bin, s.Args(args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Env is a clean environment for a tmux client: no $TMUX or $TMUX_PANE from
// whatever runs the tests, a known TERM, and extra on top.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "KITTY_WINDOW_ID":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "TERM=xterm-256color"), extra...)
}

// Terminal is a real pty with a tmux client attached, standing in for the
// person's terminal: everything tmux sends to it is recorded.
type Terminal struct {
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	exit chan error
}

// Attach starts a tmux client for s in a new pty of rows×cols with the
// given environment and tmux arguments (typically new-session …), and
// records what it draws. Cleanup ends the client and waits for it.
func (s *Server) Attach(t testing.TB, env []string, rows, cols uint16, args ...string) *Terminal {
	t.Helper()
	ptmx, tty, err := openPollable()
	if err != nil {
		t.Fatal(err)
	}
	if err := creackpty.Setsize(ptmx, &creackpty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.Bin, s.Args(args...)...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	term := &Terminal{cmd: cmd, pty: ptmx, done: make(chan struct{}), exit: make(chan error, 1)}
	// The reader ends when the client and everything holding the pty's
	// other end are gone (EIO) or the pty is closed in cleanup.
	go func() {
		defer close(term.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { term.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-term.exit:
		default:
			_ = cmd.Process.Kill()
			<-term.exit
		}
		ptmx.Close()
		<-term.done
	})
	return term
}

// Output is everything the terminal received so far.
func (term *Terminal) Output() []byte {
	term.mu.Lock()
	defer term.mu.Unlock()
	return bytes.Clone(term.out.Bytes())
}

// WaitFor waits until the terminal has received want, up to timeout.
func (term *Terminal) WaitFor(want []byte, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if bytes.Contains(term.Output(), want) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return bytes.Contains(term.Output(), want)
}

// Wait waits for the client to exit, up to timeout.
func (term *Terminal) Wait(timeout time.Duration) (error, bool) {
	select {
	case err := <-term.exit:
		term.exit <- err
		return err, true
	case <-time.After(timeout):
		return nil, false
	}
}

// openPollable opens a pty whose master is in the runtime poller, so closing
// it ends a Read in progress (creack leaves the master blocking).
func openPollable() (master, tty *os.File, err error) {
	m, tty, err := creackpty.Open()
	if err != nil {
		return nil, nil, err
	}
	defer m.Close()
	fd, err := unix.Dup(int(m.Fd()))
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "ptmx"), tty, nil
}
