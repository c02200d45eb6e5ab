package commands

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Every HERDR_PI_* variable the program reads is documented somewhere in
// docs/ or the README: a setting nobody can find is a setting nobody can
// use, or turn off. Variables of tests, benchmarks and the e2e rig (in
// _test.go files, e2e/, the test-support packages, HERDR_PI_TEST_*) are
// not the person's.
func TestEveryEnvironmentVariableIsDocumented(t *testing.T) {
	root := testenv.ModuleRoot()
	var docs strings.Builder
	for _, pattern := range []string{"docs/*.md", "README.md"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs.Write(b)
		}
	}
	name := regexp.MustCompile(`"(HERDR_PI_[A-Z][A-Z0-9_]*[A-Z0-9])"`)
	read := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "e2e", "internal/testenv", "internal/hostinfo", "internal/pitest", "internal/herdrtest",
				"internal/fakellm", "internal/golden", "handoff/store/storetest", ".ci", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			read[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) == 0 {
		t.Fatal("found no variables at all: the scan looks in the wrong place")
	}
	for v, file := range read {
		if v == "HERDR_PI_TOOL_BRIDGE_DATA__" || strings.HasPrefix(v, "HERDR_PI_TEST_") { // a placeholder in generated code; the tests' own
			continue
		}
		if !regexp.MustCompile(`\b` + v + `\b`).MatchString(docs.String()) {
			t.Errorf("%s (read in %s) appears in no page of docs/ nor the README", v, file)
		}
	}
}
