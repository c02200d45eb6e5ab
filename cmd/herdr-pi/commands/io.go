package commands

import (
	"io"
	"os"

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
