package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// The probe, its handoff module and the launcher go into a fresh private
// run directory, once each: a file already at one of their names is not
// ours, so it is refused, never followed or rewritten. A symlink there
// would otherwise have Pi load, and the write truncate or create, whatever
// it points to; a file there, code nobody wrote for this run.
func TestWriteRefusesWhatIsAlreadyAtItsNames(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(dir string) (string, error)
	}{
		{FileName, Write},
		{HandoffFileName, Write},
		{LauncherName, WriteLauncher},
	} {
		for _, placed := range []string{"symlink to a file", "dangling symlink", "file"} {
			t.Run(c.name+"/"+placed, func(t *testing.T) {
				dir, elsewhere := t.TempDir(), t.TempDir()
				at := filepath.Join(dir, c.name)
				target := filepath.Join(elsewhere, "target")
				switch placed {
				case "symlink to a file":
					if err := os.WriteFile(target, []byte("mine"), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(target, at); err != nil {
						t.Fatal(err)
					}
				case "dangling symlink":
					if err := os.Symlink(target, at); err != nil {
						t.Fatal(err)
					}
				case "file":
					if err := os.WriteFile(at, []byte("mine"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if path, err := c.write(dir); err == nil {
					t.Errorf("wrote %s over a %s", path, placed)
				}
				b, err := os.ReadFile(target)
				switch placed {
				case "symlink to a file":
					if string(b) != "mine" {
						t.Errorf("the file the symlink points to now holds %d bytes (%v), want \"mine\"", len(b), err)
					}
				case "dangling symlink":
					if !os.IsNotExist(err) {
						t.Errorf("the write created %s through the symlink (%v)", target, err)
					}
				case "file":
					if b, _ := os.ReadFile(at); string(b) != "mine" {
						t.Errorf("the file there now holds %d bytes, want \"mine\"", len(b))
					}
				}
			})
		}
	}
}

// A module that cannot be written whole (a full disk, here a file size
// limit) is removed: half a module in the run directory is not one, and
// nothing would remove it before the run ends.
func TestAModuleThatCannotBeWrittenIsRemoved(t *testing.T) {
	if dir := testenv.FileSizeLimited(t); dir != "" {
		_, err := Write(dir)
		t.Logf("Write: %v", err)
		_, err = WriteLauncher(dir)
		t.Logf("WriteLauncher: %v", err)
		return
	}
	dir := t.TempDir()
	out := testenv.RunFileSizeLimited(t, dir, 1024)
	if strings.Count(out, "file too large") != 2 {
		t.Fatalf("the writes did not both fail for the file size limit, so this proves nothing:\n%s", out)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the run directory: %v", left)
	}
}
