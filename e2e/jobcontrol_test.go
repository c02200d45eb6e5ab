package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Ctrl-Z in a wrapped Pi behaves as in a bare Pi: the shell reports the job
// stopped and lists it, fg brings Pi's screen back and Pi works on. A
// person's bash with job control runs in a tmux pane.
func TestCtrlZSuspendsWrappedPiLikeBarePi(t *testing.T) {
	const answer = "pong from the fake model"
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: answer}), false)
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	s := startTmux(t)
	args := []string{"new-session", "-d", "-x", "120", "-y", "40", "-s", "jc", "-c", r.agent.Project, "env", "-i"}
	args = append(args, r.env("PS1=jc$ ", "TERM=tmux-256color")...)
	s.run(append(args, bash, "--norc", "--noprofile", "-i")...)
	screen := func() string { return s.capture("jc") }
	waitScreen := func(what string, cond func(string) bool) string {
		t.Helper()
		var last string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if last = screen(); cond(last) {
				return last
			}
		}
		t.Fatalf("waiting for %s; screen:\n%s", what, last)
		return ""
	}
	editor := strings.Repeat("─", 100)
	piReady := func(s string) bool { return strings.Count(s, editor) >= 2 }

	// capture-pane drops trailing blanks: the prompt ends a screen as "jc$".
	atPrompt := func(s string) bool { return strings.HasSuffix(strings.TrimRight(s, "\n "), "jc$") }
	waitScreen("the shell prompt", atPrompt)
	s.run("send-keys", "-t", "jc", "-l", fmt.Sprintf("%s wrap %s", r.hp, r.pi.Bin))
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("Pi's editor", piReady)

	s.run("send-keys", "-t", "jc", "C-z")
	waitScreen("the shell reporting the job stopped", func(s string) bool {
		return strings.Contains(s, "Stopped") && atPrompt(s)
	})
	s.run("send-keys", "-t", "jc", "-l", "jobs")
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("jobs listing the wrapper stopped", func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "[1]+") && strings.Contains(l, "Stopped") && strings.Contains(l, "wrap") {
				return strings.Count(s, "Stopped") >= 2
			}
		}
		return false
	})

	s.run("send-keys", "-t", "jc", "-l", "fg")
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("Pi's editor after fg", func(s string) bool { return piReady(s) && !strings.Contains(s, "Stopped") })

	s.run("send-keys", "-t", "jc", "-l", "ping")
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("the model's answer", func(s string) bool { return strings.Contains(s, answer) && piReady(s) })

	s.run("send-keys", "-t", "jc", "-l", "/quit")
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("the shell prompt after /quit", func(s string) bool {
		return strings.Contains(s, "To resume this session") && atPrompt(s)
	})
	s.run("send-keys", "-t", "jc", "-l", "echo EXIT=$?")
	s.run("send-keys", "-t", "jc", "Enter")
	waitScreen("the wrapper's exit status", func(s string) bool { return strings.Contains(s, "EXIT=0") })
}
