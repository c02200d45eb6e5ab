package control

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// lockDir is a private directory for lock files.
func lockDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// left is what dir holds.
func left(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

type lockResult struct {
	unlock func()
	locked bool
}

// lockInBackground takes the lock at path in a goroutine, waiting up to
// a minute; waits gets a value when it starts to wait.
func lockInBackground(ctx context.Context, path string) (got chan lockResult, waits chan struct{}) {
	got, waits = make(chan lockResult, 1), make(chan struct{}, 4)
	go func() {
		unlock, locked := LockFile(ctx, path, time.Minute, time.Millisecond, func() { waits <- struct{}{} })
		got <- lockResult{unlock, locked}
	}()
	return got, waits
}

// Two holders of one path take turns: the second says once that it
// waits, and has the lock as soon as the first lets go. The file is 0600
// while held and gone once the last holder is done; a second unlock does
// nothing.
func TestLockFileHoldersOfOnePathTakeTurns(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	dir := lockDir(t)
	path := filepath.Join(dir, "a.lock")
	first, locked := LockFile(t.Context(), path, 0, time.Millisecond, func() { t.Error("the free lock was waited for") })
	if !locked {
		t.Fatal("the free lock was not had")
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the held lock file: %v %v, want a 0600 regular file", fi, err)
	}
	got, waits := lockInBackground(t.Context(), path)
	select {
	case <-waits:
	case <-time.After(10 * time.Second):
		t.Fatal("the second holder never said it waits")
	}
	select {
	case <-got:
		t.Fatal("the second holder had the lock while the first held it")
	default:
	}
	first()
	first()
	var second lockResult
	select {
	case second = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second holder did not get the lock once the first let go")
	}
	if !second.locked {
		t.Fatal("the second holder went without the lock")
	}
	if _, locked := LockFile(t.Context(), path, 0, time.Millisecond, nil); locked {
		t.Fatal("a third had the lock while the second held it")
	}
	second.unlock()
	if n := len(waits); n != 0 {
		t.Fatalf("waiting was called %d more times", n)
	}
	if names := left(t, dir); len(names) != 0 {
		t.Fatalf("left behind after unlock: %q", names)
	}
}

// Locks at different paths of one directory do not wait for each other.
func TestLockFilesOfDifferentPathsDoNotWait(t *testing.T) {
	dir := lockDir(t)
	a, locked := LockFile(t.Context(), filepath.Join(dir, "a.lock"), time.Minute, time.Millisecond, nil)
	if !locked {
		t.Fatal("a was not had")
	}
	defer a()
	b, locked := LockFile(t.Context(), filepath.Join(dir, "b.lock"), time.Minute, time.Millisecond, func() { t.Error("b waited for a") })
	if !locked {
		t.Fatal("b was not had")
	}
	b()
	if names := left(t, dir); len(names) != 1 || names[0] != "a.lock" {
		t.Fatalf("with a held and b let go the directory holds %q", names)
	}
}

// A waiter that held the file open while its holder removed it (as every
// unlock does) gets a lock on a file no one else can find: that is no
// lock. It takes the one at path instead, so a newcomer cannot have the
// lock while it holds it.
func TestLockFileRemovedWhileWaitingIsNoLock(t *testing.T) {
	dir := lockDir(t)
	path := filepath.Join(dir, "a.lock")
	first, locked := LockFile(t.Context(), path, 0, time.Millisecond, nil)
	if !locked {
		t.Fatal("the free lock was not had")
	}
	got, waits := lockInBackground(t.Context(), path)
	select {
	case <-waits: // it holds the first's file open now
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never said it waits")
	}
	first()
	var waiter lockResult
	select {
	case waiter = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock once the first let go")
	}
	if !waiter.locked {
		t.Fatal("the waiter went without the lock")
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the waiter holds a lock that is not at %s: %v", path, err)
	}
	if newcomer, locked := LockFile(t.Context(), path, 0, time.Millisecond, nil); locked {
		newcomer()
		t.Fatal("a newcomer had the lock while the waiter held it")
	}
	waiter.unlock()
	if names := left(t, dir); len(names) != 0 {
		t.Fatalf("left behind after unlock: %q", names)
	}
}

// The wait is bounded: it ends after wait, or with ctx, without the
// lock, having said once that it waits; a wait of 0 is one try.
func TestLockFileWaitEnds(t *testing.T) {
	dir := lockDir(t)
	path := filepath.Join(dir, "a.lock")
	held, _ := LockFile(t.Context(), path, 0, time.Millisecond, nil)
	defer held()
	waited := 0
	start := time.Now()
	unlock, locked := LockFile(t.Context(), path, 100*time.Millisecond, time.Millisecond, func() { waited++ })
	if took := time.Since(start); locked || waited != 1 || took < 100*time.Millisecond {
		t.Fatalf("locked %v after %v, waiting called %d times; want no lock after 100ms, one call", locked, took, waited)
	}
	unlock() // does nothing
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("an unlock of a lock not had removed the holder's file: %v", err)
	}
	if _, locked := LockFile(t.Context(), path, 0, time.Millisecond, func() { t.Error("a wait of 0 waited") }); locked {
		t.Fatal("a wait of 0 had the held lock")
	}
	ctx, cancel := context.WithCancel(t.Context())
	got, waits := lockInBackground(ctx, path)
	<-waits
	cancel()
	select {
	case r := <-got:
		if r.locked {
			t.Fatal("the cancelled wait had the lock")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait went on after its context ended")
	}
}

// What a holder that died leaves (the kernel let its lock go, but no one
// removed the file) is a free lock, had without waiting and removed once
// let go. Something that is not a regular file in its place is no lock,
// and is left alone.
func TestLockFileLeftByADeadHolderIsFreeAndAStrangerIsNoLock(t *testing.T) {
	dir := lockDir(t)
	path := filepath.Join(dir, "a.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, locked := LockFile(t.Context(), path, time.Minute, time.Millisecond, func() { t.Error("a dead holder's lock was waited for") })
	if !locked {
		t.Fatal("a dead holder's lock was not had")
	}
	unlock()
	if names := left(t, dir); len(names) != 0 {
		t.Fatalf("left behind after unlock: %q", names)
	}

	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, locked := LockFile(t.Context(), path, 0, time.Millisecond, nil); locked {
		t.Error("a symlink was taken for a lock")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, locked := LockFile(t.Context(), path, 0, time.Millisecond, nil); locked {
		t.Error("a fifo was taken for a lock")
	}
	if names := left(t, dir); len(names) != 2 {
		t.Fatalf("the strangers were not left alone: %q", names)
	}
}

// A lock file its dead holder left is removed; a held one, and a
// stranger in a lock's place, are not.
func TestRemoveFreeLockFileRemovesOnlyADeadHoldersLock(t *testing.T) {
	dir := lockDir(t)
	dead, held, fifo := filepath.Join(dir, "dead.lock"), filepath.Join(dir, "held.lock"), filepath.Join(dir, "fifo.lock")
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, locked := LockFile(t.Context(), held, 0, time.Millisecond, nil)
	if !locked {
		t.Fatal("the free lock was not had")
	}
	defer unlock()
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, held, fifo, filepath.Join(dir, "missing.lock")} {
		RemoveFreeLockFile(p)
	}
	if names := left(t, dir); len(names) != 2 || names[0] != "fifo.lock" || names[1] != "held.lock" {
		t.Fatalf("left %q, want the fifo and the held lock", names)
	}
	if _, locked := LockFile(t.Context(), held, 0, time.Millisecond, nil); locked {
		t.Fatal("the held lock could be had after the removal of free ones")
	}
}
