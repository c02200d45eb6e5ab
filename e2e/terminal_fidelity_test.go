package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// What a demanding terminal user does through herdr-pi wrap, through a
// real outer pty: the wrapper must be a wire, in both directions.

// The queries a TUI sends at start (DA1, cursor position, colours, kitty
// keyboard, XTVERSION, DECRQM, Pi's status channel) reach the outer
// terminal byte for byte, and its answers reach the child byte for byte,
// with nothing else before them: herdr-pi answers nothing itself (its
// shadow screen would, and drops what it would say), nor holds an answer
// back waiting for more input.
func TestWrapPassesTerminalQueriesAndTheirAnswers(t *testing.T) {
	queries := "\x1b[c" + "\x1b[6n" + "\x1b]10;?\x1b\\" + "\x1b]11;?\x07" + "\x1b[?u" + "\x1b[>0q" +
		"\x1b[?2026$p" + "\x1b]7501;?\x1b\\" + "\x1b[>c"
	answers := "\x1b]7501;?\x1b\\" + "\x1b[?1u" + "\x1b[?62;22;52c" + "\x1b[12;34R" +
		"\x1b]10;rgb:ffff/ffff/ffff\x1b\\" + "\x1b]11;rgb:1e1e/1e1e/2e2e\x07" + "\x1bP>|xterm(400)\x1b\\" +
		"\x1b[?2026;2$y" + "\x1b[>41;400;0c"
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("raw", "print "+escapeForScript(queries), fmt.Sprintf("readhex %d", len(answers)), "exit 0")
	r.waitScreen(queries)
	if got := r.bytes(); string(got) != queries {
		t.Fatalf("the outer terminal got %q, want exactly the child's queries %q", got, queries)
	}
	r.send(answers)
	want := fmt.Sprintf("hex: %x\r\n", answers)
	r.waitScreen("hex: ")
	r.finish(0, true)
	if got := string(r.bytes()); got != queries+want {
		t.Fatalf("the child read other than the terminal's answers:\n got %q\nwant %q", strings.TrimPrefix(got, queries), want)
	}
}

