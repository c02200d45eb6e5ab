package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// A usage mistake quotes what was given, but a huge argument (a variable
// holding a file, a paste gone wrong) is clipped with its length, so the
// message stays a few lines — as wrap --agent's already is.
func TestUsageErrorsClipHugeArguments(t *testing.T) {
	huge := strings.Repeat("a", 100_000)
	env := newCmdEnv(t).env
	for _, args := range [][]string{
		{huge},
		{"status", huge},
		{"doctor", huge},
		{"completion", huge},
		{"waiting", huge},
		{"help", huge},
		{"notify", "--title", "t", "--sound", huge},
		{"detect", "--size", huge},
	} {
		code, _, errOut := run(t, env, args...)
		if code != 2 || len(errOut) > 1000 || !strings.Contains(errOut, "(100000 bytes)") {
			t.Errorf("%.30q: exit %d, %d bytes of stderr: %.200q", args, code, len(errOut), errOut)
		}
	}
}

// So does wrap's start-up error, which names the command it could not
// start and then says why: the why stays in view.
func TestWrapStartErrorClipsAHugeCommand(t *testing.T) {
	huge := strings.Repeat("a", 100_000)
	var errOut bytes.Buffer
	code := exitCode(&pty.StartError{Command: huge, Code: 127, Reason: "command not found in PATH=/bin"}, &errOut)
	got := errOut.String()
	if code != 127 || len(got) > 1000 || !strings.HasSuffix(got, "(100000 bytes): command not found in PATH=/bin\n") {
		t.Errorf("exit %d, %d bytes of stderr: %.300q", code, len(got), got)
	}
	errOut.Reset()
	exitCode(&pty.StartError{Command: "pi", Code: 127, Reason: "command not found"}, &errOut)
	if got := errOut.String(); got != "herdr-pi wrap: pi: command not found\n" {
		t.Errorf("a short command: %q", got)
	}
}
