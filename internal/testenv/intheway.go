package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// InTheWay lists what a write that creates its file only once must find
// at its name and refuse, never following or rewriting it.
var InTheWay = []string{"symlink to a file", "dangling symlink", "file"}

// PutInTheWay puts kind (one of InTheWay) at the path at — a symlink's
// target in a directory of its own, holding "mine" when it exists — and
// returns a look that says what the write did to it ("" for nothing).
func PutInTheWay(t *testing.T, at, kind string) (untouched func() string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "target")
	var err error
	switch kind {
	case "symlink to a file":
		if err = os.WriteFile(target, []byte("mine"), 0o600); err == nil {
			err = os.Symlink(target, at)
		}
	case "dangling symlink":
		err = os.Symlink(target, at)
	case "file":
		err = os.WriteFile(at, []byte("mine"), 0o600)
	default:
		t.Fatalf("PutInTheWay: no such kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		b, err := os.ReadFile(target)
		switch kind {
		case "symlink to a file":
			if string(b) != "mine" {
				return fmt.Sprintf("the symlink's target now holds %q (%v), want \"mine\"", b, err)
			}
		case "dangling symlink":
			if !os.IsNotExist(err) {
				return fmt.Sprintf("the write created %s through the symlink (%v)", target, err)
			}
		case "file":
			if b, _ := os.ReadFile(at); string(b) != "mine" {
				return fmt.Sprintf("the file there now holds %q, want \"mine\"", b)
			}
		}
		return ""
	}
}
