package control

import (
	"errors"
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

// A private directory its owner may not write or enter (0500, 0600: a
// `chmod -R a-w`, a restore from a backup) holds no socket: it is refused
// like one open to others, with the chmod that fixes it. It passed as
// "ours and private", and wrap then failed on "mkdir …: permission denied"
// while doctor blamed an immutable attribute or a security module.
func TestAPrivateDirItsOwnerCannotUseIsRefusedWithTheChmod(t *testing.T) {
	for _, mode := range []os.FileMode{0o500, 0o600, 0o300} {
		dir := filepath.Join(t.TempDir(), "rt")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		err := EnsurePrivateDir(dir)
		var pe *PrivateDirError
		if !errors.As(err, &pe) || pe.Problem != ProblemMode || !strings.Contains(err.Error(), "run chmod 700 "+dir) {
			t.Errorf("mode %04o: %v; want it refused, with chmod 700", mode, err)
		}
		os.Chmod(dir, 0o700)
	}
}
