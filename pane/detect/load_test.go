package detect

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// A user's manifest that replaces a built-in one replaces it under every
// name the built-in answered to: Pi's is found as pi, herdr:pi and
// pi-coding-agent, and a user's pi.toml that names only itself (id pi, no
// aliases) must not leave `--agent herdr:pi` or `detect.agent =
// "pi-coding-agent"` on the built-in rules. Another agent's manifest
// that happens to share one alias takes only that name.
func TestAUsersManifestReplacesTheBuiltInUnderAllItsNames(t *testing.T) {
	dir := t.TempDir()
	mine := "id = \"pi\"\n[[rules]]\nid = \"mine\"\nstate = \"working\"\ncontains = [\"zzz\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "pi.toml"), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	other := "id = \"other\"\naliases = [\"herdr:other\"]\n[[rules]]\nid = \"o\"\nstate = \"working\"\ncontains = [\"ooo\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "other.toml"), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	s, problems := Load(dir)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	want, _ := s.Lookup("pi")
	if len(want.Rules) != 1 || want.Rules[0].ID != "mine" {
		t.Fatalf("pi is not the user's manifest: %+v", want.Rules)
	}
	for _, name := range []string{"herdr:pi", "pi-coding-agent"} {
		if got, ok := s.Lookup(name); !ok || got != want {
			t.Errorf("%s: still the built-in manifest, not the user's pi.toml", name)
		}
	}
	if got, ok := s.Lookup("herdr:other"); !ok || got.ID != "other" {
		t.Errorf("herdr:other: %v %v", got, ok)
	}
	if _, ok := Embedded().Lookup("herdr:pi"); !ok {
		t.Error("the built-in set lost its own alias")
	}
}

// A manifest anyone may write could keep a pane from ever showing
// blocked: it is refused, named with the fix, and the built-in one stays.
func TestAManifestAnyoneMayWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	data, err := embeddedFS.ReadFile("manifests/pi.toml")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("blocked"), []byte("idle"), -1)
	path := filepath.Join(dir, "pi.toml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o646); err != nil {
		t.Fatal(err)
	}
	s, problems := Load(dir)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "may be written by anyone (mode 0646)") {
		t.Fatalf("problems %v, want the manifest refused as open to all", problems)
	}
	m, _ := s.Lookup("pi")
	if m != Embedded().byName["pi"] {
		t.Fatalf("the open manifest replaced the built-in one")
	}
}
