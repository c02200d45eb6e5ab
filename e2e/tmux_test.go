package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// tmuxServer is a private tmux server (its own socket) for one test.
type tmuxServer struct {
	t    *testing.T
	sock string
}

func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testenv.Missing(t, "tmux", "apt-get install tmux")
	}
	dir, err := os.MkdirTemp("", "hpt")
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxServer{t: t, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", s.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxServer) capture(target string) string {
	return s.run("capture-pane", "-p", "-t", target)
}

// The demo, as a person sees it in a real terminal (tmux): the agent's
// screen in a frame, the pane state badge, the live timeline; the marker
// never on screen; it ends by itself. And the help output reads right.
func TestDemoAndHelpInTmux(t *testing.T) {
	s := startTmux(t)
	s.run("new-session", "-d", "-x", "100", "-y", "46", "-s", "demo", "herdr-pi demo; echo DEMO_EXIT=$?; sleep 60")
	var sawBlocked, sawWorking bool
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(last, "DEMO_EXIT=") {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not end; screen:\n%s", last)
		}
		time.Sleep(100 * time.Millisecond)
		last = s.capture("demo")
		if strings.Contains(last, ":input_needed:") {
			t.Fatalf("the marker is on the demo screen:\n%s", last)
		}
		if strings.Contains(last, "pane state in Herdr:  BLOCKED") && strings.Contains(last, "Which file should I edit") {
			sawBlocked = true
		}
		if strings.Contains(last, "pane state in Herdr:  WORKING") && strings.Contains(last, "Working") {
			sawWorking = true
		}
	}
	if !sawBlocked || !sawWorking {
		t.Fatalf("never saw the working (%v) and blocked (%v) frames; last screen:\n%s", sawWorking, sawBlocked, last)
	}
	for _, want := range []string{"DEMO_EXIT=0", "herdr-pi demo", "╭", "release the pane", "herdr-pi wrap pi"} {
		if !strings.Contains(last, want) {
			t.Errorf("final demo screen lacks %q:\n%s", want, last)
		}
	}

	s.run("new-window", "-t", "demo", "-n", "help", "herdr-pi --help; sleep 60")
	var help string
	for i := 0; i < 50 && !strings.Contains(help, "GLOBAL OPTIONS"); i++ {
		time.Sleep(100 * time.Millisecond)
		help = s.capture("demo:help")
	}
	for _, want := range []string{"herdr-pi - run coding agents in Herdr panes", "wrap", "doctor", "demo", "--version"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
}
