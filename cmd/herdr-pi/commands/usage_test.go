package commands

import (
	"strings"
	"testing"
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
