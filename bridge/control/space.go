package control

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A directory that exists, is ours and 0700 can still refuse a wrapper's
// files: its filesystem is full (blocks or inodes), mounted read-only, or
// an attribute or security module forbids writing. Start then fails and
// the agent runs without its control socket, so doctor asks before.

// RunRoom is the space one wrapper run writes under the runtime directory
// at most: the probe and its handoff module (about 80 KiB together), the
// launcher, the registry entry and small claims, with room to spare. Less
// free than this and Pi's probe is lost even when the socket starts.
const RunRoom = 128 << 10

// runInodes is how many files and directories one run makes at most: its
// directory, lock, socket, probe files, claims, the registry entry and
// its temporary file.
const runInodes = 16

// RoomProblem is why a directory cannot take a run's files.
type RoomProblem int

// The problems [CheckRoom] tells apart, so callers (doctor) can offer the
// matching way out.
const (
	RoomSpace    RoomProblem = iota + 1 // too few free blocks for us
	RoomInodes                          // no free inodes
	RoomReadOnly                        // a read-only filesystem
	RoomDenied                          // writing is refused (an attribute, a security module)
	RoomOther                           // the test file failed otherwise
)

// RoomError says why Dir cannot take a new file.
type RoomError struct {
	Dir     string
	Problem RoomProblem
	// Free is what the filesystem has left: bytes for us (RoomSpace),
	// inodes (RoomInodes).
	Free uint64
	// Err is the failure of the test file (RoomDenied, RoomOther, or a
	// RoomSpace/RoomReadOnly the kernel reported only then).
	Err error
}

func (e *RoomError) Error() string {
	switch e.Problem {
	case RoomSpace:
		if e.Err != nil {
			return fmt.Sprintf("%s cannot take a new file: its filesystem is full (%v)", e.Dir, e.Err)
		}
		return fmt.Sprintf("%s cannot take a new file: its filesystem has %s free for us, and a wrapper writes up to %s there", e.Dir, kib(e.Free), kib(RunRoom))
	case RoomInodes:
		if e.Free > 0 {
			return fmt.Sprintf("%s cannot take a new file: its filesystem has only %d free inodes, and a wrapper makes up to %d files there", e.Dir, e.Free, runInodes)
		}
		return fmt.Sprintf("%s cannot take a new file: its filesystem has no free inodes", e.Dir)
	case RoomReadOnly:
		return fmt.Sprintf("%s cannot take a new file: it is on a read-only filesystem", e.Dir)
	case RoomDenied:
		return fmt.Sprintf("%s cannot take a new file although it is ours and 0700: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("%s cannot take a new file: %v", e.Dir, e.Err)
}

func (e *RoomError) Unwrap() error { return e.Err }

func kib(n uint64) string { return fmt.Sprintf("%d KiB", n>>10) }

// statfs and writeProbe are the kernel's; tests replace them to make a
// filesystem look full, or a write fail after its file was created.
var (
	statfs     = unix.Statfs
	writeProbe = func(f *os.File) error {
		_, err := f.Write(make([]byte, 512))
		return err
	}
)

// roomPrefix names CheckRoom's test file.
const roomPrefix = ".room-"

// CheckRoom says whether dir can take the files of a wrapper run, or why
// not as a *RoomError. It asks the filesystem (statfs: read-only, free
// blocks for this user, free inodes); with write, it also creates a small
// file in dir, writes to it and removes it — the test that sees what
// statfs cannot (an immutable directory, a security module, a quota).
// write is for a directory of our own only: the file is removed on every
// path, but it appears there for that instant.
func CheckRoom(dir string, write bool) error {
	var st unix.Statfs_t
	if err := statfs(dir, &st); err == nil {
		if e := roomOf(dir, &st); e != nil {
			return e
		}
	}
	if !write {
		return nil
	}
	// The test file of a check killed before its removal is the next
	// check's to remove (see SweepTemp).
	SweepTemp(dir, roomPrefix+"*")
	f, err := createTemp(dir, roomPrefix)
	if err != nil {
		return roomFailure(dir, err)
	}
	defer f.Done()
	err = writeProbe(f.File)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return roomFailure(dir, err)
	}
	return nil
}

// roomOf reads a statfs answer. A filesystem that counts no blocks or no
// inodes at all (some virtual and network ones report 0) is not judged by
// that count.
func roomOf(dir string, st *unix.Statfs_t) *RoomError {
	if st.Flags&unix.ST_RDONLY != 0 {
		return &RoomError{Dir: dir, Problem: RoomReadOnly}
	}
	if st.Files > 0 && st.Ffree < runInodes {
		return &RoomError{Dir: dir, Problem: RoomInodes, Free: st.Ffree}
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	avail := st.Bavail // what is left after the blocks reserved for root
	if os.Getuid() == 0 {
		avail = st.Bfree
	}
	if st.Blocks > 0 && avail*unit < RunRoom {
		return &RoomError{Dir: dir, Problem: RoomSpace, Free: avail * unit}
	}
	return nil
}

func roomFailure(dir string, err error) *RoomError {
	e := &RoomError{Dir: dir, Problem: RoomOther, Err: err}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		e.Problem = RoomSpace
	case errors.Is(err, syscall.EROFS):
		e.Problem = RoomReadOnly
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		e.Problem = RoomDenied
	}
	return e
}
