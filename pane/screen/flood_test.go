package screen

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// A flood in pieces small enough to draw whole, each taken before the next
// arrives (the consumer keeps up): past FloodBytes the consumer stops
// drawing every byte and looks a few times a second, yet the screen the
// flood ends on is drawn as soon as output pauses, marked lossy, and the
// agent's calm redraws after it are drawn at once again.
func TestFollowThrottlesAFloodOfSmallBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := pty.NewTap(0)
		src := &countingSource{Tap: tap}
		f := startFollow(context.Background(), src, FollowOptions{Rows: 5, Cols: 40})
		const chunks = 2000 // 4 KiB each: 8 MiB
		line := strings.Repeat("x", 38) + "\r\n"
		chunk := []byte(strings.Repeat(line, 4096/len(line)))
		for i := 0; i < chunks; i++ {
			tap.Write(chunk)
			synctest.Wait() // the consumer took it, or rests
			time.Sleep(time.Millisecond)
		}
		taken := src.count()
		if taken > chunks/4 {
			t.Fatalf("the consumer took %d of %d flood chunks: it drew every byte", taken, chunks)
		}
		tap.Write([]byte("\x1b[2J\x1b[HTHE END"))
		start := time.Now()
		synctest.Wait()
		for !strings.HasPrefix(f.last().Text, "THE END") {
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		if d := time.Since(start); d > 2*defaultQuiet {
			t.Fatalf("the screen a flood ended on was drawn %v after the output paused, want within %v", d, 2*defaultQuiet)
		}
		if !f.last().Lossy {
			t.Fatal("the snapshot after a throttled flood is not marked lossy")
		}
		// The agent redraws calmly: each redraw is drawn at once.
		time.Sleep(time.Second)
		for _, text := range []string{"calm again", "and again"} {
			tap.Write([]byte("\x1b[2J\x1b[H" + text))
			synctest.Wait()
			if got := f.last(); !strings.HasPrefix(got.Text, text) {
				t.Fatalf("after a calm redraw: %+v", got)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := f.last(); got.Lossy {
			t.Fatalf("after a calm redraw: %+v", got)
		}
		tap.Close()
		<-f.done
	})
}

// lastLines keeps the last n line feeds and what follows them, across
// segments, never more than the limit.
func TestLastLines(t *testing.T) {
	segs := func(parts ...string) []pty.Segment {
		var s []pty.Segment
		for _, p := range parts {
			s = append(s, pty.Segment{Data: []byte(p)})
		}
		return s
	}
	cases := []struct {
		segs     []pty.Segment
		n, limit int
		want     string
	}{
		{segs("a\nb\nc\nd"), 1, 100, "c\nd"},
		{segs("a\nb\nc\nd"), 2, 100, "b\nc\nd"},
		{segs("a\nb\n", "c\nd"), 2, 100, "b\nc\nd"},
		{segs("a\nb\n", "", "c\nd\n"), 2, 100, "c\nd\n"},
		{segs("a\nb\n", "", "c\nd\n"), 3, 100, "b\nc\nd\n"},
		{segs("a\nb\nc\nd"), 9, 100, "a\nb\nc\nd"},
		{segs("a\nb\nc\nd"), 9, 3, "c\nd"},
		{segs("xxxx", "yy\nzz"), 5, 4, "y\nzz"},
		{segs("no line feeds"), 2, 5, "feeds"},
	}
	for _, c := range cases {
		var all []byte
		for _, s := range c.segs {
			all = append(all, s.Data...)
		}
		got := lastLines(c.segs, c.n, c.limit)
		if string(all[len(all)-got:]) != c.want {
			t.Errorf("lastLines(%q, %d, %d) keeps %q, want %q", all, c.n, c.limit, all[len(all)-got:], c.want)
		}
	}
}

