package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// bash splits a word at ":" (COMP_WORDBREAKS), and an attempt named by
// its agent's id has one (8d443e51-…:3#1, when two agents share a name).
// Typed into a real interactive bash, Tab completes such a word whole:
// herdr-pi is asked with the whole word, and readline, which replaces
// only what follows the ":", is given the replies without what comes
// before it, so nothing is doubled. A herdr-pi on PATH stands in, giving
// fixed candidates and noting what it was asked: the subject is the
// script and bash.
func TestBashCompletesAWordWithAColonWhole(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	asked := filepath.Join(dir, "asked")
	stub := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$ASKED\"\nprintf '%s\\n' 8d443e51-aa:3#1 8d443e51-aa:4#1 8d443e51-bb:1#1 fixer#1\n"
	if err := os.WriteFile(filepath.Join(bin, "herdr-pi"), []byte(stub), 0o700); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "herdr-pi.bash")
	if err := os.WriteFile(script, []byte(shells["bash"]), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + dir, "TERM=xterm", "ASKED=" + asked, "INPUTRC=/dev/null"}
	for _, c := range []struct {
		typed, keys string
		want        string // on the screen once bash has answered
		asked       string // the word herdr-pi was asked to complete
	}{
		// One candidate: the rest of it, after the ":" typed.
		{"herdr-pi open 3f0c 8d443e51-aa:3", "\t", "8d443e51-aa:3#1", "8d443e51-aa:3"},
		// Right after the ":": both candidates listed, without the part
		// already typed, and the line as it was.
		{"herdr-pi open 3f0c 8d443e51-aa:", "\t\t", "3#1  4#1", "8d443e51-aa:"},
		// Before any ":": the common part, the ":" included.
		{"herdr-pi open 3f0c 8d443e51-a", "\t", "8d443e51-aa:", "8d443e51-a"},
	} {
		t.Run(c.typed, func(t *testing.T) {
			os.Remove(asked)
			tm := pitest.StartTerm(t, []string{bash, "--norc", "--noprofile", "-i"}, env, dir, 24, 120)
			t.Cleanup(tm.Close)
			if err := tm.Send("source " + script + "; PS1='ready> '\r"); err != nil {
				t.Fatal(err)
			}
			tm.WaitText(t, "ready> ", 10*time.Second)
			if err := tm.Send(c.typed + c.keys); err != nil {
				t.Fatal(err)
			}
			screen := tm.WaitText(t, c.want, 10*time.Second)
			if strings.Contains(screen, "::") || strings.Contains(screen, "aa:8d443e51") {
				t.Fatalf("the word was doubled:\n%s", screen)
			}
			b, _ := os.ReadFile(asked)
			if got := strings.TrimSpace(string(b)); !strings.HasSuffix(strings.Split(got, "\n")[0], c.asked+" --generate-bash-completion") {
				t.Fatalf("herdr-pi was asked %q, want the whole word %q", got, c.asked)
			}
		})
	}
}
