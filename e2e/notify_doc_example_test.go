package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// docBlock is the first ```sh block after heading in the doc at path.
func docBlock(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), heading)
	if !ok {
		t.Fatalf("%s: no heading %q", path, heading)
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatalf("%s: no sh block after %q", path, heading)
	}
	block, _, _ := strings.Cut(after, "```")
	return block
}

// herdr-setup.md's hook example, run verbatim after a passing `make test`
// where the notification cannot be delivered (no terminal, no Herdr):
// only "Tests passed" may be tried. `a && b || c` runs c when b fails,
// and told the person the tests failed when they had passed.
func TestTheNotifyHookExampleTellsOnlyTheOutcome(t *testing.T) {
	dir := t.TempDir()
	env := linkCommands(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "bin", "make"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, filepath.Join("..", "docs", "herdr-setup.md"), "## 4. Send a notification from a hook")
	cmd := exec.Command("sh", "-c", block)
	cmd.Env = env
	cmd.Dir = dir
	// A session of its own: no controlling terminal, so notify fails.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, _ := cmd.CombinedOutput()
	if n := strings.Count(string(out), "herdr-pi notify:"); n != 1 {
		t.Fatalf("the example\n%s\ntried %d notifications after the tests passed, want 1:\n%s", block, n, out)
	}
}