// floodLines is n cooked lines ("\r\n") of mixed shapes: short, tabbed,
// wide characters, and longer than the screen is wide (they wrap).
func floodLines(n, cols int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "line %d", i)
		case 1:
			fmt.Fprintf(&b, "tab\there %d\tend", i)
		case 2:
			fmt.Fprintf(&b, "宽字符 %d é", i)
		case 3:
			fmt.Fprintf(&b, "%d %s", i, strings.Repeat("w", cols+cols/2))
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// A flood of plain lines too big to draw whole ends on the screen a
// terminal that saw every byte shows, whatever was on the screen before —
// and it is drawn on a cleared screen instead of scrolling once per line.
// With margins set, nothing is cleared: the rows outside them stay, as on
// a terminal. Output with escapes in it is never drawn that way.
func TestAFloodOfPlainLinesEndsOnTheTerminalsScreen(t *testing.T) {
	const rows, cols, maxFeed = 10, 40, 2 << 10
	flood := floodLines(400, cols)
	before := map[string]string{
		"blank":                                "",
		"full, cursor high":                    "\x1b[2J\x1b[H" + strings.Repeat("old old old old old old old old old\r\n", rows-1) + "\x1b[3;5H",
		"alternate screen":                     "\x1b[?1049h\x1b[2J\x1b[5;1Hstale tui frame",
		"margins":                              "\x1b[2J\x1b[1;8r\x1b[9;1Hstatus one\x1b[10;1Hstatus two\x1b[8;1H",
		"margins reset":                        "\x1b[1;8r\x1b[r\x1b[10;1Hgone",
		"top margin row 2":                     "\x1b[2J\x1b[2;10r\x1b[1;1Hheader\x1b[10;1H",
		"left/right margins":                   "\x1b[2J\x1b[?69h\x1b[5;30s\x1b[1;1Hedge\x1b[10;1H",
		"margins left on the alternate screen": "\x1b[?1049h\x1b[2;9r\x1b[?1049l\x1b[10;1Hmain",
		"unfinished DCS":                       "drawn\x1bP0;1q#0;2;0;0;0",
		"raw C1 OSC":                           "drawn\x9d0;a title without its end",
		"finished OSC":                         "\x1b]0;title\x07drawn",
		"OSC cancelled by CAN":                 "\x1b]0;title\x18drawn",
		"ESC right after ESC P":                "drawn\x1bP\x1b\\",
		"ESC then DEL":                         "drawn\x1b\x7f",
		"character cut short":                  "drawn\xe5\xae",
	}
	// Inside a sequence a terminal keeps reading the flood as part of it;
	// clearing the screen would end the sequence.
	kept := map[string]bool{"margins": true, "top margin row 2": true, "left/right margins": true,
		"unfinished DCS": true, "raw C1 OSC": true,
		// x/vt keeps an ESC right after ESC P as DCS data (a VT500 would
		// start a new sequence): the ST after it does not end the DCS.
		"ESC right after ESC P": true,
		// DEL after an ESC is ignored: the escape still waits for its byte.
		"ESC then DEL": true,
		// The flood's first bytes would complete the character.
		"character cut short": true}
	for name, prior := range before {
		t.Run(name, func(t *testing.T) {
			want := New(rows, cols)
			defer want.Close()
			_ = want.Write([]byte(prior))
			_ = want.Write(flood)

			got := New(rows, cols)
			defer got.Close()
			_ = got.Write([]byte(prior))
			// In pieces, as the tap hands them over.
			var b pty.Batch
			for p := flood; len(p) > 0; {
				n := min(len(p), 1000)
				b.Segments = append(b.Segments, pty.Segment{Data: p[:n]})
				p = p[n:]
			}
			fed, skipped := feed(got, b, maxFeed, t.Logf)
			if !fed || !skipped {
				t.Fatalf("feed: fed %v skipped %v, want a skipping draw", fed, skipped)
			}
			if g, w := got.Snapshot().Text, want.Snapshot().Text; g != w {
				t.Fatalf("screen after the flood:\n%s\n\nwant (every byte drawn):\n%s", g, w)
			}
			restarted := !kept[name]
			if (got.restarts == 1) != restarted {
				t.Fatalf("drawn on a cleared screen %d times, want %v", got.restarts, restarted)
			}
		})
	}
	t.Run("escapes", func(t *testing.T) {
		s := New(rows, cols)
		defer s.Close()
		colored := bytes.ReplaceAll(flood, []byte("line"), []byte("\x1b[1mline\x1b[m"))
		if _, skipped := feed(s, pty.Batch{Segments: []pty.Segment{{Data: colored}}}, maxFeed, t.Logf); !skipped || s.restarts != 0 {
			t.Fatalf("skipped %v, restarts %d: output with escapes must be drawn over the old screen", skipped, s.restarts)
		}
	})
}

