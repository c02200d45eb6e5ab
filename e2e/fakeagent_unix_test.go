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
