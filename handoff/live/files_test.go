package live

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Seed 001: temporary bridge files use private permissions. The launch's
// files (prompt, system prompt, inline extensions) hold the attempt's
// instructions and are written 0600, whatever the umask lets through; an
// existing file is never written through.
func TestLaunchFilesArePrivate(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	dir := t.TempDir()
	paths, err := writeFiles(dir, []control.LaunchFile{{Name: "prompt.md", Content: "secret task"}, {Name: "inline-extensions.mjs", Content: "export default () => {}"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o600 || filepath.Dir(p) != dir {
			t.Errorf("%s: %s at %s, want a plain 0600 file in %s", name, fi.Mode(), p, dir)
		}
	}
	if _, err := writeFiles(dir, []control.LaunchFile{{Name: "prompt.md", Content: "again"}}); err == nil {
		t.Error("a second write of prompt.md went through the existing file")
	}
}
