package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Every test RELIABILITY.md names exists: a renamed or deleted test must
// not leave a fault case without its guard.
func TestEveryCaseNamesARealTest(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range cases {
		if len(c.Tests) == 0 {
			t.Errorf("%q has no test", c.Fault)
		}
		for _, ref := range c.Tests {
			if problem := missingTest(root, ref); problem != "" {
				t.Errorf("%q: %s", c.Fault, problem)
			}
		}
	}
}

// missingTest says what is missing when ref names no test of the module
// at root ("" when the test is there): its package declares no such
// top-level test, or TestScripts has no script of the subtest's name.
func missingTest(root string, ref testRef) string {
	top, sub, _ := strings.Cut(ref.Name, "/")
	files, _ := filepath.Glob(filepath.Join(root, ref.Pkg, "*_test.go"))
	decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(top) + `\(t \*testing\.T\)`)
	found := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && decl.Match(b) {
			found = true
		}
	}
	if !found {
		return ref.Pkg + " has no " + top
	}
	if top == "TestScripts" && sub != "" {
		if _, err := os.Stat(filepath.Join(root, ref.Pkg, "testdata", sub+".txtar")); err != nil {
			return "no script " + sub
		}
	}
	return ""
}

// faultFiles are e2e's files of fault tests: every test in them guards a
// fault and is named by the table, so that a fault test added there shows
// in RELIABILITY.md (notAFault says which ones are not and why).
var faultFiles = []string{
	"faults_test.go",
	"live_faults_test.go",
	"live_kill_test.go",
	"inspectable_faults_test.go",
	"inspectable_outage_test.go",
}

var notAFault = map[string]string{
	"TestFullyInspectableAbortInTheTabCarriesOnLocally": "Escape in the tab is the person's own abort",
}

func TestEveryFaultTestIsInTheTable(t *testing.T) {
	named := map[string]bool{}
	for _, c := range cases {
		for _, ref := range c.Tests {
			if ref.Pkg == "e2e" {
				top, _, _ := strings.Cut(ref.Name, "/")
				named[top] = true
			}
		}
	}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	declared := map[string]bool{}
	for _, f := range faultFiles {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			name := string(m[1])
			declared[name] = true
			if !named[name] && notAFault[name] == "" {
				t.Errorf("e2e/%s: %s is in no fault case (cases.go): add it to the case it guards, or to notAFault with the reason", f, name)
			}
		}
	}
	for name := range notAFault {
		if !declared[name] {
			t.Errorf("notAFault names %s, which no fault file declares", name)
		}
	}
}
