// Package tmux asks the tmux servers around a process what a terminal
// notification needs to get through them: how many servers deep the process
// runs, whether each lets passthrough sequences out, and which terminal is
// outside (tmux hides it: panes see TERM_PROGRAM=tmux). It only reads: it
// never changes a tmux option or writes to a terminal.
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Runner runs the tmux client against the server listening on socket and
// returns what it printed on stdout.
type Runner interface {
	Run(ctx context.Context, socket string, args ...string) ([]byte, error)
}

// Exec runs the tmux binary at Path ("tmux" from PATH when empty).
type Exec struct{ Path string }

// Run implements Runner. The error carries tmux's own message.
func (e Exec) Run(ctx context.Context, socket string, args ...string) ([]byte, error) {
	path := e.Path
	if path == "" {
		path = "tmux"
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"-S", socket}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// On ctx's end the whole process group goes, and its output is not
	// waited for past waitDelay: a tmux that is a wrapper script may leave
	// a child holding the pipe, and the terminal channel asks before every
	// notification (the wrapper's exit waits for it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("tmux %s: %s", strings.Join(args, " "), msg)
		}
		return out, fmt.Errorf("tmux %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// waitDelay bounds the wait for a killed tmux's output to close.
const waitDelay = 500 * time.Millisecond

// Level is one tmux server between a process and the terminal.
type Level struct {
	// Socket is the server's socket path.
	Socket string
	// Pane is the pane (like "%3") of that server the process, or the next
	// inner tmux, runs in; empty when unknown.
	Pane string
}

// FromEnv reads the innermost level from $TMUX ("<socket>,<pid>,<session>")
// and $TMUX_PANE; ok is false outside tmux.
func FromEnv(getenv func(string) string) (Level, bool) {
	v := getenv("TMUX")
	if v == "" {
		return Level{}, false
	}
	// The socket path comes first; pid and session index are the last two
	// fields, so a comma inside the path survives.
	socket := v
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		if j := strings.LastIndexByte(v[:i], ','); j >= 0 {
			socket = v[:j]
		}
	}
	if socket == "" {
		return Level{}, false
	}
	return Level{Socket: socket, Pane: getenv("TMUX_PANE")}, true
}

// maxLevels bounds the walk: nobody nests tmux deeper, and a loop in what
// /proc says must not hang doctor.
const maxLevels = 4

// Probe finds the levels around a process.
type Probe struct {
	Run Runner
	// Proc is the proc filesystem root, "/proc" when empty.
	Proc string
}

// Levels returns the tmux servers around the process whose environment is
// getenv, innermost first; nil outside tmux.
//
// How nesting is detected: tmux refuses to start a client inside a pane
// whose $TMUX is set, so a nested tmux is started with $TMUX removed and the
// inner server cannot name the outer one. Its client process, though, runs
// in the outer pane. So for each level we ask the server for the pid of its
// client (#{client_pid}) and walk that process and its parents in /proc,
// reading each one's start-up environment for a $TMUX that names another
// server; the first found is the next level out. This finds the usual case
// — a shell in the outer pane ran `TMUX= tmux` or `unset TMUX; tmux` — and
// misses a tmux client exec'd straight from the outer server with $TMUX
// removed (nothing left in /proc remembers it) and systems without /proc:
// there the count stays at what was found, and HERDR_PI_TMUX_LEVELS (read
// by package notify) overrides it.
func (p Probe) Levels(ctx context.Context, getenv func(string) string) []Level {
	lvl, ok := FromEnv(getenv)
	if !ok {
		return nil
	}
	levels := []Level{lvl}
	for len(levels) < maxLevels {
		next, ok := p.outer(ctx, lvl)
		if !ok || containsSocket(levels, next.Socket) {
			break
		}
		levels = append(levels, next)
		lvl = next
	}
	return levels
}

func containsSocket(levels []Level, socket string) bool {
	for _, l := range levels {
		if l.Socket == socket {
			return true
		}
	}
	return false
}

// outer finds the tmux server that the client of lvl runs inside.
func (p Probe) outer(ctx context.Context, lvl Level) (Level, bool) {
	args := []string{"display-message", "-p"}
	if lvl.Pane != "" {
		args = append(args, "-t", lvl.Pane)
	}
	out, err := p.Run.Run(ctx, lvl.Socket, append(args, "#{client_pid}")...)
	if err != nil {
		return Level{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 1 {
		return Level{}, false // no client attached
	}
	proc := p.Proc
	if proc == "" {
		proc = "/proc"
	}
	for hop := 0; hop < 16 && pid > 1; hop++ {
		env := readEnviron(filepath.Join(proc, strconv.Itoa(pid), "environ"))
		if next, ok := FromEnv(func(k string) string { return env[k] }); ok && next.Socket != lvl.Socket {
			return next, true
		}
		pid = parentPID(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	}
	return Level{}, false
}

func readEnviron(path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			env[string(k)] = string(v)
		}
	}
	return env
}

// parentPID reads the ppid from /proc/<pid>/stat; the command name in
// parentheses may hold spaces, so fields are counted after the last ')'.
func parentPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// ErrNoPassthrough means the tmux server has no allow-passthrough option:
// it is older than 3.3 (notifications-and-sentinel.md §26). The option came
// to turn off what had always passed (its default is off), so such a tmux
// lets passthrough sequences out of a pane on show, as "on" does.
var ErrNoPassthrough = errors.New("this tmux is older than 3.3 and has no allow-passthrough option")

// Passthrough returns the effective allow-passthrough value ("on", "off" or
// "all") of the pane lvl names, inherited values included.
func (p Probe) Passthrough(ctx context.Context, lvl Level) (string, error) {
	args := []string{"show-options", "-A", "-p", "-v"}
	if lvl.Pane != "" {
		args = append(args, "-t", lvl.Pane)
	}
	out, err := p.Run.Run(ctx, lvl.Socket, append(args, "allow-passthrough")...)
	if err != nil {
		if strings.Contains(err.Error(), "invalid option") || strings.Contains(err.Error(), "unknown option") {
			return "", ErrNoPassthrough
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// OnShow reports whether the pane lvl names is on show in an attached
// client: its window is its session's current one, the session has a
// client, and no other pane of the window is zoomed over it. tmux passes a
// passthrough sequence only from such a pane unless allow-passthrough is
// "all" (tmux 3.4+).
func (p Probe) OnShow(ctx context.Context, lvl Level) (bool, error) {
	args := []string{"display-message", "-p"}
	if lvl.Pane != "" {
		args = append(args, "-t", lvl.Pane)
	}
	out, err := p.Run.Run(ctx, lvl.Socket, append(args, "#{session_attached} #{window_active} #{window_zoomed_flag} #{pane_active}")...)
	if err != nil {
		return false, err
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		return false, fmt.Errorf("tmux display-message: unexpected answer %q", out)
	}
	attached, _ := strconv.Atoi(f[0])
	return attached > 0 && f[1] == "1" && (f[2] == "0" || f[3] == "1"), nil
}

// OuterTermProgram is TERM_PROGRAM as the terminal outside the server of lvl
// set it: tmux keeps the environment it was started with as its global
// environment and gives panes TERM_PROGRAM=tmux instead. Empty when the
// server does not know it.
func (p Probe) OuterTermProgram(ctx context.Context, lvl Level) string {
	out, err := p.Run.Run(ctx, lvl.Socket, "show-environment", "-g", "TERM_PROGRAM")
	if err != nil {
		return ""
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "TERM_PROGRAM=")
	if !ok {
		return "" // "-TERM_PROGRAM": removed from the environment
	}
	return v
}
