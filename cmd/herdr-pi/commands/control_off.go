package commands

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
)

// A wrapper whose control socket did not start (its runtime directory
// full, read-only, not ours) runs the agent all the same. Without a word
// to its child, status and waiting in there would look for a wrapper in
// the pane registry, find none, and blame another XDG_RUNTIME_DIR; so the
// wrapper puts its pid and the reason into control.EnvError, and they
// name that cause instead (status --json: no_control).

// maxControlError bounds the reason: it travels in the environment of
// everything the agent runs, and reaches a terminal.
const maxControlError = 300

// childControlEnv is env with the control variables of this wrapper: its
// run's socket and token, or, when startErr kept the socket from
// starting, why. Those of a wrapper around this one are dropped either
// way: they name a wrapper whose agent is not the child. So is the file
// this wrapper's opener named for it (handoff.StartedFileEnv): a wrapper
// nested in the agent must not write it.
func childControlEnv(env []string, run *control.Run, startErr error, pid int) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case control.EnvSocket, control.EnvToken, control.EnvError, handoff.StartedFileEnv:
			continue
		}
		out = append(out, kv)
	}
	if run != nil {
		return append(out, run.Env()...)
	}
	return append(out, fmt.Sprintf("%s=%d: %s", control.EnvError, pid, shortReason(startErr.Error())))
}

// shortReason is a reason fit for the environment and a terminal: on one
// line, without control characters, at most maxControlError bytes.
func shortReason(s string) string {
	s = strings.TrimSpace(render.Clean(s))
	if len(s) <= maxControlError {
		return s
	}
	cut := maxControlError - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// controlOff is the error for a process whose wrapper runs without its
// control socket (control.EnvError is set), or nil. Once that wrapper has
// exited (a job it started outlived it), it is no_wrapper, as for
// HERDR_PI_CONTROL.
func controlOff(get func(string) string) error {
	v := get(control.EnvError)
	if v == "" {
		return nil
	}
	pid, reason := 0, v
	if p, rest, ok := strings.Cut(v, ": "); ok {
		if n, err := strconv.Atoi(p); err == nil && n > 0 {
			pid, reason = n, rest
		}
	}
	reason = shortReason(reason)
	if reason == "" {
		reason = "no reason given"
	}
	who := "the herdr-pi wrapper of this pane"
	if pid > 0 {
		if !control.ProcessAlive(pid) {
			return wrapperErrorf(noWrapper, "the herdr-pi wrapper (pid %d) that ran without its control socket has exited; %s", pid, howToStart)
		}
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	return wrapperErrorf(noControl, "%s runs without its control socket: %s; "+
		"'herdr-pi doctor runtime' names the directory and the way out; once it is fixed, start the agent again under herdr-pi (this wrapper does not open the socket later)",
		who, reason)
}
