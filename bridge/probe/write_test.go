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
		for _, placed := range testenv.InTheWay {
			t.Run(c.name+"/"+placed, func(t *testing.T) {
				dir := t.TempDir()
				untouched := testenv.PutInTheWay(t, filepath.Join(dir, c.name), placed)
				if path, err := c.write(dir); err == nil {
					t.Errorf("wrote %s over a %s", path, placed)
				}
				if p := untouched(); p != "" {
					t.Error(p)
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
