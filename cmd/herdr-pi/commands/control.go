package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/internal/procstat"
	"github.com/herdr-pi/herdr-pi/settings"
)

// howToStart is the way out every "no wrapper" error offers.
const howToStart = "start the agent under herdr-pi in this pane, e.g. 'herdr-pi wrap pi'"

// dialWrapper connects to the wrapper serving this process: the one whose
// child we are (its environment names the socket), else the one registered
// for this Herdr pane (pane hooks run outside the child). Its errors are
// *wrapperError.
func dialWrapper(ctx context.Context, f *Factory) (*control.Client, error) {
	env := f.IO.env()
	ep, ok := control.EndpointFromEnv(env.Get)
	where := "the wrapper named by " + control.EnvSocket
	// ended names it once it has exited: by its socket when only the
	// environment named it (no other clue to which run it was).
	ended := fmt.Sprintf("the herdr-pi wrapper named by %s (%s)", control.EnvSocket, render.Clean(ep.Socket))
	if !ok {
		if err := controlOff(env.Get); err != nil {
			return nil, err
		}
		h, inHerdr := settings.HerdrEnv(env)
		if !inHerdr {
			if err := tokenLost(env.Get); err != nil {
				return nil, err
			}
			return nil, wrapperErrorf(noWrapper, "%w: not inside a wrapped agent (%s) nor a Herdr pane (missing %s); %s",
				control.ErrNoWrapper, missingControl(env.Get), strings.Join(settings.MissingHerdr(env), ", "), howToStart)
		}
		reg := control.PaneRegistry(f.Paths().RuntimeBase)
		var err error
		ep, err = reg.Lookup(control.PaneKey(h.SocketPath, h.PaneID))
		switch {
		case errors.Is(err, control.ErrStale):
			return nil, wrapperErrorf(noWrapper, "the herdr-pi wrapper registered for Herdr pane %s has exited; %s", render.Clean(h.PaneID), howToStart)
		case errors.Is(err, control.ErrNoWrapper):
			if err := tokenLost(env.Get); err != nil {
				return nil, err
			}
			if full := roomless(f.Paths().RuntimeBase); full != "" {
				// A wrapper here could not have registered: that is
				// the likelier cause than another XDG_RUNTIME_DIR.
				return nil, wrapperErrorf(noWrapper, "no herdr-pi wrapper is registered for Herdr pane %s in %s, and none can be: %s, "+
					"so a wrapper started in this pane runs without its control socket ('herdr-pi doctor runtime' says what to do); "+
					"once it is fixed, %s", render.Clean(h.PaneID), render.Clean(reg.Dir), render.Clean(full), howToStart)
			}
			return nil, wrapperErrorf(noWrapper, "no herdr-pi wrapper is registered for Herdr pane %s in %s (%s): "+
				"a wrapper started with another XDG_RUNTIME_DIR (or, without one, another TMPDIR) registers under that one, so run this with the wrapper's "+
				"XDG_RUNTIME_DIR (or TMPDIR), or pass on %s and %s from the agent's environment; if none runs, %s",
				render.Clean(h.PaneID), render.Clean(reg.Dir), runtimeFrom(env, reg.Dir), control.EnvSocket, control.EnvToken, howToStart)
		case err != nil:
			return nil, wrapperErrorf(unreachable, "cannot read the wrapper registry: %w", err)
		}
		where = fmt.Sprintf("the wrapper of Herdr pane %s (pid %d)", render.Clean(h.PaneID), ep.PID)
		ended = "the herdr-pi " + strings.TrimPrefix(where, "the ")
	}
	pid := ep.PID
	if rd, ok := control.ReadRunDir(filepath.Dir(ep.Socket)); ok && pid == 0 {
		pid = rd.PID // named by the environment: its run directory says whose
	}
	if stoppedProcess(pid) {
		// Stopped with Ctrl-Z, it holds its socket and answers nothing
		// until it runs again; "start the agent" would put a second
		// wrapper in the pane.
		return nil, stoppedError(where, pid)
	}
	c, err := control.Dial(ctx, ep.Socket, ep.Token)
	if err != nil {
		if err := runDirRemoved(ep.Socket, where); err != nil {
			return nil, err
		}
	}
	if err != nil && control.RunDirEnded(filepath.Dir(ep.Socket)) {
		// Gone, not out of reach: a process the wrapper started outlived
		// it (a background job keeps HERDR_PI_CONTROL), or the pane's
		// wrapper exited since the registry was read. A script must not
		// wait for it to answer again.
		way := howToStart
		if ok {
			if live := paneWrapper(f, env); live != "" {
				way = live
			}
		}
		return nil, wrapperErrorf(noWrapper, "%s has exited; %s", ended, way)
	}
	if errors.Is(err, control.ErrUnauthorized) {
		return nil, refusedError(where, pid, ok)
	}
	if errors.Is(err, control.ErrSkew) {
		// Reached, and of another build: "start the agent" would be
		// the wrong way out; the error names the right one.
		return nil, wrapperErrorf(unreachable, "%s: %v", where, err)
	}
	if err != nil && stoppedProcess(pid) {
		// Stopped while we waited for its answer.
		return nil, stoppedError(where, pid)
	}
	if err != nil && errors.Is(err, control.ErrNoAnswer) && (pid <= 0 || control.ProcessAlive(pid)) {
		// It runs and holds its socket: "start the agent" would put a
		// second wrapper in the pane. One named by HERDR_PI_CONTROL has no
		// pid known, but what took the connection runs.
		return nil, busyError(where, pid, ep.Socket)
	}
	if err != nil {
		return nil, wrapperErrorf(unreachable, "cannot reach %s at %s: %v; %s", where, ep.Socket, err, howToStart)
	}
	return c, nil
}

