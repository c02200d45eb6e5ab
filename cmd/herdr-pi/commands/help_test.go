package commands

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every command and subcommand explains itself with at least one example.
func TestEveryHelpHasAnExample(t *testing.T) {
	paths := commandPaths()
	if len(paths) < 9 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		var out, errOut bytes.Buffer
		args := append(append([]string{"herdr-pi"}, p...), "--help")
		code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		help := out.String() + errOut.String()
		if code != 0 {
			t.Errorf("%v: exit %d\n%s", args, code, help)
			continue
		}
		if !strings.Contains(help, "Example") || !strings.Contains(help, "herdr-pi "+p[0]) {
			t.Errorf("%s --help has no example:\n%s", strings.Join(p, " "), help)
		}
	}
}

// failingWriter refuses every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Help and the version that cannot be written are an error, named, not a
// silent exit 0 (urfave/cli drops the write error).
func TestHelpThatCannotBeWrittenFails(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"help", "wrap"}, {"--version"}, {}} {
		var errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi"}, args...), IO{In: strings.NewReader(""), Out: failingWriter{}, Err: &errOut})
		if code != exitError || !strings.Contains(errOut.String(), "no space left on device") {
			t.Errorf("%q: exit %d, stderr %q; want %d and the write error", args, code, errOut.String(), exitError)
		}
	}
}

// No help lists "(default: false)" after a switch: a bool flag is off
// unless given. A flag with a value keeps its default (detect --size).
func TestHelpShowsNoDefaultForSwitches(t *testing.T) {
	paths := commandPaths()
	for _, p := range append(paths, nil) {
		var out bytes.Buffer
		args := append(append([]string{"herdr-pi"}, p...), "--help")
		Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &out})
		if strings.Contains(out.String(), "(default: false)") {
			t.Errorf("%s:\n%s", strings.Join(args, " "), out.String())
		}
	}
	var out bytes.Buffer
	Main(context.Background(), []string{"herdr-pi", "detect", "--help"}, IO{In: strings.NewReader(""), Out: &out, Err: &out})
	if !strings.Contains(out.String(), `(default: "24x80")`) {
		t.Errorf("detect --help lost --size's default:\n%s", out.String())
	}
}

// commandPaths is every command and subcommand, as typed after herdr-pi.
func commandPaths() [][]string {
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string{}, prefix...), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, newApp(NewFactory(IO{})).Commands)
	return paths
}

// --help anywhere among a command's flags and arguments shows that
// command's help and exits 0 — not urfave/cli's "No help topic for 'pi'"
// (exit 1), nor a usage error about the argument. A flag's value is not a
// --help, and wrap's agent command and what follows it are the agent's
// (the e2e help.txtar runs `wrap echo --help`).
func TestHelpAmongArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string // the command whose help shows
	}{
		{[]string{"wrap", "--help", "pi"}, "wrap"},
		{[]string{"wrap", "--agent", "pi", "-h", "pi", "--model", "x"}, "wrap"},
		{[]string{"detect", "--help", "foo"}, "detect"},
		{[]string{"detect", "foo", "--help"}, "detect"},
		{[]string{"completion", "--help", "bash"}, "completion"},
		{[]string{"completion", "bash", "-help"}, "completion"},
		{[]string{"status", "--help", "x"}, "status"},
		{[]string{"demo", "x", "--help"}, "demo"},
		{[]string{"waiting", "start", "--help", "x"}, "waiting start"},
		{[]string{"help", "wrap", "--help"}, "wrap"},
		{[]string{"help", "waiting", "start", "-h"}, "waiting start"},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi"}, tc.args...), IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if want := "NAME:\n   herdr-pi " + tc.name + " - "; code != 0 || errOut.Len() > 0 || !strings.HasPrefix(out.String(), want) {
			t.Errorf("%q: exit %d, stderr %q, stdout starts %q; want 0 and %q", tc.args, code, errOut.String(), firstLine(out.String()), want)
		}
	}
	// --title's value is the text "--help", not a request for help.
	var out, errOut bytes.Buffer
	home := t.TempDir()
	code := Main(context.Background(), []string{"herdr-pi", "detect", "--title", "--help", "-"},
		IO{In: strings.NewReader("x\n"), Out: &out, Err: &errOut, Env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "HERDR_PI_LOG=off"}})
	if code != 0 || !strings.HasPrefix(out.String(), "state: ") {
		t.Errorf("detect --title --help -: exit %d, %q %q; want a verdict", code, out.String(), errOut.String())
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// `herdr-pi --help <command>` is `herdr-pi help <command>`: a command name
// misspelt there is a usage mistake that lists the commands (exit 2), as
// `herdr-pi help wrp` says it — not urfave/cli's "No help topic for 'wrp'",
// exit 1, which a script reads as a failure of herdr-pi itself.
func TestHelpFlagBeforeACommandNameIsHelp(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, sayth string
	}{
		{[]string{"--help", "wrp"}, 2, "", "herdr-pi help: herdr-pi has no command \"wrp\"; did you mean \"wrap\"? (commands: wrap, open, close, waiting, notify, detect, status, doctor, demo, completion, help)\nRun 'herdr-pi --help' for usage.\n"},
		{[]string{"-h", "waiting", "strat"}, 2, "", "herdr-pi help: herdr-pi waiting has no command \"strat\"; did you mean \"start\"? (commands: start, stop)\nRun 'herdr-pi waiting --help' for usage.\n"},
		{[]string{"--help", "status"}, 0, "NAME:\n   herdr-pi status - ", ""},
		{[]string{"-help", "waiting", "start"}, 0, "NAME:\n   herdr-pi waiting start - ", ""},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi"}, tc.args...), IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != tc.code || errOut.String() != tc.sayth || !strings.HasPrefix(out.String(), tc.out) {
			t.Errorf("%q: exit %d, stderr %q, stdout starts %q; want %d, %q, %q", tc.args, code, errOut.String(), firstLine(out.String()), tc.code, tc.sayth, tc.out)
		}
	}
}

// Every command's help says how it exits, 2 for a mistake in the call
// among it, and the mistake does exit 2: a script author reads the
// statuses there, and none may be left for them to find out.
func TestEveryHelpSaysItsExitStatuses(t *testing.T) {
	usage := regexp.MustCompile(`(?i)\b2 (for|when) (a|an|the) [^.]*(mistake|unknown|usage)`)
	for _, p := range commandPaths() {
		if len(p) > 1 || p[0] == "demo-agent" {
			continue // a subcommand's statuses are its command's (waiting); demo-agent is the demo's, hidden
		}
		var out, errOut bytes.Buffer
		Main(context.Background(), []string{"herdr-pi", p[0], "--help"}, IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		help := strings.Join(strings.Fields(out.String()), " ")
		if !strings.Contains(strings.ToLower(help), "exit") || !usage.MatchString(help) {
			t.Errorf("herdr-pi %s --help does not say it exits 2 for a mistake in the call:\n%s", p[0], out.String())
		}
		errOut.Reset()
		if code := Main(context.Background(), []string{"herdr-pi", p[0], "--no-such-flag"}, IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != exitUsage {
			t.Errorf("herdr-pi %s --no-such-flag: exit %d, want %d\n%s", p[0], code, exitUsage, errOut.String())
		}
	}
}