// plainLines accepts text and C0 controls, refuses escapes, C1 controls,
// invalid UTF-8, resizes and too few lines.
func TestPlainLines(t *testing.T) {
	seg := func(s string) pty.Segment { return pty.Segment{Data: []byte(s)} }
	cases := []struct {
		name string
		segs []pty.Segment
		skip int
		want bool
	}{
		{"lines", []pty.Segment{seg("a\r\nb\tc\r\n\bd\r\n")}, 0, true},
		{"too few", []pty.Segment{seg("a\r\nb\r\n")}, 0, false},
		{"escape after the skip", []pty.Segment{seg("a\r\nb\r\nc\x1b[m\r\n")}, 0, false},
		{"escape skipped", []pty.Segment{seg("\x1b[31mred\r\n"), seg("a\r\nb\r\nc\r\n")}, 10, true},
		{"C1 CSI", []pty.Segment{seg("a\r\nb\r\n\u009b31mc\r\n")}, 0, false},
		{"latin text", []pty.Segment{seg("à\r\né\r\nü\u00a0\r\n")}, 0, true},
		{"invalid UTF-8", []pty.Segment{seg("a\r\nb\r\n\x9bc\r\n")}, 0, false},
		{"resize", []pty.Segment{{Resize: &pty.Size{Rows: 5, Cols: 5}}, seg("a\r\nb\r\nc\r\n")}, 0, false},
	}
	for _, c := range cases {
		if got := plainLines(c.segs, c.skip, 3); got != c.want {
			t.Errorf("%s: plainLines = %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzFloodOfPlainLines: lines of any printable text and tabs, cooked
// ("\r\n") and repeated into a flood, end on the screen a terminal that
// drew every byte shows, whatever the screen's size and what it showed.
func FuzzFloodOfPlainLines(f *testing.F) {
	f.Add([]byte("one\ntwo\tthree\n宽字符 é"), uint8(10), uint8(40), []byte("\x1b[3;5Hold"))
	f.Add([]byte("x"), uint8(1), uint8(1), []byte(""))
	f.Add([]byte("a very long line that wraps around the screen a few times over"), uint8(4), uint8(7), []byte("\x1b[?1049h"))
	f.Fuzz(func(t *testing.T, text []byte, rows, cols uint8, before []byte) {
		// Small enough that drawing every byte, the reference, stays fast.
		const maxFeed = 2 << 10
		r, c := 1+int(rows)%40, 1+int(cols)%120
		var lines [][]byte
		for _, l := range bytes.Split(bytes.ToValidUTF8(text, nil), []byte("\n")) {
			lines = append(lines, bytes.Map(func(ch rune) rune {
				if ch != '\t' && (ch < 0x20 || ch >= 0x7f && ch < 0xa0) {
					return -1
				}
				return ch
			}, l))
		}
		var flood []byte
		for len(flood) < 2*maxFeed || bytes.Count(flood, []byte("\n")) < 2*r+2 {
			for _, l := range lines {
				flood = append(append(flood, l...), '\r', '\n')
			}
		}
		// The reference draws every byte, in two writes split where feed
		// starts drawing: x/vt joins a character and its combining marks
		// only within one write, so the drawn part must be cut the same.
		want := New(r, c)
		defer want.Close()
		_ = want.Write(before)
		from := len(flood) - lastLines([]pty.Segment{{Data: flood}}, r+1, maxFeed)
		_ = want.Write(flood[:from])
		_ = want.Write(flood[from:])
		got := New(r, c)
		defer got.Close()
		_ = got.Write(before)
		if _, skipped := feed(got, pty.Batch{Segments: []pty.Segment{{Data: flood}}}, maxFeed, t.Logf); !skipped {
			t.Fatal("the flood was drawn whole")
		}
		if got.restarts == 0 || want.Suspect() || got.Suspect() {
			return // margins set by what came before, or an emulator panic: nothing to compare
		}
		if g, w := got.Snapshot().Text, want.Snapshot().Text; g != w {
			t.Fatalf("screen after the flood:\n%s\n\nwant (every byte drawn):\n%s", g, w)
		}
	})
}

// FuzzMirrorSkipsOnlyWhatKeepsItsState: the mirror parser, which steps over
// runs of ASCII in its ground state, ends in the state of a parser that
// took every byte, however the output is cut into writes.
func FuzzMirrorSkipsOnlyWhatKeepsItsState(f *testing.F) {
	f.Add([]byte("plain\r\n\x1bP\x1b\\more"), 3)
	f.Add([]byte("\x1b]0;t\x07状\xe5\xae"), 7)
	f.Add([]byte("\x1b\x7fA\x18\x9d0;x"), 1)
	f.Fuzz(func(t *testing.T, out []byte, cut int) {
		s := New(2, 10)
		defer s.Close()
		cut = int(uint(cut) % uint(len(out)+1))
		s.advanceMirror(out[:cut])
		s.advanceMirror(out[cut:])
		every := ansi.NewParser()
		for _, b := range out {
			every.Advance(b)
		}
		if got, want := s.mirror.State(), every.State(); got != want {
			t.Fatalf("mirror in state %d after %q, a parser given every byte in %d", got, out, want)
		}
	})
}

// Output arriving within a frame of a change is drawn as it comes and
// looked at once the frame ends, the newest screen then; output after a
// pause, after output that changed nothing, and the last output before
// the source closes are looked at at once.
func TestFollowLooksOnceAFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := pty.NewTap(0)
		f := startFollow(context.Background(), tap, FollowOptions{Rows: 2, Cols: 20})
		published := func() []string {
			f.mu.Lock()
			defer f.mu.Unlock()
			var texts []string
			for _, s := range f.snaps {
				texts = append(texts, strings.TrimRight(s.Text, "\n"))
			}
			return texts
		}
		want := func(step string, texts ...string) {
			t.Helper()
			synctest.Wait()
			if got := published(); !slices.Equal(got, texts) {
				t.Fatalf("%s: published %q, want %q", step, got, texts)
			}
		}
		tap.Write([]byte("a"))
		want("the first output", "a")
		// Typing faster than frames: every key is drawn, none looked at
		// until the frame that began with the last look ends.
		for _, key := range "bcdef" {
			time.Sleep(2 * time.Millisecond)
			tap.Write([]byte(string(key)))
			want("a key within the frame", "a")
		}
		time.Sleep(defaultFrame - 10*time.Millisecond - time.Nanosecond)
		want("just before the frame ends", "a")
		time.Sleep(time.Nanosecond)
		want("the frame's end", "a", "abcdef")
		// After a pause the next output is looked at at once.
		time.Sleep(time.Second)
		tap.Write([]byte("g"))
		want("after a pause", "a", "abcdef", "abcdefg")
		// Output that changes nothing visible holds nothing back: the
		// text right after it is looked at at once.
		time.Sleep(time.Second)
		tap.Write([]byte("\x1b[1;1H"))
		want("a cursor move", "a", "abcdef", "abcdefg")
		time.Sleep(time.Millisecond)
		tap.Write([]byte("h"))
		want("text right after a cursor move", "a", "abcdef", "abcdefg", "hbcdefg")
		// The last output is looked at when the source closes, not a
		// frame later.
		tap.Write([]byte("i"))
		want("a key within the frame", "a", "abcdef", "abcdefg", "hbcdefg")
		tap.Close()
		<-f.done
		if got := published(); !slices.Equal(got, []string{"a", "abcdef", "abcdefg", "hbcdefg", "hicdefg"}) {
			t.Fatalf("after the source closed: %q", got)
		}
	})
}

// With a Gap, a stream of small writes — each one signalling the source,
// far below a flood's rate — is taken at most once a gap, the writes of a
// gap together, and the last of them is still drawn.
func TestFollowTakesAtMostOnceAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := pty.NewTap(0)
		src := &countingSource{Tap: tap}
		ctx, cancel := context.WithCancel(context.Background())
		f := startFollow(ctx, src, FollowOptions{Rows: 5, Cols: 40, Gap: 2 * time.Millisecond})
		for i := range 200 { // one write every 100 µs for 20 ms: 60 bytes of 20 ms is no flood
			tap.Write([]byte(fmt.Sprintf("\r%03d", i)))
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if n := src.count(); n > 11 {
			t.Errorf("%d takes of 200 writes in 20 ms, want at most one a gap (11)", n)
		}
		if got := f.last().Text; !strings.HasPrefix(got, "199") {
			t.Errorf("the screen shows %q, want the last write", got)
		}
		cancel()
		<-f.done
	})
}