// paneWrapper is, for a process whose environment names a wrapper that
// has exited (a job an earlier agent run left behind), the way to the
// wrapper that runs in its Herdr pane now, or "" when none does. "Start
// the agent under herdr-pi in this pane" would put a second one there.
func paneWrapper(f *Factory, env settings.Env) string {
	h, inHerdr := settings.HerdrEnv(env)
	if !inHerdr {
		return ""
	}
	ep, err := control.PaneRegistry(f.Paths().RuntimeBase).Lookup(control.PaneKey(h.SocketPath, h.PaneID))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("the wrapper of Herdr pane %s now is pid %d: unset %s and %s to reach it through the pane",
		render.Clean(h.PaneID), ep.PID, control.EnvSocket, control.EnvToken)
}

// refusedError is the error for a wrapper that runs and refused the token
// it was asked with. "Start the agent under herdr-pi" would be the wrong
// way out: it would put a second wrapper in the pane. fromEnv says the
// socket and token came from the environment (else the pane registry).
func refusedError(where string, pid int, fromEnv bool) error {
	who := where
	if pid > 0 && !strings.Contains(where, "(pid ") {
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	if fromEnv {
		// The two variables came from different places: the token from
		// another agent, an earlier run or a saved file.
		return wrapperErrorf(refused, "%s runs but refused our token: %s is not that wrapper's (taken from another agent or an earlier run?); "+
			"take %s and %s from the same agent's environment, or, in its Herdr pane, unset both to reach the pane's wrapper",
			who, control.EnvToken, control.EnvSocket, control.EnvToken)
	}
	return wrapperErrorf(refused, "%s runs but refused the token its pane registry entry holds, so the entry is not that wrapper's: "+
		"quit the agent and start it again under herdr-pi wrap, which registers it anew", who)
}

// runDirRemoved is the error for a wrapper that still runs while its run
// directory, and the control socket in it, are gone (removed from under
// it), or nil. "Has exited" would be false, and would have the person
// start a second wrapper in the pane.
func runDirRemoved(socket, where string) error {
	pid, removed := control.RunDirRemoved(filepath.Dir(socket))
	if !removed {
		return nil
	}
	who := "the herdr-pi " + strings.TrimPrefix(where, "the ")
	if !strings.Contains(where, "(pid ") {
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	return wrapperErrorf(unreachable, "%s still runs, but its run directory %s is gone, and its control socket with it: something removed it "+
		"from under the wrapper (a cleaner of /tmp, a logout that emptied XDG_RUNTIME_DIR), so nothing can reach that wrapper: "+
		"quit the agent and start it again under herdr-pi wrap",
		who, render.Clean(filepath.Dir(socket)))
}

// stoppedProcess says whether pid is stopped by a signal (Ctrl-Z, SIGSTOP)
// by its state in /proc; false for 0, a process that is gone, or when
// that cannot be read.
func stoppedProcess(pid int) bool {
	if pid <= 0 {
		return false
	}
	st, err := procstat.Read(pid)
	return err == nil && (st.State == 'T' || st.State == 't')
}

// stoppedError is the error for a wrapper that is stopped, named with its
// pid (where already has it for one found in the pane registry), and the
// way to resume it.
func stoppedError(where string, pid int) error {
	who := "the herdr-pi " + strings.TrimPrefix(where, "the ")
	if !strings.Contains(where, "(pid ") {
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	return wrapperErrorf(unreachable, "%s is stopped (Ctrl-Z?) and answers nothing until it runs again: "+
		"resume it with fg in the shell of its pane (kill -CONT %d only when no shell started it: a shell's stopped job stops again)", who, pid)
}

// busyError is the error for a wrapper that runs and took the connection
// but did not answer in time: busy, or its control socket crowded by
// other clients. Asking again is the way on; a new wrapper is not.
func busyError(where string, pid int, socket string) error {
	who := "the herdr-pi " + strings.TrimPrefix(where, "the ")
	runs := " runs but"
	switch {
	case pid <= 0:
		runs = "" // named by HERDR_PI_CONTROL: its pid is not known
	case !strings.Contains(where, "(pid "):
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	return wrapperErrorf(unreachable, "%s%s did not answer in time at %s: it may be busy, or other clients crowd its control socket; "+
		"ask again in a moment, and if it never answers, its log says why (~/.local/state/herdr-pi/herdr-pi.log, see docs/troubleshooting.md)", who, runs, render.Clean(socket))
}

// roomless says why the runtime directory base (or, before it exists, its
// parent) cannot take a wrapper's files, or "": asked of the filesystem
// only (statfs), since status and waiting write nothing.
func roomless(base string) string {
	dir := base
	if _, err := os.Stat(base); err != nil {
		dir = filepath.Dir(base)
	}
	if err := control.CheckRoom(dir, false); err != nil {
		return err.Error()
	}
	return ""
}

// runtimeFrom says what put the pane registry where it is: a hook may
// run with another XDG_RUNTIME_DIR (or none) than the wrapper it looks
// for.
func runtimeFrom(env settings.Env, registry string) string {
	v := env.Get("XDG_RUNTIME_DIR")
	var why string
	switch {
	case v == "":
		why = "XDG_RUNTIME_DIR is unset"
	case !strings.HasPrefix(registry, filepath.Clean(v)+"/"):
		// settings.Resolve passes over a relative or long one.
		why = "XDG_RUNTIME_DIR=" + render.Clean(v) + " is relative or too long for a socket, so not used"
	default:
		return "from XDG_RUNTIME_DIR=" + render.Clean(v)
	}
	// Then TMPDIR chose it, when usable (settings.RuntimeFallback): a
	// hook with another TMPDIR reads another registry.
	if tmp := env.Get("TMPDIR"); tmp != "" && settings.RuntimeFallback(env) == tmp {
		why += ", so from TMPDIR=" + render.Clean(tmp)
	}
	return why
}

// tokenLost is the error for a process that a wrapper started (it names
// the wrapper's socket) but whose token was dropped on the way (sudo, env
// -i, a hook that passes on only some variables), or nil. "No wrapper is
// running" would be false: one is, and it answers only to its token —
// unless the run directory of that socket says its wrapper has exited.
func tokenLost(get func(string) string) error {
	socket := get(control.EnvSocket)
	if socket == "" || get(control.EnvToken) != "" {
		return nil
	}
	if err := runDirRemoved(socket, "the wrapper named by "+control.EnvSocket); err != nil {
		return err
	}
	if control.RunDirEnded(filepath.Dir(socket)) {
		// Unless that wrapper has exited (a job it started outlived
		// it): then no token would help.
		return wrapperErrorf(noWrapper, "the herdr-pi wrapper named by %s (%s) has exited; %s", control.EnvSocket, render.Clean(socket), howToStart)
	}
	return wrapperErrorf(noToken, "%s names the socket of a herdr-pi wrapper (%s), but %s is unset, and the wrapper answers only to its token: "+
		"keep both variables from the wrapped agent's environment (sudo, env -i or a hook's own environment can drop one)",
		control.EnvSocket, render.Clean(socket), control.EnvToken)
}

// missingControl says which of the variables a wrapper gives its child are
// absent: both travel together, and a hook that copied only one should be
// told which.
func missingControl(get func(string) string) string {
	if get(control.EnvSocket) != "" {
		return control.EnvToken + " is unset"
	}
	return control.EnvSocket + " is unset"
}

// Why a wrapper could not be asked, as `status --json` names it
// (docs/status.md).
const (
	noWrapper   = "no_wrapper"
	noControl   = "no_control"
	noToken     = "no_token"
	refused     = "refused"
	unreachable = "unreachable"
)

// wrapperError is a failure to talk to the wrapper, with its code.
type wrapperError struct {
	Code string
	err  error
}

func wrapperErrorf(code, format string, args ...any) error {
	return &wrapperError{Code: code, err: fmt.Errorf(format, args...)}
}

func (e *wrapperError) Error() string { return e.err.Error() }
func (e *wrapperError) Unwrap() error { return e.err }

// requestTimeout bounds a whole waiting/status exchange: a hook must never
// hang on a stuck wrapper.
const requestTimeout = 5 * time.Second
