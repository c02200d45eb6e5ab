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

// A flag mistake names the flag as the help writes it (--bogus, -b), not
// with the one dash of Go's flag package, for every command and at every
// depth, and still exits 2 pointing at the command's help.
func TestFlagErrorsNameTheFlagAsTheHelpDoes(t *testing.T) {
	env := newCmdEnv(t).env
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--bogus"}, "herdr-pi status: unknown flag --bogus\nRun 'herdr-pi status --help' for usage.\n"},
		{[]string{"status", "-b"}, "herdr-pi status: unknown flag -b\nRun 'herdr-pi status --help' for usage.\n"},
		{[]string{"--bogus"}, "herdr-pi: unknown flag --bogus\nRun 'herdr-pi --help' for usage.\n"},
		{[]string{"help", "nosuch"}, "herdr-pi help: herdr-pi has no command \"nosuch\" (commands: wrap, open, close, waiting, notify, detect, status, doctor, demo, completion, help)\nRun 'herdr-pi --help' for usage.\n"},
		{[]string{"help", "waiting", "nosuch"}, "herdr-pi help: herdr-pi waiting has no command \"nosuch\" (commands: start, stop)\nRun 'herdr-pi waiting --help' for usage.\n"},
		{[]string{"help", "status", "nosuch"}, "herdr-pi help: herdr-pi status has no subcommands\nRun 'herdr-pi status --help' for usage.\n"},
		{[]string{"waiting", "stop", "--label", "x"}, "herdr-pi waiting stop: unknown flag --label\nRun 'herdr-pi waiting stop --help' for usage.\n"},
		{[]string{"wrap", "--bogus", "true"}, "herdr-pi wrap: unknown flag --bogus\nRun 'herdr-pi wrap --help' for usage.\n"},
		{[]string{"notify", "--title"}, "herdr-pi notify: --title needs a value\nRun 'herdr-pi notify --help' for usage.\n"},
		{[]string{"status", "---json"}, "herdr-pi status: ---json has too many dashes: write --json\nRun 'herdr-pi status --help' for usage.\n"},
		// Among a command's arguments too, where withArgs reads it.
		{[]string{"detect", "-", "---json"}, "herdr-pi detect: ---json has too many dashes: write --json\nRun 'herdr-pi detect --help' for usage.\n"},
		{[]string{"status", "--json=maybe"}, "herdr-pi status: --json takes no value (got \"maybe\"): give --json alone, or --json=false\nRun 'herdr-pi status --help' for usage.\n"},
	} {
		code, _, errOut := run(t, env, tc.args...)
		if code != exitUsage || errOut != tc.want {
			t.Errorf("%q: exit %d, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, errOut, tc.want)
		}
	}
}

// A mistyped command is the commonest mistake: the error lists the
// commands, as help's and doctor's do, and names the one meant when the
// word is a typo of it.
func TestUnknownCommandSaysWhichWereMeant(t *testing.T) {
	env := newCmdEnv(t).env
	const all = "(commands: wrap, open, close, waiting, notify, detect, status, doctor, demo, completion, help)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wrpa", "pi"}, `herdr-pi: unknown command "wrpa"; did you mean "wrap"? ` + all},
		{[]string{"dcotor"}, `herdr-pi: unknown command "dcotor"; did you mean "doctor"? ` + all},
		{[]string{"stauts", "--json"}, `herdr-pi: unknown command "stauts"; did you mean "status"? ` + all},
		{[]string{"pi"}, `herdr-pi: unknown command "pi" ` + all},
		{[]string{"bogus"}, `herdr-pi: unknown command "bogus" ` + all},
		{[]string{"help", "wrpa"}, `herdr-pi help: herdr-pi has no command "wrpa"; did you mean "wrap"? ` + all},
		{[]string{"waiting", "strat", "--source", "s", "--id", "1"}, `herdr-pi waiting: no subcommand "strat"; did you mean "start"? (start or stop)`},
		{[]string{"waiting", "begin"}, `herdr-pi waiting: no subcommand "begin" (start or stop)`},
	} {
		code, _, errOut := run(t, env, tc.args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != exitUsage || first != tc.want {
			t.Errorf("%q: exit %d, stderr\n%s\nwant exit 2 and first line\n%s", tc.args, code, errOut, tc.want)
		}
	}
}
