package commands

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

// IO is everything a command may touch of its process: streams and
// environment. Commands never reach for os.Stdin, os.Getenv and friends
// directly, so a test can run any command in-process. It is also the one
// place that knows which streams are terminals and how big they are.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Env is the process environment as KEY=VALUE pairs.
	Env []string
	// Dir is the working directory ("" means the process's own).
	Dir string
}

// SystemIO is the real process IO.
func SystemIO() IO {
	return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Env: os.Environ()}
}

func (o IO) env() settings.Env { return settings.EnvFrom(o.Env) }

// file returns the *os.File behind a stream, if there is one.
func file(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	return f, ok
}

// Terminal is what a stream standing in for a terminal says about itself.
// Tests give IO a value with these methods; a real *os.File is asked
// through the kernel instead.
type Terminal interface {
	IsTerminal() bool
	// Size is the terminal's rows and columns, 0 when unknown.
	Size() (rows, cols int)
}

// isTerminal says whether a stream is a terminal: a Terminal stand-in says
// so itself, a file is asked with pane/pty's check, anything else is not.
func isTerminal(v any) bool {
	if t, ok := v.(Terminal); ok {
		return t.IsTerminal()
	}
	f, ok := file(v)
	return ok && pty.IsTerminal(int(f.Fd()))
}

// terminalSize is the size of a stream that is a terminal; 0, 0 when it is
// not one or does not say.
func terminalSize(v any) (rows, cols int) {
	if t, ok := v.(Terminal); ok {
		if !t.IsTerminal() {
			return 0, 0
		}
		return t.Size()
	}
	f, ok := file(v)
	if !ok || !pty.IsTerminal(int(f.Fd())) {
		return 0, 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Row), int(ws.Col)
}

// stdinTerminal is stdin when it is a terminal file (the demo reads keys
// from it).
func (o IO) stdinTerminal() (*os.File, bool) {
	f, ok := file(o.In)
	return f, ok && isTerminal(f)
}

// stdoutTerminal says whether stdout is a terminal, and how big.
func (o IO) stdoutTerminal() (tty bool, rows, cols int) {
	if !isTerminal(o.Out) {
		return false, 0, 0
	}
	rows, cols = terminalSize(o.Out)
	return true, rows, cols
}

// color says whether human output may use colour: only on a terminal, and
// not when NO_COLOR is set to anything (no-color.org) or the terminal is
// dumb.
func (o IO) color() bool {
	env := o.env()
	return isTerminal(o.Out) && env.Get("NO_COLOR") == "" && env.Get("TERM") != "dumb"
}
