package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Flag validation at its edges: each mistake exits 2 with a first line
// that names the flag, and the largest values allowed still run. A check
// that let one of these through would start work on input the person did
// not mean (a 1001-column screen, a wait nobody can stop).
func TestUsageEdges(t *testing.T) {
	env := newCmdEnv(t).env
	// The largest size draws a screen: an empty input would be refused.
	screen := filepath.Join(t.TempDir(), "screen.raw")
	if err := os.WriteFile(screen, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string // stderr's first line starts with it; "" is no stderr
	}{
		{[]string{"waiting", "start", "--source", "s"}, 2, "herdr-pi waiting start: --id is required"},
		{[]string{"waiting", "stop", "--id", "1"}, 2, "herdr-pi waiting stop: --source is required"},
		{[]string{"detect", "--raw", "--size", "10x1001", "-"}, 2, `herdr-pi detect: --size "10x1001": want ROWSxCOLS`},
		{[]string{"detect", "--raw", "--size", "1001x10", "-"}, 2, `herdr-pi detect: --size "1001x10": want ROWSxCOLS`},
		// A size of the right form but too big says the bound, not only
		// the form it already has.
		{[]string{"detect", "--raw", "--size", "2000x80", "-"}, 2, `herdr-pi detect: --size "2000x80": want ROWSxCOLS, each from 1 to 1000, e.g. 40x120`},
		{[]string{"detect", "--raw", "--size", "0x10", "-"}, 2, `herdr-pi detect: --size "0x10": want ROWSxCOLS`},
		{[]string{"detect", "--raw", "--size", "10x0", "-"}, 2, `herdr-pi detect: --size "10x0": want ROWSxCOLS`},
		{[]string{"detect", "--raw", "--size", "40", "-"}, 2, `herdr-pi detect: --size "40": want ROWSxCOLS`},
		{[]string{"detect", "--raw", "--size", "1000x1000", screen}, 0, ""},
		{[]string{"detect", "--agent", "pi", "--manifest", "mine.toml", "-"}, 2, "herdr-pi detect: use --agent or --manifest, not both"},
		{[]string{"detect", "--manifest=", "-"}, 2, "herdr-pi detect: --manifest is empty"},
		{[]string{"wrap", "--agent=", "true"}, 2, "herdr-pi wrap: --agent is empty"},
		{[]string{"wrap", "--label=", "true"}, 2, `herdr-pi wrap: --label "" shows as nothing`},
		{[]string{"wrap", "--label", "\x1b\u202e\u200b ", "true"}, 2, `herdr-pi wrap: --label "\x1b\u202e\u200b " shows as nothing`},
	} {
		code, _, errOut := run(t, env, tc.args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != tc.code || (tc.says == "") != (errOut == "") || !strings.HasPrefix(first, tc.says) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.says)
		}
	}
}

// Every error a command ends with is printed through tell, which cleans
// it: a file name is quoted as it is (not %q), so a name holding an escape
// sequence would otherwise reach the terminal of whoever ran detect.
func TestErrorsNamingAHostileFileAreClean(t *testing.T) {
	env := newCmdEnv(t).env
	name := filepath.Join(t.TempDir(), "screen\x1b]0;owned\x07\u202e.txt")
	code, _, errOut := run(t, env, "detect", name)
	if code != 1 || !strings.Contains(errOut, "no such file") || strings.ContainsAny(errOut, "\x1b\x07\u202e") {
		t.Errorf("exit %d, stderr %q; want 1, the reason, no control characters", code, errOut)
	}
}

// A config.toml with a mistake is said by every command that reads it in
// the same words: the file and line of each mistake, and the way out —
// doctor checks the file, the docs list every key — while the command
// runs on with the defaults.
func TestConfigProblemsSayTheFileTheLineAndTheFix(t *testing.T) {
	e := newCmdEnv(t)
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, []byte("[notify]\nchanel = \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(e.env, "HERDR_PI_CONFIG="+file)
	for _, c := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"detect", "-"}, "herdr-pi detect"},
		{[]string{"notify", "--title", "t", "--sound", "none"}, "herdr-pi notify"},
		{[]string{"wrap", "true"}, "herdr-pi"},
	} {
		var out, errb bytes.Buffer
		Main(context.Background(), append([]string{"herdr-pi"}, c.args...), IO{In: strings.NewReader("x\n"), Out: &out, Err: &errb, Env: env})
		want := c.prefix + ": config problems, running with the defaults until they are fixed (herdr-pi doctor config checks the file; " +
			"docs/configuration.md lists every key):\n  " + file + `:2: unknown key "chanel" in [notify]; did you mean "channel"?` + "\n"
		if !strings.Contains(errb.String(), want) {
			t.Errorf("%q: stderr %q\nwant it to hold %q", c.args, errb.String(), want)
		}
	}
}
