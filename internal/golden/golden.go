// Package golden compares test output with the files under testdata that
// say what it should be; `go test … -update` rewrites them. Differences are
// shown line by line and quoted, so control characters, colours and
// trailing spaces are visible. It is for tests only.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (and testscript expectations) instead of comparing")

// Updating reports whether the test run was asked to rewrite expectations.
func Updating() bool { return *update }

// Path is testdata/<test name>.golden, with subtest slashes made
// underscores.
func Path(t testing.TB) string {
	return filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
}

// Check compares got with the file at path, or rewrites the file with
// -update.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update to accept the new output):\n%s", path, Diff(string(want), got))
	}
}

// Diff lists the lines that differ, quoted.
func Diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			fmt.Fprintf(&out, "line %d:\n  want %s\n   got %s\n", i+1, strconv.Quote(x), strconv.Quote(y))
		}
	}
	return out.String()
}
