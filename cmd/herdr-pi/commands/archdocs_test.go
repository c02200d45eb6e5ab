package commands

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// docs/architecture.md says which packages exist and which import which;
// a reader plans a change by it, so it must be the code's truth. Every
// package is named on the page, and its "Arrows" are exactly the imports
// between the rooms: cmd/… (the composition root), e2e/… and the small
// internal/… packages are left out, as the page says.
func TestArchitecturePageMatchesThePackages(t *testing.T) {
	root := testenv.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	imports := packageImports(t, root)
	for pkg := range imports {
		if !strings.Contains(page, "`"+pkg+"`") && !strings.Contains(page, "`"+pkg+" ") && !strings.Contains(page, pkg+"`") {
			t.Errorf("package %s is not named in docs/architecture.md", pkg)
		}
	}
	start, end := strings.Index(page, "## Arrows"), strings.Index(page, "## Where")
	if start < 0 || end < start {
		t.Fatal(`docs/architecture.md has no "## Arrows" section before "## Where"`)
	}
	documented := arrowsIn(page[start:end])
	room := func(p string) bool {
		return !strings.HasPrefix(p, "cmd/") && !strings.HasPrefix(p, "e2e") && !strings.HasPrefix(p, "internal/") && !strings.HasSuffix(p, "test")
	}
	actual := map[[2]string]bool{}
	for from, tos := range imports {
		for _, to := range tos {
			if room(from) && room(to) {
				actual[[2]string{from, to}] = true
			}
		}
	}
	for a := range actual {
		if !documented[a] {
			t.Errorf("%s imports %s, but the Arrows of docs/architecture.md do not say so", a[0], a[1])
		}
	}
	for a := range documented {
		if !actual[a] {
			t.Errorf("docs/architecture.md has the arrow %s → %s, but %s does not import %s", a[0], a[1], a[0], a[1])
		}
	}
}

// packageImports maps each package of the module (by its path below the
// module) to the module's packages its non-test files import.
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	const module = "github.com/herdr-pi/herdr-pi/"
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		out[rel] = append(out[rel], []string{}...)
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if to, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[rel], to) {
				out[rel] = append(out[rel], to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found %d packages: the walk looks in the wrong place", len(out))
	}
	return out
}

// arrowsIn reads the arrows written as `a → b`, `a → {b, c}` or
// `{a, b} → c` (the cmd arrow, "everything below", is not one).
func arrowsIn(text string) map[[2]string]bool {
	side := func(s string) []string {
		s = strings.Trim(strings.TrimSpace(s), "{}")
		var names []string
		for _, n := range strings.Split(s, ",") {
			names = append(names, strings.TrimSpace(n))
		}
		return names
	}
	out := map[[2]string]bool{}
	for _, m := range regexp.MustCompile("`([^`]*)→([^`]*)`").FindAllStringSubmatch(strings.ReplaceAll(text, "\n", " "), -1) {
		if strings.TrimSpace(m[1]) == "cmd" {
			continue
		}
		for _, from := range side(m[1]) {
			for _, to := range side(m[2]) {
				out[[2]string{from, to}] = true
			}
		}
	}
	return out
}
