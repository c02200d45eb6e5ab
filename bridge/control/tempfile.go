package control

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A file written whole (a registry entry, a ledger record, a session
// claim) is written under a temporary name in its directory and renamed
// into place. A writer killed in between (SIGKILL, a power cut) leaves
// the temporary file behind, where nothing would ever remove it; the next
// writer of the directory sweeps it away ([SweepTemp]).
//
// The writer holds an flock on its temporary file from just after it is
// made until it has been renamed, so a sweep tells a dead writer's file
// (free) from one still being written (held), in any pid namespace and
// however long the writer is stopped; only in the instant between the
// file's creation and the lock has a live writer's file no lock, which
// tempGrace covers.
const (
	// TempPattern matches the temporary files of [CreateTemp].
	TempPattern = tempPrefix + "*"
	tempPrefix  = ".tmp-"
	// tempGrace is how old a temporary file must be before a sweep looks
	// at its lock.
	tempGrace = time.Minute
)

// TempFile is a file being written under a temporary name, locked by
// its writer until [TempFile.Done].
type TempFile struct {
	*os.File
	// lock is a second descriptor of the same open file, holding the
	// flock after File is closed (to see Close's error before the
	// rename): a lock belongs to the open file, not the descriptor.
	lock int
}

// CreateTemp makes a new 0600 file under a temporary name in dir, locked
// (see above). Call Done on every path once it has been renamed, or
// given up.
func CreateTemp(dir string) (*TempFile, error) {
	return createTemp(dir, tempPrefix)
}

func createTemp(dir, prefix string) (*TempFile, error) {
	f, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return nil, err
	}
	lock, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		// A sweep takes the lock only of a file older than tempGrace, so
		// nothing holds this one; a failure leaves the file unlocked, as
		// protected as tempGrace makes it.
		if err = unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = unix.Close(lock)
		}
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return &TempFile{File: f, lock: lock}, nil
}

// Done removes the file if it is still under its temporary name (it was
// not renamed), closes it and lets go of its lock. Safe to call more than
// once.
func (t *TempFile) Done() {
	if t.lock < 0 {
		return
	}
	if sameFile(t.lock, t.Name()) {
		_ = os.Remove(t.Name())
	}
	_ = t.File.Close()
	_ = unix.Close(t.lock)
	t.lock = -1
}

// SweepTemp removes the files in dir that match pattern (a
// [filepath.Match] pattern such as [TempPattern]) and were left by
// writers that died: regular files older than tempGrace whose lock is
// free. What cannot be judged (not a regular file, not ours to open) is
// left alone, and so is every file a live writer holds.
func SweepTemp(dir, pattern string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) <= tempGrace {
			continue
		}
		removeDeadTemp(filepath.Join(dir, e.Name()))
	}
}

// removeDeadTemp removes the temporary file at path when nobody holds its
// lock, holding that lock itself meanwhile: a writer cannot take it back
// between the look and the removal.
func removeDeadTemp(path string) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if !regularFile(fd) {
		return
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // held: its writer still runs
	}
	if sameFile(fd, path) {
		_ = unix.Unlink(path)
	}
}
