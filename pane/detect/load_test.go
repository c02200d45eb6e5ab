package detect

import (
	"os"
	"path/filepath"
	"testing"
)

// A manifests directory that is a symlink to nowhere, or a file, is said:
// the glob found no manifest there and nothing told the user why theirs
// had no effect.
func TestLoadNamesAManifestDirThatIsNotOne(t *testing.T) {
	base := t.TempDir()
	link := filepath.Join(base, "manifests")
	if err := os.Symlink("/nonexistent/manifests", link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		link: link + ": is a symlink to /nonexistent/manifests, which does not exist, so no manifest there is read; point it at an existing directory, or remove it",
		file: file + ": is a file, not a directory, so no manifest there is read; put the manifests in a directory there",
	} {
		s, problems := Load(dir)
		if len(problems) != 1 || problems[0].Error() != want {
			t.Errorf("Load(%s) = %v\nwant %s", dir, problems, want)
		}
		if _, ok := s.Lookup("pi"); !ok {
			t.Errorf("Load(%s) lost the built-in manifests", dir)
		}
	}
	if _, problems := Load(filepath.Join(base, "missing")); len(problems) != 0 {
		t.Errorf("a missing directory: %v", problems)
	}
}
