package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/settings"
)

// programResult is what one program run by doctor did.
type programResult struct {
	// Output is stdout and stderr together, cut at maxProgramOutput.
	Output   string
	ExitCode int
	TimedOut bool
	// Err is set when it could not start, timed out or failed.
	Err error
}

// maxProgramOutput keeps a runaway program from filling doctor's memory.
const maxProgramOutput = 64 << 10

// runProgram runs argv with env and no stdin, and never for longer than
// timeout: on the deadline the whole process group is killed, and a
// grandchild holding the output pipe cannot keep doctor waiting either.
func runProgram(ctx context.Context, timeout time.Duration, env []string, dir string, argv ...string) programResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	out := &cappedBuffer{max: maxProgramOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = 500 * time.Millisecond
	err := cmd.Run()
	r := programResult{Output: out.String(), ExitCode: cmd.ProcessState.ExitCode(), Err: err}
	if ctx.Err() != nil && !errors.Is(err, exec.ErrNotFound) {
		r.TimedOut = true
		r.Err = fmt.Errorf("no answer within %v", timeout)
	}
	return r
}

type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// programEnv is the environment for the programs doctor runs: the one it
// was given, kept offline (Pi must not look for updates or phone home) and
// without the way to a wrapper's control socket, so nothing doctor starts
// can talk to a running wrapper.
func programEnv(env settings.Env) []string {
	out := make([]string, 0, len(env)+2)
	for k, v := range env {
		switch k {
		case control.EnvSocket, control.EnvToken, "PI_OFFLINE", "PI_SKIP_VERSION_CHECK":
			continue
		}
		out = append(out, k+"="+v)
	}
	return append(out, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1")
}

// firstLine is the first non-blank line of s, for a one-line detail.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return osc.CleanLabel(l)
		}
	}
	return ""
}
