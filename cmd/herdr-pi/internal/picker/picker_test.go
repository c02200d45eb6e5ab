package picker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker/pickertest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// probeEnv makes the test binary exit as soon as its packages have
// initialised: 0 when CI is as it was given, 3 when not.
const probeEnv = "HERDR_PI_PICKER_INIT_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		if _, set := os.LookupEnv("CI"); set {
			os.Exit(3)
		}
		os.Exit(0)
	}
	testenv.Main(m)
}

// A binary that links the picker (and with it Bubble Tea v1, whose init
// asks the terminal for its background colour) writes nothing to its
// terminal when it starts, and leaves CI as it found it (unset here).
func TestStartingWritesNothingToTheTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TERM=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, probeEnv+"=1", "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// Its own session with the pty as controlling terminal: termenv only
	// asks a terminal whose foreground it is.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the child is gone
		out <- b
	}()
	werr := cmd.Wait()
	if b := <-out; len(b) > 0 {
		t.Errorf("starting wrote %q to the terminal", b)
	}
	if werr != nil {
		t.Errorf("the probe: %v (exit 3: CI was left set)", werr)
	}
}

type result struct {
	choice Choice
	err    error
}

// start runs a picker on a real terminal; the result arrives once it ends.
func start(t *testing.T, rows, cols int, o Options) (*pickertest.Term, <-chan result) {
	t.Helper()
	tm := pickertest.Open(t, rows, cols)
	o.In, o.Out = tm.TTY, tm.TTY
	if o.Title == "" {
		o.Title = "Pick one"
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan result, 1), make(chan struct{})
	go func() {
		defer close(finished)
		c, err := Run(ctx, o)
		done <- result{c, err}
	}()
	// Never leave the program running: a failed test stops it.
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	tm.WaitText(t, o.Title)
	return tm, done
}

var sample = []Group{
	{Title: "run one", Items: []Item{{Text: "alpha#1 open", Hint: "opens alpha"}, {Text: "beta#1 none", Disabled: true}, {Text: "gamma#1 live", Hint: "gamma is live"}}},
	{Title: "run two (unreadable)"},
	{Title: "run three", Items: []Item{{Text: "delta#1 open"}}},
}

func TestPickerMovesOverDisabledItemsAndEnterChooses(t *testing.T) {
	tm, done := start(t, 12, 60, Options{Groups: sample})
	tm.WaitLine(t, "> alpha#1")
	tm.WaitLine(t, "opens alpha", "enter open")
	tm.Press(t, pickertest.Down)
	// beta is disabled: the cursor skips it.
	s := tm.WaitLine(t, "> gamma#1")
	if pickertest.LineWith(s, "gamma is live") == "" || pickertest.LineWith(s, "  beta#1 none") == "" {
		t.Errorf("want gamma's hint and beta shown unselected:\n%s", s)
	}
	tm.Press(t, pickertest.Down)
	tm.WaitLine(t, "> delta#1")
	tm.Press(t, pickertest.Down) // the last item: stays
	tm.Press(t, pickertest.Up)
	tm.WaitLine(t, "> gamma#1")
	tm.Press(t, pickertest.Enter)
	r := <-done
	if r.err != nil || r.choice != (Choice{Group: 0, Item: 2}) {
		t.Fatalf("got %+v, %v; want group 0 item 2", r.choice, r.err)
	}
}

