package commands

import (
	"errors"
	"fmt"
	"io"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// Exit codes shared by every command except wrap, which exits with the
// child's status.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitInterrupted is a command stopped by Ctrl-C (128+SIGINT).
	exitInterrupted = 130
)

// usageError is a mistake in how a command was called; it exits 2 and points
// at --help.
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// exitError carries an exit code whose message, if any, was already shown.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// exitCode is the one place errors become exit codes.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var (
		status pty.ExitStatus
		start  *pty.StartError
		usage  *usageError
		silent silentExit
	)
	switch {
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &silent):
		return int(silent)
	case errors.As(err, &start):
		fmt.Fprintf(stderr, "herdr-pi wrap: %v\n", start)
		return start.Code
	case errors.As(err, &usage):
		name := "herdr-pi"
		if usage.cmd != "" {
			name += " " + usage.cmd
		}
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, usage.err, name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "herdr-pi: %v\n", err)
	return exitError
}
