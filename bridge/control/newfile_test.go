package control

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// WriteNewFile is how a file Pi loads (the probe, its handoff module, the
// launcher, the tool bridge's client) goes into the private run directory:
// 0600 whatever the umask, and only as a new file.
func TestWriteNewFileMakesA0600File(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	path := filepath.Join(t.TempDir(), "m.mjs")
	if err := WriteNewFile(path, []byte("export {}\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want a 0600 regular file", fi.Mode())
	}
	if b, _ := os.ReadFile(path); string(b) != "export {}\n" {
		t.Fatalf("holds %q", b)
	}
}

// Whatever is at the name already is not ours: refused with fs.ErrExist,
// never followed or rewritten.
func TestWriteNewFileRefusesWhatIsThere(t *testing.T) {
	for _, placed := range testenv.InTheWay {
		t.Run(placed, func(t *testing.T) {
			at := filepath.Join(t.TempDir(), "m.mjs")
			untouched := testenv.PutInTheWay(t, at, placed)
			if err := WriteNewFile(at, []byte("theirs")); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("WriteNewFile over a %s: %v, want fs.ErrExist", placed, err)
			}
			if p := untouched(); p != "" {
				t.Error(p)
			}
		})
	}
}

// A file that cannot be written whole (a full disk, here a file size
// limit) is removed, and the error names it.
func TestWriteNewFileRemovesWhatItCouldNotFinish(t *testing.T) {
	if dir := testenv.FileSizeLimited(t); dir != "" {
		t.Logf("WriteNewFile: %v", WriteNewFile(filepath.Join(dir, "big"), make([]byte, 4096)))
		return
	}
	dir := t.TempDir()
	out := testenv.RunFileSizeLimited(t, dir, 1024)
	if !strings.Contains(out, "WriteNewFile: writing "+filepath.Join(dir, "big")+": ") || !strings.Contains(out, "file too large") {
		t.Fatalf("the write did not fail for the file size limit, so this proves nothing:\n%s", out)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
