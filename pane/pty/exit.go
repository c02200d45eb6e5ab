package pty

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/pane/pty/leader"
)

// ExitStatus is a non-zero exit status of the wrapped command, in the shell's
// convention: the exit code, or 128+n when the command died of signal n.
type ExitStatus uint8

func (s ExitStatus) Error() string { return fmt.Sprintf("exit status %d", uint8(s)) }

// StartError means the command could not be started. Code is 127 when it was
// not found and 126 when it was found but could not be executed, as a shell
// reports them.
type StartError struct {
	Command string
	Code    int
	Reason  string
	Err     error
}

func (e *StartError) Error() string { return fmt.Sprintf("%s: %s", e.Command, e.Reason) }
func (e *StartError) Unwrap() error { return e.Err }

// statusOf turns a wait status into the shell's number, as the leader
// does for the child's.
func statusOf(ws syscall.WaitStatus) int { return leader.Status(ws) }

// Resolve finds argv0 the way a shell would, using the PATH in env (the
// child's environment), and explains a failure as a [*StartError] in words
// a user can act on.
func Resolve(argv0 string, env []string) (string, error) { return resolve(argv0, env) }

func resolve(argv0 string, env []string) (string, error) {
	if argv0 == "" {
		return "", &StartError{Command: `""`, Code: 127, Reason: "empty command name"}
	}
	if strings.Contains(argv0, "/") {
		return argv0, checkExecutable(argv0, argv0)
	}
	path := envValue(env, "PATH")
	if p, ok := LookPath(argv0, path); ok {
		return p, nil
	}
	// A shell that finds only a file without its execute bit says
	// "Permission denied" and exits 126: the file is there, its mode is
	// what to fix.
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, argv0)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return "", &StartError{Command: argv0, Code: 126, Err: os.ErrPermission,
				Reason: fmt.Sprintf("found %s on PATH, but it is not executable (try: chmod +x %s)", p, shellword.Word(p))}
		}
	}
	shown := path
	if shown == "" {
		shown = "(empty)"
	}
	return "", &StartError{
		Command: argv0, Code: 127, Err: exec.ErrNotFound,
		Reason: fmt.Sprintf("command not found in PATH=%s; install it or pass its full path", shown),
	}
}

// LookPath finds name in the directories of pathList (a PATH value; an
// empty entry is the current directory) the way a shell does: the first
// regular file there with an execute bit. It is herdr-pi's one PATH lookup,
// for wrap's child and doctor's programs alike: both ask about the PATH
// they were given, not the one herdr-pi runs with.
func LookPath(name, pathList string) (string, bool) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

func checkExecutable(shown, p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &StartError{Command: shown, Code: 127, Err: err, Reason: "no such file"}
	case err != nil:
		return &StartError{Command: shown, Code: 126, Err: err, Reason: err.Error()}
	case fi.IsDir():
		return &StartError{Command: shown, Code: 126, Reason: "is a directory, not a program"}
	case fi.Mode()&0o111 == 0:
		return &StartError{Command: shown, Code: 126, Err: os.ErrPermission,
			Reason: fmt.Sprintf("not executable (try: chmod +x %s)", shellword.Word(shown))}
	}
	return nil
}

// startFailure classifies an exec failure that slipped past resolve (a bad
// interpreter line, a binary for another machine).
func startFailure(argv0 string, err error) error {
	code := 126
	if errors.Is(err, os.ErrNotExist) {
		code = 127
	}
	return &StartError{Command: argv0, Code: code, Err: err, Reason: "cannot execute: " + err.Error()}
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as exec does
		}
	}
	return v
}
