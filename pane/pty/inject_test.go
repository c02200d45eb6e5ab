package pty

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

func TestBoundary(t *testing.T) {
	cases := []struct {
		chunks []string
		clean  bool
	}{
		{[]string{"plain text"}, true},
		{[]string{"\x1b[31"}, false},
		{[]string{"\x1b[31", "m"}, false}, // no ESC in the second chunk: unsure, so not clean
		{[]string{"\x1b[31", "\x1b[0m"}, true},
		{[]string{"a\x1b[?2026l"}, true},
		{[]string{"\x1b]0;title"}, false},
		{[]string{"\x1b]0;title\x07"}, true},
		{[]string{"\x1b]0;title\x1b\\"}, true},
		{[]string{"\x1bP+q"}, false},
		{[]string{"\x1b(B"}, true},
		{[]string{"\x1b("}, false},
		{[]string{"\x1b "}, false}, // SP is an intermediate too: ESC SP F is unfinished
		{[]string{"\x1b F"}, true},
		{[]string{"\x1b"}, false},
		{[]string{"\x1b7"}, true},
		{[]string{"ok 状"}, true},
		{[]string{"ok \xe7\x8a"}, false},
		{[]string{"\x1b[0m😀"}, true},
		{[]string{"\x1b[0m\xf0\x9f\x98"}, false},
		// C0 controls inside a sequence do not end it; CAN and SUB do.
		{[]string{"\x1b\b"}, false},
		{[]string{"\x1b\b7"}, true},
		{[]string{"\x1b[1\n"}, false},
		{[]string{"\x1b[1\nm"}, true},
		{[]string{"\x1b(\r"}, false},
		{[]string{"\x1b]0;t\x18"}, true},
		{[]string{"\x1bPq#0\x1a"}, true},
		{[]string{"\x1b\x18"}, true},
		// DEL after the ESC is ignored: the escape still waits for its byte.
		{[]string{"\x1b\x7f"}, false},
		{[]string{"\x1b\x7f7"}, true},
		{[]string{"\x1b\x7f\x18"}, true},
		// A doubled ESC is tmux's passthrough: not the end of anything
		// until the single ESC \ that closes the wrapper.
		{[]string{"\x1bPtmux;\x1b\x1b]9;hi\x07"}, false},
		{[]string{"\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b\\"}, false},
		{[]string{"\x1bPtmux;\x1b", "\x1b]9;hi\x07"}, false},
		{[]string{"\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b\\\x1b\\"}, true},
		{[]string{"\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b", "\\\x1b\\"}, true},
	}
	for _, c := range cases {
		b := NewBoundary()
		for _, ch := range c.chunks {
			b.Observe([]byte(ch))
		}
		if b.clean != c.clean {
			t.Errorf("%q: clean=%v, want %v", c.chunks, b.clean, c.clean)
		}
	}
}

// An injection asked for while the child is in the middle of an escape
// sequence waits until the sequence is complete.
func TestInjectWaitsForCleanBoundary(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	// The child finishes its sequence only when told (a line on stdin,
	// not echoed), and the bound on waiting is far away: no clock decides.
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start\033[3'; read x; printf '1mX\033[0m'; sleep 0.2; printf end`},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, injectWait: time.Hour,
	})
	o.waitFor("start\x1b[3")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.master.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	o.waitFor("end")
	got := o.output()
	if !strings.Contains(got, "\x1b[31mX") || strings.Index(got, "<INJ>") < strings.Index(got, "1mX") {
		t.Fatalf("injection tore the sequence or came early: %q", got)
	}
}

// Injections also reach the terminal while the child is silent.
func TestInjectWhileIdleAndAtExit(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	// The child waits for a line: it stays silent (and alive) until the
	// injection has reached the terminal.
	_, done := start(t, Options{Argv: []string{"sh", "-c", `stty -echo; echo ready; read x`}, Stdin: o.tty, Stdout: o.tty, Inject: inj})
	o.waitFor("ready")
	_, _ = inj.Write([]byte("<idle>"))
	o.waitFor("<idle>")
	if _, err := o.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// Bytes queued before the Run starts (or while none runs) reach the
// terminal while the child runs, not only when it exits.
func TestInjectQueuedBeforeRun(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	if _, err := inj.Write([]byte("<early>")); err != nil {
		t.Fatal(err)
	}
	_, done := start(t, Options{Argv: []string{"sh", "-c", `read x; echo done`}, Stdin: o.tty, Stdout: o.tty, Inject: inj})
	o.waitFor("<early>")
	if _, err := o.master.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// FuzzBoundary: any chunking of any bytes is classified without panicking,
// and text ending in plain ASCII after a complete sequence is clean —
// unless the output before ended with ESC, which doubles the sequence's
// ESC (tmux's passthrough: see Boundary).
func FuzzBoundary(f *testing.F) {
	f.Add([]byte("\x1b[31mhello"), 3)
	f.Add([]byte("\x1b]0;t\x07\xe7\x8a\xb6"), 5)
	f.Add([]byte("\x1bP\x1b\\"), 1)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		b := NewBoundary()
		split = int(uint(split) % uint(len(data)+1))
		b.Observe(data[:split])
		b.Observe(data[split:])
		b.Observe([]byte(".\x1b[0mok"))
		if !b.clean {
			t.Fatalf("a complete SGR and ASCII must end clean")
		}
	})
}

