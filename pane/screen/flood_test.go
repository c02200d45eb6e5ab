package screen

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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
