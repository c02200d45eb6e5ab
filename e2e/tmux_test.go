package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
	// The help is drawn in pieces: wait for its last line (--version),
	// not its last header, which a capture can catch alone.
	var help string
	for end := time.Now().Add(30 * time.Second); !strings.Contains(help, "--version") && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		help = s.capture("demo:help")
	}
	for _, want := range []string{"herdr-pi - run coding agents in Herdr panes", "wrap", "doctor", "demo", "--version"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
}

// waitScreen polls a tmux pane until done says so, checking every screen
// on the way; it fails the test when the demo never gets there.
func (s *tmuxServer) waitScreen(target string, each func(screen string), done func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second) // a hang guard, not a timing assertion
	for {
		screen := s.capture(target)
		each(screen)
		if done(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("gave up waiting; screen:\n%s", screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// demoFrameFits checks one 80x24 screen of the demo: the title on top once
// drawn, and the agent's box whole (every box row as wide as the terminal,
// closed on the right), so nothing wrapped.
func demoFrameFits(t *testing.T, screen string) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if !strings.Contains(screen, "╭") {
		return // not drawn yet
	}
	if !strings.HasPrefix(lines[0], "herdr-pi demo") {
		t.Fatalf("the title is not on the first row:\n%s", screen)
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "│") && (!strings.HasSuffix(l, "│") || utf8.RuneCountInString(l) != 80) {
			t.Fatalf("row %d of the box is broken (%d columns): %q\n%s", i+1, utf8.RuneCountInString(l), l, screen)
		}
	}
}

// At 80x24 the demo fits and stays readable to its end: the frame never
// wraps or scrolls, and the summary leaves the title on the screen.
func TestDemoFits80x24InTmux(t *testing.T) {
	s := startTmux(t)
	s.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "demo", "herdr-pi demo; echo DEMO_EXIT=$?; sleep 60")
	var sawBlocked bool
	last := s.waitScreen("demo", func(screen string) {
		demoFrameFits(t, screen)
		if strings.Contains(screen, ":input_needed:") {
			t.Fatalf("the marker is on the demo screen:\n%s", screen)
		}
		sawBlocked = sawBlocked || strings.Contains(screen, "pane state in Herdr:  BLOCKED") && strings.Contains(screen, "Which file should I edit")
	}, func(screen string) bool { return strings.Contains(screen, "DEMO_EXIT=") })
	if !sawBlocked {
		t.Errorf("never saw the blocked frame; last screen:\n%s", last)
	}
	for _, want := range []string{"DEMO_EXIT=0", "The agent exited 0", "then released the pane", "release the pane", "herdr-pi wrap pi"} {
		if !strings.Contains(last, want) {
			t.Errorf("final demo screen lacks %q:\n%s", want, last)
		}
	}
}

// q stops the demo: the agent ends, the pane is released, and the demo
// says it was stopped (not that the agent died of a signal) and exits 0.
func TestDemoStopsOnQInTmux(t *testing.T) {
	s := startTmux(t)
	s.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "demo", "herdr-pi demo; echo DEMO_EXIT=$?; sleep 60")
	s.waitScreen("demo", func(screen string) { demoFrameFits(t, screen) }, func(screen string) bool {
		return strings.Contains(screen, "pane state in Herdr:  IDLE")
	})
	s.run("send-keys", "-t", "demo", "q")
	last := s.waitScreen("demo", func(screen string) { demoFrameFits(t, screen) }, func(screen string) bool {
		return strings.Contains(screen, "DEMO_EXIT=")
	})
	for _, want := range []string{"Stopped. herdr-pi sent Herdr", "then released the pane", "DEMO_EXIT=0"} {
		if !strings.Contains(last, want) {
			t.Errorf("final screen lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, "exited 143") || strings.Contains(last, "exited 130") {
		t.Errorf("a stop reads as the agent dying:\n%s", last)
	}
}
