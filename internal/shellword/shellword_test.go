package shellword

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// shellWordSeeds are words a workflow's agent name, a project directory
// or a package source could be, each built to break out of a quote in
// one shell or another.
var shellWordSeeds = []string{
	`x\'; echo INJECTED; #`, "", "plain", "api#2", "fixer#2", "a b", "it's", "'", "''", `\`, `a\`, `a\\b`, `\'`, `'\''`, "$(echo INJECTED)", "`echo INJECTED`",
	"${HOME}", "~", "~/x", "a=~/x", "=ls", "%self", "%1", "a%self", "{a,b}", "*", "?",
	"[ab]", "a;b", "a|b", "a&b", "a\nb", "a\tb", "!!", "^x", "(x)", "--flag", "-",
	"caf\u00e9", "\u202eevil",
}

// A word Word makes is that same word in every shell a person may
// paste it into: POSIX sh, bash, and fish, whose single quotes take \'
// and \\ as escapes. A word that closes fish's quote early runs the rest
// as commands (an agent's name `x\'; rm -rf ~; #` in open's hint).
func TestWordIsOneWordInEveryShell(t *testing.T) {
	shells := wordShells(t)
	for _, s := range shellWordSeeds {
		checkWord(t, shells, s)
	}
}

func FuzzWord(f *testing.F) {
	for _, s := range shellWordSeeds {
		f.Add(s)
	}
	shells := wordShells(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkWord(t, shells, s)
	})
}

// wordShells are the shells a word is checked in. fish is the one whose
// quoting differs; it must be there (CI installs it).
func wordShells(t testing.TB) []string {
	t.Helper()
	return []string{
		testenv.LookPath(t, "sh", "install a POSIX shell"),
		testenv.LookPath(t, "bash", "apt-get install bash"),
		testenv.LookPath(t, "fish", "apt-get install fish"),
	}
}

func checkWord(t *testing.T, shells []string, s string) {
	t.Helper()
	if strings.ContainsRune(s, 0) {
		return // no shell word holds a NUL, nor does any path or name
	}
	w := Word(s)
	for _, sh := range shells {
		// printf's format is the word's end marker too: a word that
		// split or swallowed what follows shows.
		out, err := exec.Command(sh, "-c", "printf '%s|' "+w+" end").Output()
		if got, want := string(out), s+"|end|"; err != nil || got != want {
			t.Fatalf("Word(%q) = %s\n%s reads it as %q (%v), want %q", s, w, sh, got, err, want)
		}
	}
}
