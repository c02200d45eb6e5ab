package screen

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/pty"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func lines(s Snapshot) []string { return strings.Split(s.Text, "\n") }

func TestSnapshotShowsTheScreen(t *testing.T) {
	s := New(5, 20)
	defer s.Close()
	must(t, s.Write([]byte("hello   \r\n\x1b[31m状😀X\x1b[0m\r\n\x1b[5;1H── ⠋ Working ──")))
	got := lines(s.Snapshot())
	want := []string{"hello", "状😀X", "", "", "── ⠋ Working ──"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("screen %q, want %q", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Sequences split across reads land the same as when written whole.
func TestSplitWritesAtEveryOffset(t *testing.T) {
	stream := []byte("ab状\x1b[31mX\x1b[0m\x1b]0;π - proj\x07\x1b]9;4;3;\x07\x1b[2;3H⠋ Working...\x1b[?2026h\x1b[K\x1b[?2026l")
	whole := New(4, 30)
	must(t, whole.Write(stream))
	want := whole.Snapshot()
	whole.Close()
	for i := 1; i < len(stream); i++ {
		s := New(4, 30)
		must(t, s.Write(stream[:i]))
		must(t, s.Write(stream[i:]))
		if got := s.Snapshot(); !got.same(want) {
			t.Errorf("split at %d: %+v, want %+v", i, got, want)
		}
		s.Close()
	}
	if want.Title != "π - proj" || want.Progress != "4;3;" {
		t.Fatalf("title %q progress %q", want.Title, want.Progress)
	}
}

func TestTitleAndProgress(t *testing.T) {
	s := New(3, 10)
	defer s.Close()
	must(t, s.Write([]byte("\x1b]2;a;b;c\x1b\\\x1b]9;hello\x07\x1b]9;4;1;-1\x07")))
	if sn := s.Snapshot(); sn.Title != "a;b;c" || sn.Progress != "4;1;-1" {
		t.Fatalf("title %q progress %q", sn.Title, sn.Progress)
	}
	// An OSC 9 notification is not progress.
	must(t, s.Write([]byte("\x1b]9;done\x07\x1b]0;t2\x07\x1b]9;4;0;\x07")))
	if sn := s.Snapshot(); sn.Title != "t2" || sn.Progress != "4;0;" {
		t.Fatalf("title %q progress %q", sn.Title, sn.Progress)
	}
	// A bare OSC 9;4 is progress too (cleared, no parameters).
	must(t, s.Write([]byte("\x1b]9;4\x07")))
	if sn := s.Snapshot(); sn.Progress != "4" {
		t.Fatalf("progress %q after a bare OSC 9;4", sn.Progress)
	}
}

// Queries the emulator would answer must not block it: the replies are
// drained and dropped.
func TestQueriesDoNotBlock(t *testing.T) {
	s := New(24, 80)
	defer s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100; i++ {
			_ = s.Write([]byte("\x1b[6n\x1b[c\x1b[>c\x1b[?2026$p\x1b]10;?\x07\x1b]11;?\x07x"))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("emulator blocked on its query replies")
	}
}

// A sequence known to panic x/vt is recovered; the screen is rebuilt at
// its size and says nothing until fresh output is drawn.
func TestPanicRebuildsAndGoesSuspect(t *testing.T) {
	s := New(24, 80)
	defer s.Close()
	must(t, s.Write([]byte("\x1b]0;kept\x07before")))
	err := s.Write([]byte("\x1b[1;100r\x1b[5S"))
	if err == nil {
		t.Fatal("the known panicking sequence did not panic; the guard is untested")
	}
	if !s.Suspect() || s.Panics() == 0 {
		t.Fatalf("suspect %v panics %d", s.Suspect(), s.Panics())
	}
	sn := s.Snapshot()
	if strings.TrimSpace(sn.Text) != "" || sn.Rows != 24 || sn.Cols != 80 || sn.Title != "kept" {
		t.Fatalf("after rebuild: %+v", sn)
	}
	must(t, s.Write([]byte("after")))
	if s.Suspect() || !strings.HasPrefix(s.Snapshot().Text, "after") {
		t.Fatal("fresh output did not bring the screen back")
	}
}

// follow runs Follow on a real tap and collects what it publishes.
type follower struct {
	mu    sync.Mutex
	snaps []Snapshot
	done  chan struct{}
}

// countingSource counts the batches taken from a tap.
type countingSource struct {
	*pty.Tap
	mu    sync.Mutex
	takes int
}

func (c *countingSource) Take() pty.Batch {
	b := c.Tap.Take()
	c.mu.Lock()
	c.takes++
	c.mu.Unlock()
	return b
}

func (c *countingSource) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takes
}

func startFollow(ctx context.Context, tap Source, o FollowOptions) *follower {
	f := &follower{done: make(chan struct{})}
	o.Publish = func(s Snapshot) {
		f.mu.Lock()
		f.snaps = append(f.snaps, s)
		f.mu.Unlock()
	}
	go func() {
		defer close(f.done)
		Follow(ctx, tap, o)
	}()
	return f
}

func (f *follower) last() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.snaps) == 0 {
		return Snapshot{}
	}
	return f.snaps[len(f.snaps)-1]
}