// FuzzBoundaryNeverCleanInsideASequence: whenever the boundary says clean,
// a VT500 parser fed the same 7-bit output is in its ground state, however
// the output is cut into chunks. x/ansi's parser is the reference, except
// where it departs from a VT500 on purpose: it keeps an ESC right after
// ESC P as DCS data (a VT500 starts a new sequence), so such output is not
// judged. (The boundary may say "not clean" where the parser is in its
// ground state: that only delays an injection.)
func FuzzBoundaryNeverCleanInsideASequence(f *testing.F) {
	f.Add([]byte("\x1b[31mred\x1b]0;t\x07ok"), 5)
	f.Add([]byte("\x1b\x7f"), 0)
	f.Add([]byte("\x1bP1$r\x1b\\ok\x1b(B"), 3)
	f.Fuzz(func(t *testing.T, out []byte, cut int) {
		for _, b := range out {
			if b >= 0x80 {
				return // UTF-8 and C1 are judged by other tests
			}
		}
		vt500 := ansi.NewParser()
		for _, b := range out {
			if vt500.State() == parser.DcsEntryState && b == 0x1b {
				return
			}
			vt500.Advance(b)
		}
		cut = int(uint(cut) % uint(len(out)+1))
		bd := NewBoundary()
		bd.Observe(out[:cut])
		bd.Observe(out[cut:])
		if bd.Clean() && vt500.State() != parser.GroundState {
			t.Fatalf("%q (cut at %d): clean, but a terminal's parser is in state %s", out, cut, vt500.StateName())
		}
	})
}

// lastESC finds what bytes.LastIndexByte finds, wherever the ESCs are.
func TestLastESC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range 5000 {
		n := rng.IntN(600)
		if k%5 == 0 {
			n = rng.IntN(20000) // past every window
		}
		p := make([]byte, n)
		for i := range p {
			p[i] = 'a'
			if rng.IntN(1+rng.IntN(200)) == 0 {
				p[i] = 0x1b
			}
		}
		if got, want := lastESC(p), bytes.LastIndexByte(p, 0x1b); got != want {
			t.Fatalf("lastESC(%q) = %d, want %d", p, got, want)
		}
	}
}

// BenchmarkLastESC times lastESC on a 4 KiB chunk of output, the size the
// copy loop reads: plain text (no ESC), a TUI's (an ESC every 13 bytes)
// and random bytes with escapes (an ESC every 44 bytes or so, often none
// in the last 64).
func BenchmarkLastESC(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	chunk := func(every int) []byte {
		p := make([]byte, 4096)
		for i := range p {
			p[i] = 'a' + byte(rng.IntN(26))
			if every > 0 && rng.IntN(every) == 0 {
				p[i] = 0x1b
			}
		}
		return p
	}
	for _, c := range []struct {
		name  string
		every int
	}{{"plain", 0}, {"tui", 13}, {"random-escapes", 44}} {
		// Many chunks, so the ESC nearest the end falls everywhere.
		ps := make([][]byte, 64)
		for i := range ps {
			ps[i] = chunk(c.every)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4096)
			for i := 0; b.Loop(); i++ {
				lastESC(ps[i%len(ps)])
			}
		})
	}
}

// FuzzBoundaryNeverCleanInsideTmuxPassthrough: a sequence an agent in tmux
// wraps for tmux's passthrough (ESC P tmux; the payload with every ESC
// doubled, ESC \\) is one DCS to tmux, whatever the payload holds, so
// cut anywhere inside it the boundary is not clean; after it and a
// complete sequence, it is.
// CAN and SUB are left out of the payload: a terminal's parser reads them
// as the end of a sequence, and the boundary follows it there.
func FuzzBoundaryNeverCleanInsideTmuxPassthrough(f *testing.F) {
	f.Add([]byte("\x1b]9;hi\x1b\\"), 5)
	f.Add([]byte("\x1b]9;hi\x07"), 9)
	f.Add([]byte("\x1bPtmux;\x1b]9;x\x1b\\\x1b\\"), 12)
	f.Fuzz(func(t *testing.T, payload []byte, cut int) {
		var w bytes.Buffer
		w.WriteString("\x1bPtmux;")
		for _, c := range payload {
			if c == 0x18 || c == 0x1a {
				return
			}
			if c == 0x1b {
				w.WriteByte(0x1b)
			}
			w.WriteByte(c)
		}
		w.WriteString("\x1b\\")
		seq := w.Bytes()
		cut = 1 + int(uint(cut)%uint(len(seq)-1))
		b := NewBoundary()
		b.Observe([]byte("ok"))
		b.Observe(seq[:cut])
		if b.Clean() {
			t.Fatalf("%q cut after %d bytes: clean inside tmux's passthrough", seq, cut)
		}
		// A chunk without an ESC (the ST's backslash alone) leaves the
		// boundary unsure; the next sequence settles it.
		b.Observe(seq[cut:])
		b.Observe([]byte("\x1b[0m"))
		if !b.Clean() {
			t.Fatalf("%q: not clean after tmux's passthrough ended", seq)
		}
	})
}
