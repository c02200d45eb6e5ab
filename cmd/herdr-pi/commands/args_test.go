package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
)

// People put flags after the arguments ("herdr-pi detect screen.txt
// --json"): every command that takes arguments reads them there too, a
// value flag with its value as the next word, and "--" ends the flags,
// also when it comes before every argument.
func TestFlagsMayFollowArguments(t *testing.T) {
	dir := t.TempDir()
	screen := filepath.Join(dir, "screen.txt")
	if err := os.WriteFile(screen, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := doctortest.New(t).Healthy()
	env := append(w.Env(), "HERDR_PI_LOG=off")
	for _, tc := range []struct {
		args []string
		code int
		// out is a piece of stdout; json, when set, is a key stdout's JSON
		// object has.
		out, json, stderr string
	}{
		{[]string{"detect", screen, "--json"}, 0, "", "state", ""},
		{[]string{"detect", "-", "--json"}, 0, "", "state", ""},
		{[]string{"detect", screen, "--agent", "pi", "--size", "10x20", "--raw"}, 0, "manifest: pi (", "", ""},
		{[]string{"detect", screen, "--size=10x20", "--raw", "--json"}, 0, "", "state", ""},
		{[]string{"detect", screen, "--agent"}, 2, "", "", "herdr-pi detect: --agent needs a value"},
		{[]string{"detect", screen, "--", "--json"}, 2, "", "", "one input at most (got 2: " + screen + " --json)"},
		{[]string{"detect", screen, "--colour"}, 2, "", "", "herdr-pi detect: unknown flag --colour"},
		{[]string{"doctor", "runtime", "--json"}, 0, "", "checks", ""},
		{[]string{"doctor", "runtime", "--help"}, 0, "herdr-pi doctor", "", ""},
		{[]string{"detect", screen, "-h"}, 0, "herdr-pi detect", "", ""},
		{[]string{"detect", screen, "--", "-h"}, 2, "", "", "one input at most (got 2: " + screen + " -h)"},
		{[]string{"status", "x", "--json"}, 2, "", "", `herdr-pi status: unexpected argument "x"`},
		// "--" before every argument: Go's flag package takes it away
		// before withArgs sees the words, which still end the flags.
		{[]string{"status", "--", "--json"}, 2, "", "", `herdr-pi status: unexpected argument "--json"`},
		{[]string{"detect", "--", "--colour"}, 1, "", "", "herdr-pi detect: --colour: no such file"},
		{[]string{"detect", "--json", "--", "-h"}, 1, "", "", "herdr-pi detect: -h: no such file"},
		{[]string{"detect", "--agent", "--", screen}, 2, "", "", `--agent: agent "--" is not a valid agent id`},
		{[]string{"completion", "bash", "--help"}, 0, "herdr-pi completion", "", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), append([]string{"herdr-pi"}, tc.args...), IO{In: strings.NewReader("screen\n"), Out: &out, Err: &errb, Env: env, Dir: dir})
			if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("exit %d, want %d\nstdout %q (want %q)\nstderr %q (want %q)", code, tc.code, out.String(), tc.out, errb.String(), tc.stderr)
			}
			if tc.json != "" {
				var m map[string]any
				if err := json.Unmarshal(out.Bytes(), &m); err != nil || m[tc.json] == nil {
					t.Fatalf("stdout is not a JSON object with %q (%v):\n%s", tc.json, err, out.String())
				}
			}
		})
	}
}
