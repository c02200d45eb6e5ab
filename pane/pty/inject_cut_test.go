package pty

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cutSequences are what an agent draws that a notification must never land
// inside: each kind of escape sequence a TUI writes, UTF-8 characters, and
// sequences an agent running in tmux wraps for tmux's passthrough (as
// herdr-pi itself does), where tmux reads a doubled ESC as data.
var cutSequences = []string{
	"\x1b[38;5;196m",                    // CSI (SGR)
	"\x1b[?2026h",                       // CSI, private mode
	"\x1b]0;title\x07",                  // OSC ended by BEL
	"\x1b]8;;https://example.com\x1b\\", // OSC ended by ST (hyperlink)
	"\x1b]52;c;aGVsbG8=\x07",            // OSC 52 clipboard write
	"\x1bPq#0;2;0;0;0#0~~\x1b\\",        // DCS (sixel)
	"\x1b_Gf=100,a=T;AAAA\x1b\\",        // APC (kitty graphics)
	"\x1b(B",                            // ESC with an intermediate
	"\x1b7",                             // two-byte escape
	"状",                                 // a three-byte character
	"😀",                                 // a four-byte character
	"\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b\\\x1b\\", // OSC 9 through tmux, ended by ST
	"\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\",       // OSC 9 through tmux, ended by BEL
	"\x1bPtmux;\x1b\x1b[31m\x1b\\",            // CSI through tmux
	// OSC 9 through two tmux servers (a nested tmux), as osc.WrapTmux
	// writes it.
	"\x1bPtmux;\x1b\x1bPtmux;\x1b\x1b\x1b\x1b]9;hi\x1b\x1b\x1b\x1b\\\x1b\x1b\\\x1b\\",
}

// A notification due while the agent is half-way through drawing a
// sequence is written after it, wherever the sequence is cut: the agent
// writes each sequence in two parts, cut at every offset inside it, and
// stops between them until the injection has been asked for. The bounds
// on waiting are far away, so only the boundary decides.
func TestInjectNeverLandsInsideASequenceCutAnywhere(t *testing.T) {
	type round struct{ head, tail string }
	var rounds []round
	for _, s := range cutSequences {
		for k := 1; k < len(s); k++ {
			// The tail ends with a complete sequence and a plain byte, so
			// the boundary is clean after it whatever it made of the cut.
			rounds = append(rounds, round{s[:k], s[k:] + "\x1b[0m|"})
		}
	}
	dir := t.TempDir()
	for i, r := range rounds {
		for name, data := range map[string]string{"h": r.head, "t": r.tail} {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%d", name, i)), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	script := fmt.Sprintf(`stty -echo; cd %s; printf ready; i=0; while [ $i -lt %d ]; do read x; cat h$i; read x; cat t$i; i=$((i+1)); done; read x`, dir, len(rounds))
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	_, done := start(t, Options{Argv: []string{"sh", "-c", script}, Stdin: o.tty, Stdout: o.tty, Inject: inj,
		injectWait: time.Hour, injectCap: time.Hour})
	o.waitFor("ready")
	want := o.output()
	for i, r := range rounds {
		mark := fmt.Sprintf("<n%d>", i)
		// The agent draws the head only when told, so that it never comes
		// in one read with the last round's tail.
		if _, err := o.master.Write([]byte("\r")); err != nil {
			t.Fatal(err)
		}
		o.waitFor(want + r.head)
		if _, err := inj.Write([]byte(mark)); err != nil {
			t.Fatal(err)
		}
		if _, err := o.master.Write([]byte("\r")); err != nil {
			t.Fatal(err)
		}
		o.waitFor(mark)
		seq, tail := r.head+strings.TrimSuffix(r.tail, "\x1b[0m|"), "\x1b[0m|"
		n := len(want) + len(seq) + len(tail) + len(mark)
		for deadline := time.Now().Add(10 * time.Second); len(o.output()) < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		got := o.output()[len(want):]
		if at := strings.Index(got, mark); at < len(seq) || strings.Replace(got, mark, "", 1) != seq+tail {
			t.Errorf("sequence %q cut after %d bytes: the notification landed inside it: %q", seq, len(r.head), got)
		}
		want += got
	}
	if _, err := o.master.Write([]byte("\r\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}