func TestFollowAppliesResizesInBand(t *testing.T) {
	tap := pty.NewTap(0)
	f := startFollow(context.Background(), tap, FollowOptions{Rows: 3, Cols: 10})
	tap.Write([]byte("abc"))
	tap.Resize(pty.Size{Rows: 5, Cols: 40})
	tap.Write([]byte("\x1b[5;1Hbottom row of a wider screen"))
	tap.Close()
	<-f.done
	got := f.last()
	if got.Rows != 5 || got.Cols != 40 || !strings.HasSuffix(got.Text, "\nbottom row of a wider screen") {
		t.Fatalf("last snapshot %+v", got)
	}
}

func TestFollowPublishesOnlyChanges(t *testing.T) {
	tap := pty.NewTap(0)
	f := startFollow(context.Background(), tap, FollowOptions{Rows: 3, Cols: 10})
	for i := 0; i < 5; i++ {
		tap.Write([]byte("\x1b[1;1Hsame"))
		time.Sleep(5 * time.Millisecond)
	}
	tap.Close()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.snaps) != 1 {
		t.Fatalf("published %d snapshots for one unchanged screen", len(f.snaps))
	}
}

// Of a batch larger than MaxFeed only the newest bytes are drawn, and the
// snapshot says it is lossy; when output stops the screen shows the end.
func TestFollowSkipsToTheNewestBytes(t *testing.T) {
	tap := pty.NewTap(1 << 20)
	var stream bytes.Buffer
	for i := 0; i < 20000; i++ {
		stream.WriteString("\x1b[2;1Hline ")
		stream.WriteString(strings.Repeat("x", i%50))
		stream.WriteString("\x1b[K\r\n")
	}
	stream.WriteString("\x1b[2J\x1b[1;1HTHE END")
	tap.Write(stream.Bytes())
	tap.Close()
	f := startFollow(context.Background(), tap, FollowOptions{Rows: 4, Cols: 60, MaxFeed: 4096})
	<-f.done
	got := f.last()
	if !strings.HasPrefix(got.Text, "THE END") || !got.Lossy {
		t.Fatalf("last snapshot %+v", got)
	}
}

func TestFollowStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tap := pty.NewTap(0)
	f := startFollow(ctx, tap, FollowOptions{Rows: 3, Cols: 10})
	cancel()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow ignored its context")
	}
}

