package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/notify/tmux/tmuxtest"
)

// tmuxWrapRun is a `herdr-pi wrap` run in a tmux pane, seen from the
// terminal outside every tmux.
type tmuxWrapRun struct {
	term *tmuxtest.Terminal
	log  string // the wrapper's log file
}

// tmuxLayout says where the wrapper's pane is.
type tmuxLayout int

const (
	inAPane         tmuxLayout = iota // the one pane of one tmux
	inANestedTmux                     // the pane of a tmux inside a tmux's pane
	inAHiddenWindow                   // a window of one tmux that is not the one shown
)

// wrapInTmux runs, in a pane of a private tmux server with configuration
// conf laid out as layout says, `herdr-pi wrap` around an agent that asks
// a script's question for a moment; the terminal outside says it is Warp
// (OSC 777), which tmux hides from its panes. It returns once the wrapper
// has exited with 0.
func wrapInTmux(t *testing.T, conf string, layout tmuxLayout) tmuxWrapRun {
	t.Helper()
	if os.Getenv("TMUX") != "" {
		testenv.Missing(t, "a terminal outside tmux", "the tests run inside tmux, which would be one more level: run them outside tmux")
	}
	dir, err := os.MkdirTemp("/tmp", "hptn") // short: the wrapper's sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	project := filepath.Join(dir, "api-service")
	if err := os.Mkdir(project, 0o700); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t,
		`print ready\r\n`,
		"run herdr-pi waiting start --source deploy --id 1 --label approve",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 1",
		"sleep 300ms",
	)
	// The pane's command is a script: sh runs it, the wrapper's code goes
	// to a file, and the shown pane prints it once the wrapper is done.
	status := filepath.Join(dir, "status")
	run := filepath.Join(dir, "run.sh")
	body := "cd " + project + " && herdr-pi wrap -- fakeagent " + script + "\necho $? >" + status + ".new && mv " + status + ".new " + status + "\n"
	if err := os.WriteFile(run, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	show := "while [ ! -e " + status + " ]; do sleep 0.05; done; echo WRAP''_EXIT=$(cat " + status + "); sleep 60"
	outer := tmuxtest.New(t, conf)
	cmd := "sh " + run + "; " + show
	switch layout {
	case inANestedTmux:
		// The shell in the outer pane forks the inner tmux, as one a
		// person types into does ("; true" keeps sh from exec'ing it): its
		// start-up environment is how the wrapper finds the outer level
		// (tmux.Probe.Levels; an exec'd client is the documented miss).
		inner := tmuxtest.New(t, conf)
		cmd = "unset TMUX; '" + inner.Bin + "' " + strings.Join(inner.Args("new-session", "-s", "inner", "'"+cmd+"'"), " ") + "; true"
	case inAHiddenWindow:
		// A second window, not made current: the first stays on show.
		cmd = "'" + outer.Bin + "' new-window -d 'sh " + run + "'; " + show
	}
	env := tmuxtest.Env("TERM_PROGRAM=WarpTerminal", "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, shownAsPi(t))
	term := outer.Attach(t, withoutHerdr(env), 24, 100, "new-session", "-s", "outer", cmd)
	if !term.WaitFor([]byte("WRAP_EXIT="), 60*time.Second) {
		t.Fatalf("the wrapper never ended; the terminal got %q", term.Output())
	}
	if !term.WaitFor([]byte("WRAP_EXIT=0"), time.Second) {
		t.Fatalf("the wrapper failed; the terminal got %q", term.Output())
	}
	return tmuxWrapRun{term: term, log: filepath.Join(dir, "herdr-pi", "herdr-pi.log")}
}

func (r tmuxWrapRun) logText(t *testing.T) string {
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A tmux inside a tmux, both letting passthrough out: the question's
// notification leaves the wrapper wrapped once per level and reaches the
// terminal outside once, unwrapped, in the protocol the outer tmux says
// the terminal speaks (notify.TestNestedTmuxWrapsOncePerLevel checks the
// writing alone; this is a whole run).
func TestWrapInNestedTmuxNotifiesTheTerminalOutside(t *testing.T) {
	for _, layout := range []tmuxLayout{inAPane, inANestedTmux} {
		r := wrapInTmux(t, "set -g allow-passthrough on\n", layout)
		want := []byte("\x1b]777;notify;Pi needs your input;approve · api-service\x1b\\")
		out := r.term.Output()
		if bytes.Count(out, want) != 1 || bytes.Count(out, []byte("\x1b]777;")) != 1 {
			t.Fatalf("layout %d: want exactly one %q on the terminal outside, got:\n%q\nthe wrapper's log:\n%s", layout, want, out, r.logText(t))
		}
		if bytes.Contains(out, []byte("Ptmux;")) {
			t.Fatalf("a DCS wrapper leaked to the terminal outside: %q", out)
		}
	}
}

// oscOrDCS matches the control strings in a terminal's input, whose BEL
// (OSC's terminator) is no bell.
var oscOrDCS = regexp.MustCompile(`(?s)\x1b[\]P].*?(?:\x07|\x1b\\)`)

// bells counts the bells outside control strings.
func bells(out []byte) int {
	return bytes.Count(oscOrDCS.ReplaceAll(out, nil), []byte{'\a'})
}

// tmux's own default, allow-passthrough off, drops the sequence a
// notification is written in (oh-my-pi#3395: notifications silently lost
// under tmux). The wrapper rings the pane's bell instead, which tmux
// passes on to the terminal outside as its bell (bell-action any), and
// its log says why the notification did not show and how to let it
// through — at each level of a tmux in a tmux too.
func TestWrapInTmuxWithoutPassthroughRingsTheBell(t *testing.T) {
	for _, layout := range []tmuxLayout{inAPane, inANestedTmux} {
		r := wrapInTmux(t, "", layout)
		out := r.term.Output()
		if bytes.Contains(out, []byte("\x1b]777;")) {
			t.Fatalf("layout %d: passthrough is off, yet the terminal got the sequence: %q", layout, out)
		}
		log := r.logText(t)
		if n := bells(out); n != 1 {
			t.Fatalf("layout %d: %d bells reached the terminal outside, want 1 for the question:\n%q\nthe wrapper's log:\n%s", layout, n, out, log)
		}
		if !strings.Contains(log, "allow-passthrough is off") || !strings.Contains(log, "set -g allow-passthrough on") {
			t.Fatalf("layout %d: the log does not say why nothing showed:\n%s", layout, log)
		}
	}
}

// allow-passthrough on lets a sequence out of a pane on show only: tmux
// drops one from a window that is not the one shown ("all", tmux 3.4+,
// lets those out too). The wrapper in such a window rings its bell, which
// tmux marks on the window in its status line and passes on to the
// terminal outside, and its log says why and what to set.
func TestWrapInAHiddenTmuxWindowRingsTheBell(t *testing.T) {
	r := wrapInTmux(t, "set -g allow-passthrough on\n", inAHiddenWindow)
	out := r.term.Output()
	if bytes.Contains(out, []byte("\x1b]777;")) {
		t.Fatalf("tmux let the sequence out of a hidden window (a tmux that does now?): %q", out)
	}
	log := r.logText(t)
	if n := bells(out); n != 1 {
		t.Fatalf("%d bells reached the terminal outside, want 1 for the question:\n%q\nthe wrapper's log:\n%s", n, out, log)
	}
	if !strings.Contains(log, "not on show") || !strings.Contains(log, "allow-passthrough all") {
		t.Fatalf("the log does not say why nothing showed:\n%s", log)
	}
}
