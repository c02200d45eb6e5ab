package board

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Every Herdr socket a person's wrappers ran under got a directory of its
// own that stayed after them: test runs left hundreds of empty ones in
// the runtime directory. The last wrapper to leave removes it, along with
// what a killed one left there.
func TestTheLastWrapperToLeaveRemovesTheBoard(t *testing.T) {
	base := t.TempDir()
	a, _ := Open(base, "/h.sock", "w1:p1")
	b, _ := Open(base, "/h.sock", "w1:p2")
	c, _ := Open(base, "/h.sock", "w1:p3")
	present(t, a, b, c)
	c.Hold("api")
	c.here.Close() // killed: its files stay, its lock goes
	a.Hold("api")
	a.Close()
	if _, err := os.Stat(a.dir); err != nil {
		t.Fatalf("the board went while a wrapper was still on it: %v", err)
	}
	b.Close()
	if _, err := os.Stat(b.dir); !os.IsNotExist(err) {
		left, _ := os.ReadDir(b.dir)
		t.Fatalf("the board's directory is left after its last wrapper: %v (holding %d files)", err, len(left))
	}
}

// A wrapper joins while the last one leaves: the leaver removes the
// directory after the joiner made it (or found it) and before the
// joiner's presence is in it. The joiner is on the board all the same,
// and the board is removed only when it leaves in turn.
func TestAWrapperJoiningAsTheLastLeavesIsOnTheBoard(t *testing.T) {
	base := t.TempDir()
	leaver, _ := Open(base, "/h.sock", "w1:p1")
	joiner, _ := Open(base, "/h.sock", "w1:p2")
	if err := leaver.Present("api"); err != nil {
		t.Fatal(err)
	}
	left := 0
	joiner.joining = func() {
		if left == 0 {
			leaver.Close()
			if _, err := os.Stat(leaver.dir); !os.IsNotExist(err) {
				t.Fatalf("the leaver did not remove the board it left empty: %v", err)
			}
		}
		left++
	}
	if err := joiner.Present("web"); err != nil {
		t.Fatalf("a wrapper joining as the last one left: %v", err)
	}
	if left != 2 {
		t.Fatalf("the joiner made its directory %d times, want 2 (once more after the leaver removed it)", left)
	}
	other, _ := Open(base, "/h.sock", "w1:p3")
	if n := other.Namesakes("web"); n != 1 {
		t.Fatalf("the joiner is not on the board: %d wrappers named web", n)
	}
	joiner.Close()
	if _, err := os.Stat(joiner.dir); !os.IsNotExist(err) {
		t.Fatalf("the board is left after the joiner left: %v", err)
	}
}

// Many wrappers join and leave one board at once, as real processes would
// (each its own files and locks): none fails to join, and the board is
// gone once all have left.
func TestWrappersJoiningAndLeavingAtOnce(t *testing.T) {
	base := t.TempDir()
	const wrappers, rounds = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, wrappers)
	for i := range wrappers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				b, err := Open(base, "/h.sock", fmt.Sprintf("w1:p%d", i))
				if err == nil {
					err = b.Present("api")
				}
				if err != nil {
					errs <- fmt.Errorf("wrapper %d, round %d: %w", i, r, err)
					return
				}
				b.Hold("api")
				b.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Fatalf("boards left after every wrapper left: %v", left)
	}
}

// A board opened and never joined (the wrapper's Present failed, or it
// found no channel to toast in) leaves no directory of its own behind.
func TestABoardNeverJoinedLeavesNoDirectory(t *testing.T) {
	base := t.TempDir()
	b, err := Open(base, "/h.sock", "w1:p1")
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Fatalf("a board never joined left %v", left)
	}
}
