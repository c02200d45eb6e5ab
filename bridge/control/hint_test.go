package control

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The "run chmod 700 …" of a private directory open to others is the
// command meant when pasted, whatever the directory's path holds.
func TestPrivateDirModeHintIsACommandThatFixesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run dir; $(touch INJECTED) #1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := CheckPrivateDir(dir)
	_, hint, ok := strings.Cut(err.Error(), "; run ")
	if !ok {
		t.Fatalf("no command in %v", err)
	}
	c := exec.Command("sh", "-c", hint)
	c.Dir = t.TempDir()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the hint %q failed: %v\n%s", hint, err, out)
	}
	if err := CheckPrivateDir(dir); err != nil {
		t.Fatalf("after the hint %q: %v", hint, err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "INJECTED")); err == nil {
		t.Fatalf("the hint %q ran what the path holds", hint)
	}
}
