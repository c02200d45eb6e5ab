package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// promiseRow is one row of a table in docs/promises.md: a promise of one of
// the three Pi extensions herdr-pi stands in for, how it is kept, and the
// tests that hold it.
type promiseRow struct {
	Line  int
	ID    string
	How   string
	Tests []testRef
	// NoTest: the tests cell is "—" (a promise that does not apply).
	NoTest bool
}

var (
	promiseID  = regexp.MustCompile(`^[SWN][0-9]+$`)
	promiseRef = regexp.MustCompile("`([a-z0-9/_-]+)\\.(Test[A-Za-z0-9_]+(?:/[A-Za-z0-9_.-]+)?)`")
)

// promiseRows reads the promise tables of docs/promises.md: every table row
// whose first cell is a promise's id (S1, W1, N1, …).
func promiseRows(t *testing.T, path string) []promiseRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []promiseRow
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !promiseID.MatchString(cells[0]) {
			continue
		}
		row := promiseRow{Line: i + 1, ID: cells[0]}
		if len(cells) != 4 {
			t.Errorf("docs/promises.md:%d: %s has %d cells, want 4 (id, promise, how, tests)", row.Line, row.ID, len(cells))
			continue
		}
		row.How = cells[2]
		if strings.TrimSpace(cells[3]) == "—" {
			row.NoTest = true
		}
		for _, m := range promiseRef.FindAllStringSubmatch(cells[3], -1) {
			row.Tests = append(row.Tests, testRef{Pkg: m[1], Name: m[2]})
		}
		rows = append(rows, row)
	}
	return rows
}

// Every test docs/promises.md names exists, so that a test renamed or
// deleted cannot leave a promise of the extensions herdr-pi replaces
// without the guard the page says it has; and every promise either names
// tests or says why it does not apply.
func TestEveryPromiseNamesARealTest(t *testing.T) {
	root := filepath.Join("..", "..")
	rows := promiseRows(t, filepath.Join(root, "docs", "promises.md"))
	seen := map[string]int{}
	seeds := map[byte]int{}
	for _, r := range rows {
		if prev, ok := seen[r.ID]; ok {
			t.Errorf("docs/promises.md:%d: %s again (first on line %d)", r.Line, r.ID, prev)
		}
		seen[r.ID] = r.Line
		seeds[r.ID[0]]++
		switch {
		case r.NoTest && !strings.HasPrefix(r.How, "Not applicable"):
			t.Errorf("docs/promises.md:%d: %s names no test but does not say why it does not apply (\"Not applicable: …\")", r.Line, r.ID)
		case !r.NoTest && len(r.Tests) == 0:
			t.Errorf("docs/promises.md:%d: %s names no test as `package.TestName`, and is not marked — (not applicable)", r.Line, r.ID)
		case r.NoTest && len(r.Tests) > 0:
			t.Errorf("docs/promises.md:%d: %s is not applicable and names tests", r.Line, r.ID)
		}
		for _, ref := range r.Tests {
			if problem := missingTest(root, ref); problem != "" {
				t.Errorf("docs/promises.md:%d: %s names %s.%s: %s", r.Line, r.ID, ref.Pkg, ref.Name, problem)
			}
		}
	}
	// The three tables are there: a page whose rows the parser no longer
	// recognises must not pass by checking nothing.
	for _, seed := range []byte("SWN") {
		if seeds[seed] < 10 {
			t.Errorf("docs/promises.md: %d rows of %c…, want the table of that seed (at least 10 rows)", seeds[seed], seed)
		}
	}
}

// The check finds what is missing: a test, a package, a script.
func TestMissingTestSaysWhatIsMissing(t *testing.T) {
	root := filepath.Join("..", "..")
	for ref, want := range map[testRef]string{
		{"e2e", "TestScripts/notify_terminal"}:        "",
		{"e2e/realpi", "TestPiRestoresAfterRestart"}:  "",
		{"e2e", "TestNoSuchPromiseTest"}:              "e2e has no TestNoSuchPromiseTest",
		{"e2e/nosuchpackage", "TestScripts"}:          "e2e/nosuchpackage has no TestScripts",
		{"e2e", "TestScripts/no_such_script"}:         "no script no_such_script",
		{"e2e/realpi", "TestPiRestoresAfterRestarts"}: "e2e/realpi has no TestPiRestoresAfterRestarts",
		{"notify/osc", "TestSeedResolutionVectors"}:   "",
		{"cmd/herdr-pi/commands", "TestNotifyInside"}: "cmd/herdr-pi/commands has no TestNotifyInside",
	} {
		if got := missingTest(root, ref); got != want {
			t.Errorf("missingTest(%s.%s) = %q, want %q", ref.Pkg, ref.Name, got, want)
		}
	}
}
