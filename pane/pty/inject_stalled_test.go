package pty

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Notifications from several panes fall due at once while the terminal
// takes no output (paused, or too slow for what the agent draws): asking
// never waits for the terminal, and once it reads again it gets every byte
// the agent wrote, in order, with each notification once, between
// sequences and characters, never inside one. The bounds on waiting for
// that are far away, so only the boundary decides: with them, a child that
// a loaded machine starves for 50 ms between two pieces of a sequence gets
// the notifications inside it, as promised for a child gone quiet there
// (docs/promises.md), and the test failed now and then.
func TestInjectWhileTheTerminalTakesNoOutput(t *testing.T) {
	master, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	// Each line is written in pieces cut inside its sequences and its
	// character, so the terminal's side fills up at any of those cuts.
	const lines = 3000
	pieces := []string{"\x1b[3", "1mred\x1b", "[0m \x1b]8;;u\x1b", "\\link\x1b]8;;\x1b\\ \xe7\x8a", "\xb6 %d\n"}
	line := strings.Join(pieces, "")
	var script strings.Builder
	for _, p := range pieces {
		p = strings.ReplaceAll(p, `\`, `\\`)
		for _, c := range []string{"\x1b", "\xe7", "\x8a", "\xb6"} {
			p = strings.ReplaceAll(p, c, fmt.Sprintf(`\%03o`, c[0]))
		}
		fmt.Fprintf(&script, "printf '%s' $i; ", p)
	}
	var child atomic.Int64
	inj := NewInjector()
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %si=$((i+1)); done`, lines, script.String())},
		Stdin: tty, Stdout: tty, Inject: inj, Started: func(pid int) { child.Store(int64(pid)) },
		injectWait: time.Hour, injectCap: time.Hour,
	})
	// The terminal is full once the child waits in its own write.
	var where string
	for deadline := time.Now().Add(20 * time.Second); where != strconv.Itoa(unix.SYS_WRITE); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child never waited on its full terminal (/proc/PID/syscall begins %q)", where)
		}
		if pid := child.Load(); pid != 0 {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
			where, _, _ = strings.Cut(string(b), " ")
		}
	}
	var asked sync.WaitGroup
	marks := []string{"<pane1>", "<pane2>", "<pane3>"}
	for _, m := range marks {
		asked.Add(1)
		go func() {
			defer asked.Done()
			if _, err := inj.Write([]byte(m)); err != nil {
				t.Error(err)
			}
		}()
	}
	asked.Wait() // a Write that waited for the terminal would hang here
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { _, _ = io.Copy(&out, master); close(read) }()
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	<-read
	got := out.String()
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, strings.ReplaceAll(line, "\n", "\r\n"), i)
	}
	rest := got
	for _, m := range marks {
		if n := strings.Count(got, m); n != 1 {
			t.Fatalf("%s written %d times, want once", m, n)
		}
		rest = strings.Replace(rest, m, "", 1)
	}
	if rest != want.String() {
		t.Fatalf("the agent's output was changed or reordered (%d bytes, want %d)", len(rest), want.Len())
	}
	for _, inside := range marksInside(got, marks) {
		t.Error(inside)
	}
}

// marksInside says, for each of marks (each in out once), whether it
// landed inside an escape sequence or a UTF-8 character of the rest of
// out: the agent's bytes. Each is judged on the agent's bytes alone up to
// it, without the other marks: a mark's own bytes end a sequence cut
// before it for a parser ("\x1b[3<p" is a whole CSI, "\x1b<" a whole
// escape), so of marks written together inside one, only the first was
// seen inside.
func marksInside(out string, marks []string) []string {
	var inside []string
	for _, m := range marks {
		agent := out[:strings.Index(out, m)]
		for _, other := range marks {
			agent = strings.Replace(agent, other, "", 1)
		}
		p := ansi.NewParser()
		for _, b := range []byte(agent) {
			p.Advance(b)
		}
		if p.State() != parser.GroundState || !utf8.ValidString(agent) {
			inside = append(inside, fmt.Sprintf("%s landed inside a sequence or a character, after %d bytes of the agent's: …%q", m, len(agent), agent[max(len(agent)-40, 0):]))
		}
	}
	return inside
}

// The check itself: a mark is inside whatever the marks written before it.
func TestMarksInside(t *testing.T) {
	marks := []string{"<pane1>", "<pane2>"}
	for _, c := range []struct {
		out  string
		want int
	}{
		{"\x1b[31mred<pane1><pane2>\x1b[0m", 0},
		{"<pane2>\x1b]8;;u\x1b\\<pane1>link", 0},
		{"ok \xe7\x8a\xb6<pane1> \xe7\x8a<pane2>\xb6", 1},
		{"\x1b[3<pane1><pane2>1m", 2}, // the flake's first bytes, with two marks
		{"\x1b]8;;u\x1b<pane2><pane1>\\link", 2},
		{"\x1b[31mred\x1b<pane1>[0m<pane2>", 1},
	} {
		if got := marksInside(c.out, marks); len(got) != c.want {
			t.Errorf("%q: %d marks inside, want %d: %q", c.out, len(got), c.want, got)
		}
	}
}