// escapeForScript writes b for fakeagent's print (\xHH for every control).
func escapeForScript(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '\\' || c == ';' || c >= 0x7f {
			fmt.Fprintf(&b, `\x%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// A person pastes a mebibyte (every byte value in it, in a bracketed
// paste), moves and clicks the mouse (SGR 1006), switches focus away and
// back, presses kitty-encoded keys and pastes once more, while the agent
// floods the screen with colour, wide and combining characters, emoji and
// hyperlinks, and a notification is written to the terminal meanwhile.
// Every input byte reaches the agent, in order; the notification arrives
// whole, once, where the terminal's parser is at rest (not inside the
// agent's sequences or characters).
func TestWrapPassesEveryInputByteWhileTheChildFloods(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 11))
	everyByte := make([]byte, 256)
	for i := range everyByte {
		everyByte[i] = byte(i)
	}
	paste := make([]byte, 1<<20)
	for i := range paste {
		paste[i] = byte(rnd.IntN(256))
	}
	copy(paste[4096:], everyByte)
	var in bytes.Buffer
	in.WriteString("\x1b[200~")
	in.Write(paste)
	in.WriteString("\x1b[201~")
	in.WriteString("\x1b[<35;12;5M\x1b[<0;12;5M\x1b[<0;12;5m\x1b[<64;3;9M") // move, press, release, wheel
	in.WriteString("\x1b[O\x1b[I")                                          // focus out, in
	in.WriteString("\x1b[97;5u\x1b[13;2u\x1b[27u\x1b[57441;2u\x1b[1;5A")    // ctrl+a, shift+enter, esc, shift (press), ctrl+up
	in.WriteString("\x1b[200~")
	in.Write(everyByte)
	in.WriteString("\x1b[201~")
	input := in.Bytes()

	const notice = "\x1b]777;notify;Pi needs your input;"
	flood := `\e[38;2;255;128;0m状態\e[0m e\xcc\x81 👩\xe2\x80\x8d💻 \e]8;;https://example.com/x\e\\link\e]8;;\e\\ \e[?2026h\e[2K\e[?2026l─\r\n`
	// The output is too much to keep: a VT parser reads it as it comes,
	// and at every ESC notes whether the parser was at rest before it.
	var (
		vt       = ansi.NewParser()
		cand     []byte // from the last ESC, while it may be the notification
		atRest   bool   // the parser was in its ground state before that ESC
		restless []string
		found    int
		mu       sync.Mutex
		last     []byte // the newest output, for the agent's sum
	)
	vt.SetDataSize(0)
	onBytes := func(p []byte) {
		for _, b := range p {
			if b == 0x1b {
				cand, atRest = append(cand[:0], b), vt.State() == parser.GroundState
				vt.Advance(b)
				continue
			}
			vt.Advance(b)
			if len(cand) > 0 && len(cand) < len(notice) {
				if cand = append(cand, b); len(cand) == len(notice) && string(cand) == notice {
					found++
					if !atRest {
						restless = append(restless, fmt.Sprintf("notification #%d began in parser state %s", found, parser.StateNames[vt.State()]))
					}
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		last = append(last, p...)
		if len(last) > 8<<10 {
			last = append(last[:0], last[len(last)-4<<10:]...)
		}
	}
	tail := func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(last)
	}

	e := newFaultEnv(t, nil)
	e.env = append(e.env, "TERM_PROGRAM=WarpTerminal", shownAsPi(t))
	script := agentScript(t, "raw", "print ready\\r\\n", "flood "+flood,
		"run herdr-pi waiting start --source paste --id 1 --label approve",
		fmt.Sprintf("readsum %d", len(input)), "flood-stop", "print \\r\\n", "exit 0")
	r := e.start(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", script}, OnBytes: onBytes})
	for deadline := time.Now().Add(30 * time.Second); r.count() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
	}
	if _, err := r.master.Write(input); err != nil {
		t.Fatal(err)
	}
	// The agent reads exactly what was sent: input lost on the way would
	// leave it waiting.
	for deadline := time.Now().Add(time.Minute); !bytes.Contains(tail(), []byte("sum: ")); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent is still waiting for input: not all %d bytes reached it", len(input))
		}
	}
	r.finish(0, false)
	// onBytes ran on the reader, which has finished.
	if found != 1 || len(restless) > 0 {
		t.Errorf("notifications seen: %d, want 1 at rest; %v", found, restless)
	}
	if !bytes.Contains(tail(), []byte(fmt.Sprintf("sum: %x\r\n", sha256.Sum256(input)))) {
		t.Errorf("the agent read other input than was typed (%d bytes sent); its output ends:\n%q", len(input), tail())
	}
}

// The terminal goes to a single cell and then to a thousand columns by five
// hundred rows while the agent draws: the agent sees each size, and the
// wrapper (its shadow screen included) carries on and reports to Herdr.
func TestWrapResizesToOneCellAndToAHugeWindow(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", `flood \e[H\e[2J状態 \e[999;999Hx\e[1;1H👩\xe2\x80\x8d💻\r\n`, "readline", "flood-stop", "size",
		"flood \\e[H─\\e[500;1000H状\\r\\n", "readline", "flood-stop", "size", "exit 5")
	r.waitScreen("ready")
	for i, s := range []struct{ rows, cols uint16 }{{1, 1}, {500, 1000}} {
		if err := setSize(r.master, s.rows, s.cols); err != nil {
			t.Fatal(err)
		}
		r.send("\r")
		for deadline := time.Now().Add(30 * time.Second); len(sizeLines(r.bytes())) <= i; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the agent never said its size; output:\n%q", tailOf(r.bytes()))
			}
		}
		if got := sizeLines(r.bytes()); got[i] != fmt.Sprintf("size: %d %d", s.rows, s.cols) {
			t.Fatalf("the agent, asked after the resize to %dx%d, saw %q", s.cols, s.rows, got)
		}
	}
	r.finish(5, true)
}

// sizeLines lists the "size: ROWS COLS" lines the agent printed.
func sizeLines(out []byte) []string {
	return regexp.MustCompile(`size: \d+ \d+`).FindAllString(string(out), -1)
}

// The agent crashes in the alternate screen with mouse reporting, bracketed
// paste and the kitty keyboard on. The terminal's line mode comes back
// (raw off: finish checks it), and the screen modes stay as the agent left
// them: herdr-pi writes nothing of its own on the way out, exactly as
// util-linux script does and as the agent would leave a bare terminal.
// Undoing them would need knowing which the terminal had before; `reset`
// does it (docs/troubleshooting.md).
func TestWrapAgentCrashingInTheAlternateScreen(t *testing.T) {
	crash := []string{"sh", "-c", `stty raw -echo; printf '\033[?1049h\033[?1000h\033[?1006h\033[?2004h\033[>1u\033[?25l\033[2J\033[Hdrawn'; kill -SEGV $$`}
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	bare, err := startOuter(outerOptions{Argv: crash, Env: e.env, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := bare.wait(30 * time.Second); err != nil || status != 139 {
		t.Fatalf("bare: status %d, %v", status, err)
	}
	r := e.start(outerOptions{Argv: append([]string{"herdr-pi", "wrap", "--"}, crash...), Keep: true})
	r.finish(139, true)
	if got, want := r.bytes(), bare.bytes(); !bytes.Equal(got, want) {
		t.Fatalf("the terminal got other bytes than from the bare agent:\n got %q\nwant %q", got, want)
	}
}
