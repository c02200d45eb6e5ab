package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
)

// A single-valued flag given twice is a mistake — which one was meant? —
// not the last one silently: a usage error naming both, exit 2, and the
// failure object with --json. Before, "wrap --label a --label b" ran with
// the label b and said nothing.
func TestARepeatedFlagIsAUsageMistake(t *testing.T) {
	e := newCmdEnv(t)
	screen := filepath.Join(t.TempDir(), "screen.txt")
	if err := os.WriteFile(screen, []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("z", 100_000)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"wrap", "--label", "a", "--label", "b", "true"}, `herdr-pi wrap: --label given twice ("a" and "b"): give it once`},
		{[]string{"wrap", "--agent=pi", "-agent", "claude", "true"}, `herdr-pi wrap: --agent given twice ("pi" and "claude"): give it once`},
		{[]string{"notify", "--title", "a", "--body", "x", "--title", "b"}, `herdr-pi notify: --title given twice ("a" and "b"): give it once`},
		{[]string{"notify", "--title", "t", "--sound", "done", "--sound", "none"}, `herdr-pi notify: --sound given twice ("done" and "none"): give it once`},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--label", "a", "--label", "b"}, `herdr-pi waiting start: --label given twice ("a" and "b"): give it once`},
		{[]string{"waiting", "stop", "--source", "s", "--source", "s", "--id", "i"}, `herdr-pi waiting stop: --source given twice ("s" and "s"): give it once`},
		{[]string{"waiting", "start", "--source", "s", "--id", "i", "--pid", "1", "--pid", "2"}, `herdr-pi waiting start: --pid given twice ("1" and "2"): give it once`},
		// Among the arguments, where withArgs reads the flags.
		{[]string{"detect", screen, "--title", "a", "--title", "b"}, `herdr-pi detect: --title given twice ("a" and "b"): give it once`},
		{[]string{"detect", "--title", "a", screen, "--title=b"}, `herdr-pi detect: --title given twice ("a" and "b"): give it once`},
		// A flag with a default: the default is not a first value.
		{[]string{"detect", "--raw", "--size", "10x10", "--size", "20x20", screen}, `herdr-pi detect: --size given twice ("10x10" and "20x20"): give it once`},
		{[]string{"wrap", "--label", huge, "--label", "b", "true"}, `herdr-pi wrap: --label given twice ("zzz`},
	} {
		code, out, errOut := run(t, e.env, c.args...)
		help := strings.Join(c.args[:1+strings.Count(c.want, "waiting")], " ")
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, c.want) || !strings.HasSuffix(errOut, "\nRun 'herdr-pi "+help+" --help' for usage.\n") || len(errOut) > 1000 {
			t.Errorf("%.60q: exit %d, stdout %q, stderr\n%.400s\nwant exit 2 and\n%s", c.args, code, out, errOut, c.want)
		}
	}
	// Given once each, they run as before.
	if code, out, errOut := run(t, e.env, "detect", "--title", "a", screen, "--progress", "x"); code != exitOK || out == "" {
		t.Errorf("detect with each flag once: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := run(t, e.env, "wrap", "--label", "a", "--agent", "pi", "true"); code == exitUsage {
		t.Errorf("wrap with each flag once: exit %d, %q", code, errOut)
	}
	// With --json, the failure object says it on stdout.
	for _, args := range [][]string{
		{"detect", "--json", "--agent", "pi", "--agent", "claude", screen},
		{"detect", screen, "--json", "--manifest", "a", "--manifest", "b"},
	} {
		code, out, errOut := run(t, e.env, args...)
		validate(t, compileSchema(t, "detect"), out)
		var got struct {
			Format string
			Error  struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitUsage || got.Format != render.DetectFormat || got.Error.Code != "usage" ||
			!strings.Contains(got.Error.Message, "given twice") || !strings.Contains(errOut, got.Error.Message) {
			t.Errorf("%q: exit %d, %v, %+v, stderr %q", args, code, err, got, errOut)
		}
	}
}
