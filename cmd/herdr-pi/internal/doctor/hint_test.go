package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
)

// runHint runs a command a fix offers, as a person pasting it would, in
// a directory of its own, and fails the test when it fails or runs what
// a path in it holds.
func runHint(t *testing.T, hint string) {
	t.Helper()
	c := exec.Command("sh", "-c", hint)
	c.Dir = t.TempDir()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the fix's command %q failed: %v\n%s", hint, err, out)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "INJECTED")); err == nil {
		t.Fatalf("the fix's command %q ran what a path in it holds", hint)
	}
}

// strange is a directory name with a space and a shell's metacharacters.
const strange = "run dir; $(touch INJECTED) #1"

// The commands the runtime directory's fixes offer (mkdir, chmod) do what
// they say when pasted, whatever the directory's path holds.
func TestDoctorRuntimeFixesAreCommandsThatWork(t *testing.T) {
	t.Run("mkdir", func(t *testing.T) {
		w := doctortest.New(t)
		gone := filepath.Join(w.Home, strange, "1000")
		w.Set("XDG_RUNTIME_DIR=" + gone)
		fix := runtimeRows(t, w)["directory"].Fix
		start, end := strings.Index(fix, "(mkdir "), strings.LastIndex(fix, "), or ")
		if start < 0 || end < start {
			t.Fatalf("no mkdir in %q", fix)
		}
		runHint(t, fix[start+1:end])
		if fi, err := os.Stat(gone); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("after %q: %v, %v; want %s made, 0700", fix, fi, err, gone)
		}
	})
	t.Run("chmod", func(t *testing.T) {
		w := doctortest.New(t)
		rt := filepath.Join(w.Home, strange)
		w.Set("XDG_RUNTIME_DIR=" + rt)
		base := w.Paths().RuntimeBase
		if err := os.MkdirAll(base, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		fix := runtimeRows(t, w)["directory"].Fix
		if !strings.HasPrefix(fix, "chmod 700 ") {
			t.Fatalf("fix %q, want a chmod", fix)
		}
		runHint(t, fix)
		if r := runtimeRows(t, w)["directory"]; r.Status != OK {
			t.Fatalf("after %q: %+v", fix, r)
		}
	})
	t.Run("rm", func(t *testing.T) {
		w := doctortest.New(t)
		w.Set("XDG_RUNTIME_DIR=" + filepath.Join(w.Home, strange))
		reg := control.PaneRegistry(w.Paths().RuntimeBase)
		if err := os.Mkdir(filepath.Join(w.Home, strange), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Dir(reg.Dir), reg.Dir} {
			if err := control.EnsurePrivateDir(d); err != nil {
				t.Fatal(err)
			}
		}
		entry := filepath.Join(reg.Dir, control.PaneKey("/h", "w9:p9"))
		if err := os.WriteFile(entry, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		fix := runtimeRows(t, w)["registry"].Fix
		_, hint, ok := strings.Cut(fix, "to remove them now: ")
		if !ok {
			t.Fatalf("no rm in %q", fix)
		}
		runHint(t, hint)
		if _, err := os.Lstat(entry); err == nil {
			t.Fatalf("after %q, %s is still there", hint, entry)
		}
	})
}