// Seen hears how far the screen is current with the output after every
// look, also one that changed nothing visible (Publish does not hear
// those), and only once the look happened: output drawn within a frame
// of a change is not seen before that frame ends.
func TestFollowSaysHowFarItHasSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := pty.NewTap(0)
		var mu sync.Mutex
		var seen uint64
		published, wentBack := 0, false
		ctx, cancel := context.WithCancel(context.Background())
		f := &follower{done: make(chan struct{})}
		go func() {
			defer close(f.done)
			Follow(ctx, tap, FollowOptions{Rows: 2, Cols: 20,
				Publish: func(Snapshot) { mu.Lock(); published++; mu.Unlock() },
				Seen: func(n uint64) {
					mu.Lock()
					wentBack = wentBack || n < seen
					seen = n
					mu.Unlock()
				}})
		}()
		want := func(step string, n uint64, looks int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if seen != n || published != looks || wentBack {
				t.Fatalf("%s: seen %d with %d snapshots published (went back: %v), want %d with %d", step, seen, published, wentBack, n, looks)
			}
		}
		tap.Write([]byte("a"))
		want("the first output", 1, 1)
		time.Sleep(2 * time.Millisecond)
		tap.Write([]byte("b")) // within the frame: drawn, not looked at
		want("within the frame", 1, 1)
		time.Sleep(defaultFrame)
		want("the frame's end", 2, 2)
		time.Sleep(time.Second)
		tap.Write([]byte("\x1b[1;1H")) // nothing visible changes
		want("a cursor move", 8, 2)
		cancel()
		<-f.done
	})
}

