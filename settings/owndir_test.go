package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A config of the person's own, closed to others, in a directory others
// may write: any of them could rename it away and put theirs under its
// name between two reads. The directory is refused as the file would be
// (named, with the fix); a sticky one (/tmp) or a group-writable one
// (umask 002) is fine. A symlink is judged where it lives and where it
// leads.
func TestAConfigInADirectoryOthersMayWriteIsRefused(t *testing.T) {
	testenv.PermissiveUmask(t)
	base := t.TempDir()
	dirWith := func(name string, mode os.FileMode) (dir, file string) {
		t.Helper()
		dir = filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file = filepath.Join(dir, "config.toml")
		if err := os.WriteFile(file, []byte("[notify]\nchannel = \"herdr\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir, file
	}
	open, inOpen := dirWith("open", 0o777)
	_, err := LoadConfig(inOpen, "config.toml")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "directory "+open+", which may be written by anyone") ||
		!strings.Contains(err.Error(), "chmod o-w "+open) {
		t.Fatalf("a config in a directory anyone may write (not sticky): err %v, want it refused naming the directory and the fix", err)
	}
	for _, ok := range []struct {
		name string
		mode os.FileMode
	}{{"sticky", 0o777 | os.ModeSticky}, {"group", 0o775}, {"closed", 0o700}} {
		_, file := dirWith(ok.name, ok.mode)
		if _, err := LoadConfig(file, "config.toml"); err != nil {
			t.Errorf("a config in a %s directory: %v", ok.name, err)
		}
	}
	// Linked from a directory of ours to one anyone may write, and the
	// other way round.
	mine := filepath.Join(base, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(mine, "config.toml")
	if err := os.Symlink(inOpen, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(link, "config.toml"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), open) {
		t.Fatalf("a link to a config in a directory anyone may write: %v", err)
	}
	_, inClosed := dirWith("closed2", 0o700)
	if err := os.Symlink(inClosed, filepath.Join(open, "link.toml")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(filepath.Join(open, "link.toml"), "link.toml"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), open) {
		t.Fatalf("a link in a directory anyone may write: %v", err)
	}

	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to make a directory of another uid (CI runs as root)")
	}
	theirs, inTheirs := dirWith("theirs", 0o755)
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(inTheirs, "config.toml")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "directory "+theirs+", which belongs to uid 65534") {
		t.Fatalf("a config in a directory of uid 65534: err %v, want it refused naming the directory's owner", err)
	}
}
