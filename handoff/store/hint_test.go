package store

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The command a problem offers to paste is the command meant, whatever
// the path holds: a space or a shell's metacharacters in it must neither
// split it into other arguments nor run anything.
func TestAccessProblemOffersACommandThatLooksAtThatPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my runs; $(touch INJECTED) `x` #2")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	msg := accessProblem(path, &fs.PathError{Op: "open", Path: path, Err: syscall.EIO})
	// The command is between the first backquote and the last: the
	// path may hold backquotes too.
	first, last := strings.Index(msg, "`"), strings.LastIndex(msg, "`")
	if first < 0 || last <= first {
		t.Fatalf("no command in %q", msg)
	}
	cmd := msg[first+1 : last]
	c := exec.Command("sh", "-c", cmd)
	c.Dir = t.TempDir()
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), path) {
		t.Fatalf("%s\nran as %q: %v\n%s", msg, cmd, err, out)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "INJECTED")); err == nil {
		t.Fatalf("the offered command %q ran what the path holds", cmd)
	}
}
