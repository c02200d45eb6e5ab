package pty

import (
	"os"
	"strconv"

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
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
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
