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
			top, sub, _ := strings.Cut(ref.Name, "/")
			files, _ := filepath.Glob(filepath.Join(root, ref.Pkg, "*_test.go"))
			found := false
			decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(top) + `\(t \*testing\.T\)`)
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err == nil && decl.Match(b) {
					found = true
				}
			}
			if !found {
				t.Errorf("%q: %s has no %s", c.Fault, ref.Pkg, top)
				continue
			}
			if top == "TestScripts" && sub != "" {
				if _, err := os.Stat(filepath.Join(root, ref.Pkg, "testdata", sub+".txtar")); err != nil {
					t.Errorf("%q: no script %s", c.Fault, sub)
				}
			}
		}
	}
}
