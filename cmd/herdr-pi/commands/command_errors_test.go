package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A run-time error reads as a usage error does, "herdr-pi <command>:
// <message>", with the command named once: the runner adds it, the
// messages do not repeat it ("herdr-pi: status: …" before).
func TestRunTimeErrorsNameTheirCommandOnce(t *testing.T) {
	e := newCmdEnv(t)
	missing := filepath.Join(t.TempDir(), "screen.txt")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "herdr-pi status: no herdr-pi wrapper is running in this pane: "},
		{[]string{"waiting", "start", "--source", "s", "--id", "i"}, "herdr-pi waiting start: no herdr-pi wrapper is running in this pane: "},
		{[]string{"waiting", "stop", "--source", "s", "--id", "i"}, "herdr-pi waiting stop: no herdr-pi wrapper is running in this pane: "},
		{[]string{"close", "3f0c"}, `herdr-pi close: no workflow run "3f0c": no runs under `},
		{[]string{"open", "3f0c", "api"}, `herdr-pi open: no workflow run "3f0c": no runs under `},
		{[]string{"detect", missing}, "herdr-pi detect: " + missing + ": no such file: give the file that holds the screen, or pipe the screen in (--agent, not FILE, names the agent)\n"},
	} {
		code, _, errOut := run(t, e.env, c.args...)
		if code != exitError || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr\n%s\nwant exit 1 and a line starting\n%s", c.args, code, errOut, c.want)
		}
	}
}

// The JSON failure objects name their format, and so their command: the
// message is the words after "herdr-pi <command>: ", as status's always was.
func TestJSONFailureMessagesDoNotRepeatTheCommand(t *testing.T) {
	e := newCmdEnv(t)
	for _, args := range [][]string{
		{"close", "3f0c", "--json"},
		{"open", "3f0c", "api", "--json"},
		{"detect", "--json", "--agent", "nosuch", "-"},
	} {
		code, out, errOut := run(t, e.env, args...)
		var got struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitError || got.Error.Message == "" {
			t.Fatalf("%q: exit %d, %v, stdout %q", args, code, err, out)
		}
		if strings.HasPrefix(got.Error.Message, args[0]+":") || !strings.Contains(errOut, "herdr-pi "+args[0]+": "+got.Error.Message) {
			t.Errorf("%q: message %q, stderr %q; want the message without %q, after the command on stderr", args, got.Error.Message, errOut, args[0]+":")
		}
	}
}

// The runner names the command that ran, at any depth, and only once when
// an error passes through two commands (help running another).
func TestNamedErrorsPrintTheCommandPath(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&commandError{cmd: "waiting start", err: errors.New("the wrapper refused")}, "herdr-pi waiting start: the wrapper refused\n"},
		{&commandError{cmd: "help", err: &commandError{cmd: "status", err: errors.New("x")}}, "herdr-pi help: x\n"},
		{&commandError{cmd: "open", err: &usageError{cmd: "open", err: errors.New("name the attempt")}}, "herdr-pi open: name the attempt\nRun 'herdr-pi open --help' for usage.\n"},
		{&commandError{cmd: "doctor", err: silentExit(exitInterrupted)}, ""},
		{errors.New("help: write /dev/full"), "herdr-pi: help: write /dev/full\n"},
	} {
		var errOut bytes.Buffer
		exitCode(c.err, &errOut)
		if errOut.String() != c.want {
			t.Errorf("%v: stderr %q, want %q", c.err, errOut.String(), c.want)
		}
	}
}
