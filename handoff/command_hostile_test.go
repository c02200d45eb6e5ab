package handoff

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// The command file prints the launch's directory when the pane cannot
// enter it. That directory comes from the workflow store (the attempt's or
// the run's cwd as Pi recorded it): what reaches the pane's terminal is
// cleaned, so a name with an OSC, a colour, the one-byte C1 CSI or a
// right-to-left override shows as text and acts on nothing.
func TestACommandFileShowsAHostileDirectoryHarmlessly(t *testing.T) {
	dir := "/nonexistent/\x1b]0;PWNED\a\x1b[31mRED\u009b1m\u202eevil\xff"
	cf, err := WriteCommandFile(t.TempDir(), Launch{Argv: []string{"true"}, Dir: dir, Title: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", cf.Path)
	cmd.Stdin = strings.NewReader("\n") // the Enter that closes the pane
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("the script: %v, want exit status 1 (cannot enter)\n%q", err, out)
	}
	if !strings.Contains(string(out), "cannot enter") || !strings.Contains(string(out), "PWNED") {
		t.Fatalf("the script did not name the directory, so this proves nothing:\n%q", out)
	}
	for _, r := range strings.ToValidUTF8(string(out), "\ufffd") {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) || r == unicode.ReplacementChar {
			t.Fatalf("%U reaches the pane's terminal:\n%q", r, out)
		}
	}
}
