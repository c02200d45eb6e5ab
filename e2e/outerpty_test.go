package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// outerRun is one command running under an outer pty that the test holds,
// the way a user's terminal holds herdr-pi. Output is consumed as fast as the
// pty delivers it, by one goroutine the run owns.
type outerRun struct {
	master *os.File
	tty    *os.File
	cmd    *exec.Cmd

	mu      sync.Mutex
	out     bytes.Buffer
	keep    bool // keep the bytes (else only count and hash them)
	n       int64
	onBytes func(p []byte)

	readDone chan struct{}
	exited   chan error
	// modeBefore is the terminal's mode as it was before the command
	// started: read any later, a command that sets its own mode at once
	// may already have (a loaded machine can hold the test back that long).
	modeBefore unix.Termios
}

type outerOptions struct {
	Argv       []string
	Env        []string
	Rows, Cols uint16
	Keep       bool
	// OnBytes sees every chunk read from the master (on the reader goroutine).
	OnBytes func(p []byte)
}

func startOuter(o outerOptions) (*outerRun, error) {
	master, tty, err := openPollablePty()
	if err != nil {
		return nil, err
	}
	if o.Rows == 0 {
		o.Rows, o.Cols = 50, 200
	}
	if err := setSize(master, o.Rows, o.Cols); err != nil {
		master.Close()
		tty.Close()
		return nil, err
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	path, err := lookPathIn(o.Argv[0], env)
	if err != nil {
		master.Close()
		tty.Close()
		return nil, err
	}
	cmd := exec.Command(path, o.Argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	r := &outerRun{master: master, tty: tty, cmd: cmd, keep: o.Keep, onBytes: o.OnBytes,
		readDone: make(chan struct{}), exited: make(chan error, 1)}
	// TCGETS on the master reads the terminal side's mode.
	mode, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		master.Close()
		tty.Close()
		return nil, err
	}
	r.modeBefore = *mode
	if err := cmd.Start(); err != nil {
		master.Close()
		tty.Close()
		return nil, err
	}
	// The child has its own copies; closing ours lets the master report EIO
	// once the child's side is gone.
	tty.Close()
	go r.read()
	go func() { r.exited <- cmd.Wait() }()
	return r, nil
}

func (r *outerRun) read() {
	defer close(r.readDone)
	buf := make([]byte, 256<<10)
	for {
		n, err := r.master.Read(buf)
		if n > 0 {
			if r.onBytes != nil {
				r.onBytes(buf[:n])
			}
			r.mu.Lock()
			r.n += int64(n)
			if r.keep {
				r.out.Write(buf[:n])
			}
			r.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// wait waits for the child to exit and its output to drain, at most d.
func (r *outerRun) wait(d time.Duration) (status int, err error) {
	defer r.master.Close()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-r.exited:
	case <-timer.C:
		_ = unix.Kill(-r.cmd.Process.Pid, unix.SIGKILL)
		<-r.exited
		return -1, fmt.Errorf("%q did not finish within %v", r.cmd.Args, d)
	}
	select {
	case <-r.readDone:
	case <-time.After(5 * time.Second):
		_ = r.master.SetReadDeadline(time.Now())
		<-r.readDone
	}
	return exitStatus(werr), nil
}

func (r *outerRun) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.out.Bytes()...)
}

func (r *outerRun) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