// Random bytes biased towards escape sequences, split at random points and
// interleaved with random resizes, never panic out of Follow, and memory
// stays bounded while megabytes flow.
func TestFollowSurvivesGarbageFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood test")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tap := pty.NewTap(1 << 20)
	src := &countingSource{Tap: tap}
	f := startFollow(context.Background(), src, FollowOptions{Rows: 24, Cols: 80})
	var peak uint64
	var ms runtime.MemStats
	n := 2000
	if raceEnabled {
		n = 60
	}
	for i := 0; i < n; i++ {
		tap.Write(garbage(rng, 2+rng.IntN(8192)))
		if rng.IntN(20) == 0 {
			tap.Resize(pty.Size{Rows: uint16(1 + rng.IntN(80)), Cols: uint16(1 + rng.IntN(250))})
		}
		if i%100 == 0 {
			// The live heap, not what the collector has yet to free:
			// resizes churn through megabytes of cells, and on a loaded
			// machine the heap in use ran to 187 MiB with nothing kept.
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	// Once the flood has been taken, the agent draws a calm screen. It
	// ends whatever string sequence the garbage left open, as a real
	// terminal would need too.
	for seen := src.count(); src.count() == seen; {
		time.Sleep(time.Millisecond)
	}
	tap.Write([]byte("\x07\x1b\\\x18\x1b[0m\x1b[r\x1b[2J\x1b[Hcalm"))
	tap.Close()
	<-f.done
	if !strings.Contains(f.last().Text, "calm") {
		t.Fatalf("did not catch up after the flood: %q", f.last().Text)
	}
	t.Logf("live heap peak %d KiB", peak>>10)
	if peak > 64<<20 {
		t.Fatalf("the live heap peaked at %d MiB", peak>>20)
	}
}

var fragments = []string{
	"\x1b[", "\x1b]", "\x1bP", "\x1b[?", ";", "1", "100", "r", "S", "T", "m", "H", "J", "K", "L", "M", "@", "P",
	"\x07", "\x1b\\", "\r\n", "状", "😀", "⠋", "─", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?2026h", "\x1b[6n",
	"-5", "\x1b[1;100r", "\x9b", "\xff", "\t", "\b",
}

func garbage(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		if rng.IntN(3) == 0 {
			b.WriteByte(byte(rng.IntN(256)))
		} else {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
	}
	return b.Bytes()
}

// FuzzFeed drives the screen with arbitrary bytes, split points and
// resizes: no panic may escape and the snapshot always has the screen's
// row count.
func FuzzFeed(f *testing.F) {
	f.Add([]byte("\x1b[1;100r\x1b[5S"), uint16(24), uint16(80), uint8(3))
	f.Add([]byte("ab状\x1b[31mX\x1b[0m\x1b]0;t\x07"), uint16(2), uint16(3), uint8(1))
	f.Add([]byte("\x1b[?1049h\x1b[10;1H──\x1b[?1049l"), uint16(1), uint16(1), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, rows, cols uint16, split uint8) {
		rows, cols = 1+rows%120, 1+cols%300
		s := New(int(rows), int(cols))
		defer s.Close()
		step := 1 + int(split)
		for i := 0; i < len(data); i += step {
			_ = s.Write(data[i:min(len(data), i+step)])
			if i%(3*step) == 0 {
				_ = s.Resize(1+int(data[i])%60, 1+int(split)%200)
			}
		}
		sn := s.Snapshot()
		if !s.Suspect() && len(lines(sn)) != sn.Rows {
			t.Fatalf("%d lines for %d rows", len(lines(sn)), sn.Rows)
		}
	})
}

// A terminal may claim any size up to 65535x65535; the shadow screen stays
// within its bound, at start and on a resize, and still draws.
func TestScreenSizeIsBounded(t *testing.T) {
	s := New(60000, 60000)
	defer s.Close()
	if snap := s.Snapshot(); snap.Rows != MaxRows || snap.Cols != MaxCols {
		t.Fatalf("New(60000, 60000) is %dx%d, want %dx%d", snap.Rows, snap.Cols, MaxRows, MaxCols)
	}
	must(t, s.Resize(10, 20))
	must(t, s.Resize(65535, 65535))
	must(t, s.Write([]byte("\x1b[65535;1Hbottom")))
	snap := s.Snapshot()
	if snap.Rows != MaxRows || snap.Cols != MaxCols {
		t.Fatalf("after Resize(65535, 65535): %dx%d, want %dx%d", snap.Rows, snap.Cols, MaxRows, MaxCols)
	}
	if l := lines(snap); l[len(l)-1] != "bottom" {
		t.Fatalf("last row %q, want the text drawn past the bound", l[len(l)-1])
	}
	must(t, s.Resize(0, -3))
	if snap := s.Snapshot(); snap.Rows != 1 || snap.Cols != 1 {
		t.Fatalf("Resize(0, -3) gives %dx%d, want 1x1", snap.Rows, snap.Cols)
	}
}

// A repeat, tab or erase count is a parameter up to 2^31-2, and x/vt does
// the work one at a time (a repeat of 999999999 kept a 200x50 screen busy
// for four minutes). The screen bounds it and reads the same as with a
// count already past what the screen has room for.
func TestHugeCountsReadAsTheScreenAllows(t *testing.T) {
	const huge = "2147483646" // the largest: 2^31-1 is how x/ansi marks a missing parameter
	for _, tc := range []struct{ name, final, enough string }{
		{"REP", "b", "20000"},
		{"CHT", "I", "1000"},
		{"CBT", "Z", "1000"},
		{"ECH", "X", "1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			draw := func(count string) Snapshot {
				s := New(50, 200)
				defer s.Close()
				must(t, s.Write([]byte("\x1b[5;100Habcdef\x1b[5;103H\x1b["+count+tc.final+"@")))
				return s.Snapshot()
			}
			done := make(chan Snapshot, 1)
			go func() { done <- draw(huge) }()
			select {
			case got := <-done:
				if want := draw(tc.enough); got.Text != want.Text {
					t.Fatalf("CSI %s %s reads\n%s\nwant what CSI %s %s shows\n%s", huge, tc.final, got.Text, tc.enough, tc.final, want.Text)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("CSI %s %s still drawing after 30 s", huge, tc.final)
			}
		})
	}
}
