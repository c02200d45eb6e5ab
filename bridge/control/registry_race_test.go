package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// Wrappers of one pane that start and end at the same instant, each with
// a run directory of its own as real wrappers have, leave the pane's entry
// right: while they all run every one is in it (the newest on top, the
// others under it); once some have ended exactly the others are, in the
// same order; once all have, the entry is gone. Unlocked, two wrappers
// registering at once read the same entry and the later write drops the
// earlier wrapper; one ending at once with the wrapper above it comes back
// in the entry that wrapper writes as it leaves. Rounds go on for a
// second, as the race needs many tries to show.
func TestWrappersOfOnePaneStartingAndEndingAtOnceKeepItsEntryRight(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	reg := PaneRegistry(base)
	key := PaneKey("/tmp/h.sock", "w1:p1")
	file := filepath.Join(reg.Dir, key)
	const wrappers = 6 // fewer than maxPrevious: every one fits in the entry
	type wrapper struct {
		held       *HeldRunDir
		e          Endpoint
		unregister func()
	}
	// together runs f for each of ws at once (as near as goroutines can).
	together := func(ws []*wrapper, f func(w *wrapper) error) error {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, len(ws))
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = f(w)
			}()
		}
		close(start)
		wg.Wait()
		return errors.Join(errs...)
	}
	chain := func() []string {
		t.Helper()
		e, err := reg.Lookup(key)
		if err != nil {
			t.Fatalf("the pane's entry: %v", err)
		}
		var tokens []string
		for p := &e; p != nil; p = p.Previous {
			tokens = append(tokens, p.Token)
		}
		return tokens
	}
	end := func(w *wrapper) error {
		w.unregister()
		return w.held.Remove()
	}

	deadline := time.Now().Add(time.Second)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		ws := make([]*wrapper, wrappers)
		var all []string
		for i := range ws {
			held, err := NewRunDir(base)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { held.Remove() })
			ws[i] = &wrapper{held: held, e: Endpoint{Socket: filepath.Join(held.Path, socketName),
				Token: fmt.Sprintf("round%d-wrapper%d", round, i), PID: os.Getpid(), PaneID: "w1:p1"}}
			all = append(all, ws[i].e.Token)
		}
		if err := together(ws, func(w *wrapper) (err error) {
			w.unregister, err = reg.Register(key, w.e)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		order := chain()
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, all) {
			t.Fatalf("round %d: with %d wrappers of the pane running, its entry names %q", round, wrappers, order)
		}

		var ending, staying []*wrapper
		for i, w := range ws {
			if i%2 == 0 {
				ending = append(ending, w)
			} else {
				staying = append(staying, w)
			}
		}
		if err := together(ending, end); err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(order), func(tok string) bool {
			return !slices.ContainsFunc(staying, func(w *wrapper) bool { return w.e.Token == tok })
		})
		if got := chain(); !slices.Equal(got, want) {
			t.Fatalf("round %d: after %d of the pane's wrappers ended, its entry names %q; want the others, as they were, %q", round, len(ending), got, want)
		}
		if err := together(staying, end); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(file); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("round %d: after every wrapper of the pane ended its entry is still there (%v): %s", round, err, b)
		}
	}
}

// A registry lock held for longer than lockWait (its holder stopped, say)
// does not hang a wrapper: it registers and leaves without the lock after
// that wait, and a lookup that would tidy the entry does not wait at all.
func TestAStuckRegistryLockDelaysAWrapperButDoesNotHangIt(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	reg := PaneRegistry(base)
	key := PaneKey("/tmp/h.sock", "w1:p1")
	for _, d := range []string{base, reg.Dir} {
		if err := EnsurePrivateDir(d); err != nil {
			t.Fatal(err)
		}
	}
	stuck, ok := reg.lock(0)
	if !ok {
		t.Fatal("the free registry lock could not be had")
	}
	defer stuck()
	old := lockWait
	lockWait = 100 * time.Millisecond
	t.Cleanup(func() { lockWait = old })

	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	e := Endpoint{Socket: filepath.Join(held.Path, socketName), Token: "t", PID: os.Getpid(), PaneID: "w1:p1"}
	began := time.Now()
	unregister, err := reg.Register(key, e)
	if took := time.Since(began); err != nil || took < lockWait || took > lockWait+5*time.Second {
		t.Fatalf("Register under a stuck lock: %v after %v; want it registered after about %v", err, took, lockWait)
	}
	if got, err := reg.Lookup(key); err != nil || got.Token != "t" {
		t.Fatalf("registered without the lock: %+v %v", got, err)
	}
	dead := Endpoint{Socket: "/tmp/dead.sock", Token: "dead", PID: deadPID(t), PaneID: "w1:p2"}
	if err := reg.write(filepath.Join(reg.Dir, PaneKey("/tmp/h.sock", "w1:p2")), dead); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if _, err := reg.Lookup(PaneKey("/tmp/h.sock", "w1:p2")); !errors.Is(err, ErrStale) || time.Since(began) > lockWait/2 {
		t.Fatalf("a lookup of a stale entry under a stuck lock: %v after %v; want ErrStale at once", err, time.Since(began))
	}
	began = time.Now()
	unregister()
	if took := time.Since(began); took < lockWait || took > lockWait+5*time.Second {
		t.Fatalf("unregistering under a stuck lock took %v, want about %v", took, lockWait)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unregistered without the lock, the entry is still there: %v", err)
	}
}