func TestPickerCancels(t *testing.T) {
	for name, key := range map[string]string{"esc": pickertest.Esc, "q": "q", "ctrl-c": pickertest.CtrlC} {
		t.Run(name, func(t *testing.T) {
			tm, done := start(t, 12, 60, Options{Groups: sample})
			before, err := unix.IoctlGetTermios(int(tm.TTY.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			tm.WaitLine(t, "> alpha#1")
			tm.Press(t, key)
			r := <-done
			if !errors.Is(r.err, ErrCancelled) {
				t.Fatalf("%s: got %+v, %v; want ErrCancelled", name, r.choice, r.err)
			}
			after, err := unix.IoctlGetTermios(int(tm.TTY.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			if after.Lflag&unix.ICANON == 0 || after.Lflag&unix.ECHO == 0 {
				t.Errorf("the terminal stays raw after the picker (lflag %#x, was %#x)", after.Lflag, before.Lflag)
			}
			tm.WaitRaw(t, "\x1b[?1049l") // the alternate screen left
		})
	}
}

func TestPickerCancelsWhenTheContextEnds(t *testing.T) {
	tm := pickertest.Open(t, 12, 60)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{In: tm.TTY, Out: tm.TTY, Title: "Pick one", Groups: sample})
		done <- err
	}()
	tm.WaitText(t, "Pick one")
	cancel()
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Fatalf("got %v, want ErrCancelled", err)
	}
}

func TestPickerFilters(t *testing.T) {
	tm, done := start(t, 12, 60, Options{Groups: sample})
	tm.WaitLine(t, "> alpha#1")
	tm.Press(t, "/", "del")
	s := tm.WaitLine(t, "filter: del")
	if strings.Contains(s, "alpha") || !strings.Contains(s, "run three") || !strings.Contains(s, "> delta#1") {
		t.Fatalf("the filter should leave run three and delta only:\n%s", s)
	}
	// q is a letter while typing, not a way out.
	tm.Press(t, "q")
	tm.WaitText(t, "nothing matches \"delq\"")
	tm.Press(t, "\x7f") // backspace
	tm.WaitLine(t, "> delta#1")
	// A group whose heading matches keeps all its items.
	tm.Press(t, pickertest.Esc)
	tm.WaitLine(t, "> alpha#1")
	tm.Press(t, "/", "run one", pickertest.Enter)
	s = tm.WaitLine(t, "filter: run one")
	if !strings.Contains(s, "gamma#1") || strings.Contains(s, "delta") {
		t.Fatalf("filter on a heading:\n%s", s)
	}
	tm.Press(t, pickertest.Down, pickertest.Enter)
	if r := <-done; r.err != nil || r.choice != (Choice{0, 2}) {
		t.Fatalf("got %+v, %v; want group 0 item 2", r.choice, r.err)
	}
}

// A list longer than the screen scrolls with the cursor, and the heading
// of the cursor's group stays in sight.
func TestPickerScrolls(t *testing.T) {
	var groups []Group
	for g := range 20 {
		groups = append(groups, Group{Title: fmt.Sprintf("run %02d", g), Items: []Item{{Text: fmt.Sprintf("item %02d.1", g)}, {Text: fmt.Sprintf("item %02d.2", g)}}})
	}
	tm, done := start(t, 10, 40, Options{Groups: groups})
	tm.WaitLine(t, "> item 00.1")
	tm.Press(t, pickertest.End)
	s := tm.WaitLine(t, "> item 19.2")
	if strings.Contains(s, "run 00") {
		t.Errorf("the list did not scroll:\n%s", s)
	}
	for range 3 {
		tm.Press(t, pickertest.Up)
	}
	s = tm.WaitLine(t, "> item 18.1")
	if !strings.Contains(s, "run 18") {
		t.Errorf("the cursor's heading is off screen:\n%s", s)
	}
	if lines := strings.Split(s, "\n"); len(lines) > 10 {
		t.Errorf("%d lines on a 10-row screen", len(lines))
	}
	tm.Press(t, "g", pickertest.Enter)
	if r := <-done; r.err != nil || r.choice != (Choice{0, 0}) {
		t.Fatalf("got %+v, %v; want the first item", r.choice, r.err)
	}
}

// Without colour the cursor is the "> " mark alone; with it the line is
// also in reverse video.
func TestPickerColour(t *testing.T) {
	for _, color := range []bool{false, true} {
		tm, done := start(t, 12, 60, Options{Groups: sample, Color: color})
		tm.WaitLine(t, "> alpha#1")
		if got := strings.Contains(tm.Raw(), "\x1b[7m"); got != color {
			t.Errorf("colour %v: reverse video %v", color, got)
		}
		tm.Press(t, pickertest.Esc)
		<-done
	}
}

func TestPickerWithNothingToChooseDoesNotStart(t *testing.T) {
	tm := pickertest.Open(t, 12, 60)
	_, err := Run(context.Background(), Options{In: tm.TTY, Out: tm.TTY, Groups: []Group{{Title: "x", Items: []Item{{Text: "y", Disabled: true}}}}})
	if err == nil || errors.Is(err, ErrCancelled) {
		t.Fatalf("got %v, want an error", err)
	}
	if tm.Raw() != "" {
		t.Errorf("drew %q", tm.Raw())
	}
}

// The first frame fits the terminal it is drawn on (not a default 80×24
// until Bubble Tea reports the size).
func TestPickerFirstFrameFitsTheTerminal(t *testing.T) {
	long := strings.Repeat("x", 85) + " end"
	tm, done := start(t, 40, 100, Options{Groups: []Group{{Title: "run", Items: []Item{{Text: long}}}}})
	s := tm.WaitLine(t, "> xxx")
	if !strings.Contains(s, "xxx end") {
		t.Errorf("the first frame cut a line a 100-column terminal holds:\n%s", s)
	}
	if n := len(strings.Split(tm.Screen(), "\n")); n != 40 {
		t.Errorf("the footer is on line %d of a 40-row terminal:\n%s", n, tm.Screen())
	}
	tm.Press(t, "q")
	<-done
	tm.WaitRaw(t, "\x1b[?1049l")
	if strings.Contains(tm.Raw(), "…") {
		t.Errorf("a frame was drawn for a narrower terminal: %q", tm.Raw())
	}
}
