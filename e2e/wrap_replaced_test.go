package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// herdr-pi replaced on disk under a running wrapper, as `go build -o` or
// a package manager does it (a new file renamed over the old one): job
// control, which needs the session leader the wrapper started from its
// own binary, still stops and resumes Pi, and Pi works on and quits
// cleanly. What stands at the path now is not even herdr-pi: nothing of
// the running wrapper executes it again.
func TestAWrapperWhoseBinaryWasReplacedStillStopsAndResumes(t *testing.T) {
	const answer = "pong from the fake model"
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: answer}), false)
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	bin := filepath.Join(t.TempDir(), "herdr-pi")
	data, err := os.ReadFile(r.hp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startTmux(t)
	args := []string{"new-session", "-d", "-x", "120", "-y", "40", "-s", "rp", "-c", r.agent.Project, "env", "-i"}
	args = append(args, r.env("PS1=rp$ ", "TERM=tmux-256color")...)
	s.run(append(args, bash, "--norc", "--noprofile", "-i")...)
	waitScreen := func(what string, cond func(string) bool) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if last = s.capture("rp"); cond(last) {
				return
			}
		}
		t.Fatalf("waiting for %s; screen:\n%s", what, last)
	}
	send := func(text string) {
		s.run("send-keys", "-t", "rp", "-l", text)
		s.run("send-keys", "-t", "rp", "Enter")
	}
	editor := strings.Repeat("─", 100)
	piReady := func(s string) bool { return strings.Count(s, editor) >= 2 }
	atPrompt := func(s string) bool { return strings.HasSuffix(strings.TrimRight(s, "\n "), "rp$") }

	waitScreen("the shell prompt", atPrompt)
	send(fmt.Sprintf("%s wrap %s", bin, r.pi.Bin))
	waitScreen("Pi's editor", piReady)

	next := bin + ".new"
	if err := os.WriteFile(next, []byte("#!/bin/sh\necho replaced herdr-pi ran >&2\nexit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}

	s.run("send-keys", "-t", "rp", "C-z")
	waitScreen("the shell reporting the job stopped", func(s string) bool { return strings.Contains(s, "Stopped") && atPrompt(s) })
	send("fg")
	waitScreen("Pi's editor after fg", func(s string) bool { return piReady(s) && !strings.Contains(s, "Stopped") })
	send("ping")
	waitScreen("the model's answer", func(s string) bool { return strings.Contains(s, answer) && piReady(s) })
	send("/quit")
	waitScreen("the shell prompt after /quit", atPrompt)
	send("echo EXIT=$?")
	waitScreen("the wrapper's exit status", func(s string) bool { return strings.Contains(s, "EXIT=0") })
	if strings.Contains(s.capture("rp"), "replaced herdr-pi ran") {
		t.Error("the running wrapper executed what now stands at its path")
	}
}
