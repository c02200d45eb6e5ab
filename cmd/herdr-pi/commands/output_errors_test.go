package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/demo"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// devFull is /dev/full opened for writing: every write fails with ENOSPC,
// as on a full disk.
func devFull(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		testenv.Missing(t, "/dev/full", "run the tests on Linux, where the kernel provides it")
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A command's text result that cannot be written is an error, named, as
// its --json is: a script that runs `herdr-pi detect s.txt > file` on a
// full disk must not read exit 0 and an empty verdict.
func TestTextResultsThatCannotBeWrittenFail(t *testing.T) {
	full := devFull(t)
	dir := t.TempDir()
	screen := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(screen, []byte(" ⠸ Working...\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ls := newListStore(t)
	for _, c := range []struct {
		name string
		args []string
		env  []string
		cwd  string
	}{
		{"detect", []string{"detect", screen}, []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}, dir},
		{"detect --json", []string{"detect", "--json", screen}, []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "HERDR_PI_LOG=off"}, dir},
		{"close with nothing open", []string{"close", ls.IDs[1][:8]}, closeEnv(t, ls.Home), ls.Cwd},
	} {
		var errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi"}, c.args...),
			IO{In: strings.NewReader(""), Out: full, Err: &errb, Env: c.env, Dir: c.cwd})
		if code != exitError || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%s > /dev/full: exit %d, stderr %q; want %d and the write error", c.name, code, errb.String(), exitError)
		}
	}
}

// open's line saying where the fork opened, and with --wait how its pane
// ended, are its result: when they cannot be written, open fails.
func TestOpenLineThatCannotBeWrittenFails(t *testing.T) {
	for _, wait := range []bool{false, true} {
		f, _, run, _, errb := openWorld(t, "exit 0")
		f.IO.Out = devFull(t)
		opts := &openOptions{Run: run, Attempt: "api", Wait: wait, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
		err := openRun(t.Context(), f, opts)
		if err == nil || !strings.Contains(err.Error(), "no space left on device") {
			t.Errorf("open (--wait %v) > /dev/full: %v, want the write error\n%s", wait, err, errb)
		}
	}
}

// A --json result that cannot be written is said once: the failure object
// open then tries to print cannot be written either, and saying that too
// would only repeat the same write error.
func TestOpenJSONWriteErrorIsSaidOnce(t *testing.T) {
	full := devFull(t)
	ls := newListStore(t)
	for _, args := range [][]string{{"open", "--list", "--json"}, {"open", "--list", "--json", ls.IDs[1][:8]}} {
		var errb bytes.Buffer
		code := Main(context.Background(), append([]string{"herdr-pi"}, args...),
			IO{In: strings.NewReader(""), Out: full, Err: &errb, Env: openEnv(ls.Home), Dir: ls.Cwd})
		if n := strings.Count(errb.String(), "no space left on device"); code != exitError || n != 1 {
			t.Errorf("%q > /dev/full: exit %d, the write error said %d times:\n%s", args, code, n, errb.String())
		}
	}
}

// A script that asked for --json reads stdout, also when the command line
// is wrong: a flag urfave/cli cannot read stops its parsing before --json
// is known, a flag among a command's arguments is read after them, and an
// extra word is refused by the command. Every command with --json (open,
// close, status, doctor, detect, demo) prints its failure object with code
// "usage" (in the documented schema), stderr says it in words, and the
// exit status is 2. Without --json, or with it after "--" (the agent's),
// stdout stays empty.
func TestUsageMistakesWithJSONPrintTheFailureObject(t *testing.T) {
	schemas := map[string]string{openFormat: "open", handoff.ListFormat: "open", closeFormat: "open", statusFormat: "status",
		doctor.Format: "doctor", render.DetectFormat: "detect", demo.Format: "demo"}
	e := newCmdEnv(t, pane...)
	for _, c := range []struct {
		args   []string
		format string // "" for nothing on stdout
	}{
		{[]string{"open", "--bogus", "--json", "3f0c", "api"}, openFormat},
		{[]string{"open", "--json", "--bogus", "3f0c", "api"}, openFormat},
		{[]string{"open", "--list", "--json=true", "--bogus"}, handoff.ListFormat},
		{[]string{"open", "-json", "--inspect=maybe", "3f0c", "api"}, openFormat},
		{[]string{"close", "--json", "--bogus", "3f0c"}, closeFormat},
		{[]string{"status", "--json", "--bogus"}, statusFormat},
		{[]string{"status", "--json", "extra"}, statusFormat},
		// A flag among the arguments is read by withArgs, after urfave/cli.
		{[]string{"open", "3f0c", "api", "--bogus", "--json"}, openFormat},
		{[]string{"open", "--list", "3f0c", "--json", "--bogus"}, handoff.ListFormat},
		{[]string{"close", "3f0c", "--json", "--bogus"}, closeFormat},
		{[]string{"doctor", "--json", "--bogus"}, doctor.Format},
		{[]string{"doctor", "--bogus", "--json"}, doctor.Format},
		{[]string{"doctor", "--json", "plumbing"}, doctor.Format},
		{[]string{"doctor", "runtime", "--json", "--bogus"}, doctor.Format},
		{[]string{"detect", "--json", "--bogus", "s.txt"}, render.DetectFormat},
		{[]string{"detect", "s.txt", "--bogus", "--json"}, render.DetectFormat},
		{[]string{"detect", "--json", "a", "b"}, render.DetectFormat},
		{[]string{"detect", "--json", "--size", "40x120", "-"}, render.DetectFormat},
		{[]string{"detect", "--json", "--agent", "a/../x", "-"}, render.DetectFormat},
		{[]string{"demo", "--json", "--bogus"}, demo.Format},
		{[]string{"demo", "--json", "extra"}, demo.Format},
		{[]string{"demo", "extra", "--json"}, demo.Format},
		{[]string{"open", "--bogus", "3f0c", "api"}, ""},
		{[]string{"doctor", "--bogus"}, ""},
		{[]string{"detect", "a", "b"}, ""},
		{[]string{"demo", "extra"}, ""},
		{[]string{"open", "--json=false", "--bogus", "3f0c", "api"}, ""},
		{[]string{"status", "extra"}, ""},
		{[]string{"wrap", "--bogus", "--", "pi", "--json"}, ""},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			exit, out, errOut := run(t, e.env, c.args...)
			if exit != exitUsage || !strings.Contains(errOut, "Run 'herdr-pi "+c.args[0]+" --help'") {
				t.Fatalf("exit %d, stderr %q; want 2 and the words on stderr", exit, errOut)
			}
			if c.format == "" {
				if out != "" {
					t.Fatalf("stdout %q, want nothing", out)
				}
				return
			}
			validate(t, compileSchema(t, schemas[c.format]), out)
			var got struct {
				Format string
				Error  struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || got.Format != c.format || got.Error.Code != "usage" || got.Error.Message == "" {
				t.Fatalf("stdout %q: %v %+v, want format %s and code usage", out, err, got, c.format)
			}
		})
	}
}
