package screen

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// The tap's first batch is the terminal's size, before the agent has
// started. Building the emulator then (x/vt's holds a 4 MiB buffer for
// escape strings, which set off the wrapper's first garbage collection)
// put its cost, and the collection's, on the wrapper's CPU while it
// started the agent; an agent that prints nothing never needed it. The
// screen is built with the first output instead, at the newest size; until
// then the blank screen of each size is published as before.
func TestFollowBuildsNoScreenBeforeOutput(t *testing.T) {
	tap := pty.NewTap(0)
	tap.Resize(pty.Size{Rows: 24, Cols: 80})
	tap.Resize(pty.Size{Rows: 30, Cols: 100})
	tap.Close()
	var seen []uint64
	var published []Snapshot
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Follow(context.Background(), tap, FollowOptions{
		Rows: 24, Cols: 80,
		Publish: func(s Snapshot) { published = append(published, s) },
		Seen:    func(through uint64) { seen = append(seen, through) },
	})
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("following sizes and no output allocated %d KiB: an emulator was built", n>>10)
	}
	want := Snapshot{Text: strings.Repeat("\n", 29), Rows: 30, Cols: 100}
	if len(published) != 1 || published[0] != want {
		t.Errorf("published %+v, want the blank screen of the newest size once: %+v", published, want)
	}
	if len(seen) == 0 {
		t.Error("Seen heard nothing: a state machine waiting on the screen would wait on")
	}
}

func TestFollowBuildsTheScreenAtTheNewestSizeWhenOutputComes(t *testing.T) {
	tap := pty.NewTap(0)
	src := &countingSource{Tap: tap}
	f := startFollow(context.Background(), src, FollowOptions{Rows: 3, Cols: 10})
	tap.Resize(pty.Size{Rows: 4, Cols: 20})
	for src.count() == 0 {
		runtime.Gosched()
	}
	tap.Resize(pty.Size{Rows: 5, Cols: 40})
	tap.Write([]byte("\x1b[5;1Hbottom row of a wider screen"))
	tap.Close()
	<-f.done
	got := f.last()
	if got.Rows != 5 || got.Cols != 40 || !strings.HasSuffix(got.Text, "\nbottom row of a wider screen") {
		t.Fatalf("last snapshot %+v", got)
	}
}

// The blank screen published before any output is the emulator's own.
func TestBlankSnapshotIsABlankScreens(t *testing.T) {
	for _, size := range [][2]int{{24, 80}, {1, 1}, {0, 0}, {-3, 5}, {MaxRows + 1, MaxCols + 7}, {50, 200}} {
		s := New(size[0], size[1])
		want := s.Snapshot()
		s.Close()
		if got := blankSnapshot(size[0], size[1]); got != want {
			t.Errorf("blankSnapshot(%d, %d) = %+v, a new screen shows %+v", size[0], size[1], got, want)
		}
	}
}
