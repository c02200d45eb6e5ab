package commands

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// A program that is there but whose loader is not fails to start with
// ENOENT, like a missing file; the error names the loader instead.
func TestExplainStartNamesTheMissingLoaderOrInterpreter(t *testing.T) {
	dir := t.TempDir()
	elfbad := filepath.Join(dir, "elfbad")
	orig, err := os.ReadFile("/bin/true")
	if err != nil {
		testenv.Missing(t, "/bin/true (an ELF binary to copy)", "install coreutils")
	}
	const loader = "/lib64/ld-linux-x86-64.so.2"
	i := bytes.Index(orig, []byte(loader+"\x00"))
	if i < 0 {
		testenv.Missing(t, "a /bin/true that loads "+loader, "run on x86-64 glibc Linux, where the test's loader path is known")
	}
	copy(orig[i:], "/lib64/ld-nope-x86-64.so.2\x00")
	script := filepath.Join(dir, "hp-script")
	for name, data := range map[string][]byte{elfbad: orig, script: []byte("#!  relative-interp  -x\necho hi\n")} {
		if err := os.WriteFile(name, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ argv0, want string }{
		{"./elfbad", "its dynamic loader /lib64/ld-nope-x86-64.so.2 does not exist"},
		{"hp-script", "its #! line names the interpreter relative-interp, which does not exist"},
	} {
		// The same failure the session leader reports: a real exec's ENOENT.
		cmd := exec.Command(filepath.Join(dir, tc.argv0))
		cmd.Dir = dir
		execErr := cmd.Start()
		if execErr == nil {
			cmd.Wait()
			t.Fatalf("%s started", tc.argv0)
		}
		start := &pty.StartError{Command: tc.argv0, Code: 127, Reason: "cannot execute: " + execErr.Error(), Err: execErr}
		got := explainStart(start, tc.argv0, []string{"PATH=" + dir}, dir)
		var se *pty.StartError
		if !errors.As(got, &se) || se.Code != 127 || !strings.HasPrefix(se.Error(), tc.argv0+": "+tc.want) {
			t.Errorf("%s: %v, want 127 and %q", tc.argv0, got, tc.want)
		}
	}
	// A program that is missing itself keeps its own error.
	missing := &pty.StartError{Command: "./gone", Code: 127, Reason: "no such file", Err: os.ErrNotExist}
	if got := explainStart(missing, "./gone", nil, dir); got != error(missing) {
		t.Errorf("a missing program: %v", got)
	}
}

// Pi missing from PATH says how to get it (as doctor does); any other
// missing command keeps the general "install it".
func TestAMissingPiSaysHowToInstallIt(t *testing.T) {
	env := []string{"PATH=" + t.TempDir()}
	for argv0, want := range map[string]string{
		"pi":     "; install Pi with 'npm install -g @earendil-works/pi-coding-agent'",
		"claude": "; install it or pass its full path",
	} {
		_, err := pty.Resolve(argv0, env)
		got := explainStart(err, argv0, env, "/")
		var se *pty.StartError
		if !errors.As(got, &se) || se.Code != 127 || !strings.Contains(se.Reason, want) || !strings.Contains(se.Reason, "command not found in "+env[0]) {
			t.Errorf("%s: %v, want 127 and %q", argv0, got, want)
		}
	}
}
