package commands

import (
	"bytes"
	"context"
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