// A batch that took long earns rest only for the CPU it used. One whose
// look waited (here on Seen, as on a slow log write; under load, on a core)
// without working is followed by the next look as soon as output comes:
// resting four times the stall would hold back the verdict waiting for
// that look by as much. A batch that really worked that long still rests.
func TestFollowRestsOnlyForTheCPUABatchUsed(t *testing.T) {
	const stall = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		worked bool // the stall was CPU the process used
		// when "ab" is looked at, after "b" is written at 400 ms
		seenAt time.Duration
	}{
		{"a stall", false, 400 * time.Millisecond},
		{"heavy work", true, stall + maxRest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var cpu time.Duration // read and moved only on Follow's goroutine
				stalled := false
				tap := pty.NewTap(0)
				f := startFollow(context.Background(), tap, FollowOptions{Rows: 2, Cols: 20,
					cpu: func() time.Duration { return cpu },
					Seen: func(uint64) {
						if !stalled {
							stalled = true
							time.Sleep(stall)
							if tc.worked {
								cpu += stall
							}
						}
					}})
				begin := time.Now()
				lookedAt := func(text string) bool {
					f.mu.Lock()
					defer f.mu.Unlock()
					return slices.ContainsFunc(f.snaps, func(s Snapshot) bool { return strings.TrimRight(s.Text, "\n") == text })
				}
				tap.Write([]byte("a"))
				time.Sleep(400 * time.Millisecond)
				tap.Write([]byte("b"))
				for synctest.Wait(); !lookedAt("ab"); synctest.Wait() {
					time.Sleep(time.Millisecond)
				}
				if got := time.Since(begin); got != tc.seenAt {
					t.Errorf("\"ab\" looked at %v after the start, want %v", got, tc.seenAt)
				}
				tap.Close()
				<-f.done
			})
		})
	}
}
