package board

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A question one wrapper holds is seen by the others, not by itself; a
// toast that named it lets its wrapper know once; one replaced meanwhile
// is not taken for told.
func TestHeldToldTakenAndReplaced(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, "/h.sock", "w1:p1")
	b, _ := Open(dir, "/h.sock", "w1:p2")
	present(t, a, b)
	ea := a.Hold("api")
	if len(a.Others()) != 0 {
		t.Fatalf("a sees its own question: %+v", a.Others())
	}
	others := b.Others()
	if !slices.Equal(others, []Held{{Entry: ea, Place: "api"}}) {
		t.Fatalf("b sees %+v", others)
	}
	// a replaces its question before b's toast names the old one.
	a.Drop(ea)
	ea2 := a.Hold("api")
	b.Told([]string{ea})
	if a.Taken(ea2) {
		t.Fatal("a newer question was taken for told by a toast that named the older")
	}
	b.Told([]string{ea2})
	if !a.Taken(ea2) || a.Taken(ea2) {
		t.Fatal("a told question is taken exactly once")
	}
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a told question is still held: %+v", got)
	}
}

// A question its wrapper still waits on is named however long Herdr held
// it back: it is not taken for a killed wrapper's by its age (the old
// two-minute sweep dropped the question of a pane still asking).
func TestALongHeldQuestionOfARunningWrapperIsNamed(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, "/h.sock", "w1:p1")
	b, _ := Open(dir, "/h.sock", "w1:p2")
	if err := a.Present("api"); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e := a.Hold("api")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(a.dir, e+heldExt), old, old); err != nil {
		t.Fatal(err)
	}
	if got := b.Others(); !slices.Equal(got, []Held{{Entry: e, Place: "api"}}) {
		t.Fatalf("an hour-old question of a running wrapper: %+v", got)
	}
}

// Panes of another Herdr (another session the person may not be looking
// at) are never named.
func TestAnotherHerdrsQuestionsAreNotSeen(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, "/run/herdr-a.sock", "w1:p1")
	b, _ := Open(dir, "/run/herdr-b.sock", "w1:p2")
	present(t, a, b)
	a.Hold("api")
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("another Herdr's pane named: %+v", got)
	}
}

// A wrapper that runs counts as a namesake; one killed (its lock gone
// with it, its file left) does not, and its file is swept.
func TestNamesakesAreRunningWrappersOnly(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, "/h.sock", "w1:p1")
	b, _ := Open(dir, "/h.sock", "w1:p2")
	c, _ := Open(dir, "/h.sock", "w1:p3")
	for _, x := range []*Board{a, b, c} {
		if err := x.Present("api"); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.Namesakes("api"); n != 2 {
		t.Fatalf("%d namesakes, want 2", n)
	}
	if n := a.Namesakes("web"); n != 0 {
		t.Fatalf("%d namesakes of web", n)
	}
	c.here.Close() // killed: the kernel drops the lock, the file stays
	if n := a.Namesakes("api"); n != 1 {
		t.Fatalf("%d namesakes after one was killed, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(c.dir, c.self+hereExt)); !os.IsNotExist(err) {
		t.Fatalf("a killed wrapper's presence left: %v", err)
	}
	b.Close()
	if n := a.Namesakes("api"); n != 0 {
		t.Fatalf("%d namesakes after the other closed", n)
	}
	a.Close()
}

// A wrapper nested in another's pane (herdr-pi wrap bash, then herdr-pi
// wrap pi in it) shares its pane, and is no namesake to tell apart.
func TestANestedWrapperIsNoNamesake(t *testing.T) {
	dir := t.TempDir()
	outer, _ := Open(dir, "/h.sock", "w1:p1")
	inner, _ := Open(dir, "/h.sock", "w1:p1")
	inner.self += "-nested" // another process of the same pane
	for _, x := range []*Board{outer, inner} {
		if err := x.Present("api"); err != nil {
			t.Fatal(err)
		}
		defer x.Close()
	}
	if n := inner.Namesakes("api"); n != 0 {
		t.Fatalf("%d namesakes in one pane", n)
	}
}

// present makes each board present, as a running wrapper's is, until the
// test ends.
func present(t *testing.T, bs ...*Board) {
	t.Helper()
	for _, b := range bs {
		if err := b.Present("x"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
	}
}

// A run's end goes on the board under a name of its own, so a wrapper of
// an older build, which takes every .held file for a question, never
// names a finished pane as asking; it is told, taken and dropped as a
// question is, and goes with a killed wrapper's lock.
func TestARunsEndIsHeldByItsKind(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir, "/h.sock", "w1:p1")
	b, _ := Open(dir, "/h.sock", "w1:p2")
	c, _ := Open(dir, "/h.sock", "w1:p3")
	present(t, a, b, c)
	done := a.HoldNews(Finished, "api")
	failed := c.HoldNews(Failed, "web")
	got := b.Others()
	slices.SortFunc(got, func(x, y Held) int { return strings.Compare(x.Place, y.Place) }) // made in one tick: any order
	if !slices.Equal(got, []Held{{Entry: done, Place: "api", Kind: Finished}, {Entry: failed, Place: "web", Kind: Failed}}) {
		t.Fatalf("b sees %+v", got)
	}
	if held, _ := filepath.Glob(filepath.Join(a.dir, "*"+heldExt)); len(held) != 0 {
		t.Fatalf("a run's end was left as a question: %v", held)
	}
	b.Told([]string{done})
	if !a.Taken(done) || a.Taken(done) {
		t.Fatal("a told run's end is taken exactly once")
	}
	c.here.Close() // killed
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a killed wrapper's run's end is still named: %+v", got)
	}
	again := a.HoldNews(Failed, "api")
	a.Drop(again)
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a dropped run's end is still held: %+v", got)
	}
}
