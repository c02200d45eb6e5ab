package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"strings"

	"golang.org/x/sys/unix"
)

func termSize() (rows, cols int) {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 24, 80
	}
	return int(ws.Row), int(ws.Col)
}

func signalNamed(name string) unix.Signal {
	s := unix.SignalNum("SIG" + strings.ToUpper(strings.TrimPrefix(strings.TrimSpace(name), "SIG")))
	if s == 0 {
		fmt.Fprintf(os.Stderr, "fakeagent: unknown signal %q\n", name)
		os.Exit(2)
	}
	return s
}

func killSelf(name string) { _ = unix.Kill(os.Getpid(), signalNamed(name)) }

func ignoreSignal(name string) { signal.Ignore(signalNamed(name)) }

// rawTerminal puts stdin's terminal in raw mode as cfmakeraw does.
func rawTerminal() {
	fd := int(os.Stdin.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent: raw:", err)
		os.Exit(3)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent: raw:", err)
		os.Exit(3)
	}
}
