package commands

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/settings"
)

// IO is everything a command may touch of its process: streams and
// environment. Commands never reach for os.Stdin, os.Getenv and friends
// directly, so a test can run any command in-process.
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

// Terminal is what a stream standing for a terminal can say about itself.
// Tests give IO.Out a value with these methods to stand in for one; a real
// *os.File is asked through the kernel instead.
type Terminal interface {
	IsTerminal() bool
	// Width is the number of columns, 0 when unknown.
	Width() int
}

// outTerminal says whether stdout is a terminal, and how wide.
func (o IO) outTerminal() (isTerminal bool, width int) {
	if t, ok := o.Out.(Terminal); ok {
		return t.IsTerminal(), t.Width()
	}
	f, ok := file(o.Out)
	if !ok || !notifyIsTerminal(f) {
		return false, 0
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
		width = int(ws.Col)
	}
	return true, width
}
