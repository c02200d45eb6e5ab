package pty

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether fd is a terminal. It is herdr-pi's one
// terminal check: every command asks it, through cmd's IO.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// sizeOf reads the window size of the first terminal among fds.
func sizeOf(fds ...int) (Size, bool) {
	for _, fd := range fds {
		if fd < 0 {
			continue
		}
		ws, err := rawWinsize(fd)
		if err == nil && ws.Row > 0 && ws.Col > 0 {
			return Size{Rows: ws.Row, Cols: ws.Col}, true
		}
	}
	return Size{}, false
}

// fallbackSize is the size used when no terminal tells us one: $LINES and
// $COLUMNS when set, else the classic 24x80.
func fallbackSize(env []string) Size {
	s := Size{Rows: 24, Cols: 80}
	if n, err := strconv.Atoi(envValue(env, "LINES")); err == nil && n > 0 && n < 1<<16 {
		s.Rows = uint16(n)
	}
	if n, err := strconv.Atoi(envValue(env, "COLUMNS")); err == nil && n > 0 && n < 1<<16 {
		s.Cols = uint16(n)
	}
	return s
}

// rawMode puts fd into raw mode the way cfmakeraw does and returns the state
// to restore.
func rawMode(fd int) (*unix.Termios, error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return old, nil
}

func restoreMode(fd int, t *unix.Termios) error {
	if t == nil {
		return nil
	}
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// copyMode gives terminal to the mode terminal from is in, as
// util-linux script does for its child: flags, special characters and
// speed.
func copyMode(from, to int) error {
	t, err := unix.IoctlGetTermios(from, unix.TCGETS)
	if err != nil {
		return err
	}
	return unix.IoctlSetTermios(to, unix.TCSETS, t)
}

// disableEcho turns echo off on a terminal. Used on the child's side when our
// stdin is not a terminal, so piped input is not drawn twice (as util-linux
// script does by default).
func disableEcho(f *os.File) error {
	fd := int(f.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Lflag &^= unix.ECHO | unix.ECHONL
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

func setWinsize(fd int, s Size) error {
	return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: s.Rows, Col: s.Cols})
}

// openPty opens a new pty pair: the master as a raw, non-blocking
// descriptor, the slave as a blocking file for the child.
//
// The master is never an *os.File: os registers every file it opens with
// the runtime's network poller (edge-triggered), where each burst of the
// child's output would wake an idle runtime thread that has nothing to do
// with it — measured with perf: a third of the wrapper's context switches
// under a flood, and the main reason it lagged behind util-linux script.
// The copy loop polls the master itself.
func openPty() (master int, slave *os.File, err error) {
	master, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		_ = unix.Close(master)
		return -1, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(master, unix.TIOCGPTN)
	if err != nil {
		_ = unix.Close(master)
		return -1, nil, fmt.Errorf("pty number: %w", err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	// TIOCGPTPEER opens the slave through the master, immune to a
	// /dev/pts that is not the master's; older kernels get the path.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER,
		uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			_ = unix.Close(master)
			return -1, nil, fmt.Errorf("open %s: %w", name, err)
		}
		sfd = uintptr(fd)
	}
	// A blocking descriptor: os.NewFile keeps it out of the poller too.
	return master, os.NewFile(sfd, name), nil
}

// rawWinsize is TIOCGWINSZ without telling the scheduler: the copy loop
// asks it on every read of the keyboard, and an ordinary call wakes a
// sleeping sysmon (park.go). The ioctl never blocks.
// It returns the size by value: a pointer would cost an allocation a key.
func rawWinsize(fd int) (unix.Winsize, error) {
	var ws unix.Winsize
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if e != 0 {
		return unix.Winsize{}, e
	}
	return ws, nil
}
