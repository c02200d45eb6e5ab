package control

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// EnsurePrivateDir creates dir (mode 0700) if it is missing and checks that
// it is a real directory, owned by us and closed to everyone else. A
// directory someone else could create, replace or read first must never
// hold our sockets and tokens, so a wrong owner or mode is refused, not
// repaired.
func EnsurePrivateDir(dir string) error {
	if err := checkAbove(dir); err != nil {
		return err // and nothing made there
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create private directory %s: %w", dir, err)
	}
	return checkPrivate(dir)
}

// PrivateDirError says why a directory cannot hold herdr-pi's private
// files. Problem tells the cases apart, so callers (doctor) can offer the
// matching way out.
type PrivateDirError struct {
	Dir     string
	Problem PrivateDirProblem
	// Mode is the directory's permission bits (ProblemMode).
	Mode fs.FileMode
	// Owner is the directory's uid (ProblemOwner), or the uid of what is
	// in its place (ProblemNotDir).
	Owner int
	// Err is the underlying error (ProblemUnreadable).
	Err error
	// Parent is the directory above Dir that others may write
	// (ProblemParent).
	Parent string
}

// PrivateDirProblem is what is wrong with a private directory.
type PrivateDirProblem int

// The problems a private directory can have.
const (
	ProblemUnreadable PrivateDirProblem = iota // cannot stat it (missing, permission)
	ProblemNotDir                              // a symlink or a file is in the way
	ProblemOwner                               // someone else owns it
	ProblemMode                                // not 0700: group or others have access, or we lack it
	ProblemParent                              // a directory above it others may write, not sticky
)

func (e *PrivateDirError) Error() string {
	switch e.Problem {
	case ProblemNotDir:
		if e.Owner != os.Getuid() {
			// In a sticky directory (/tmp) only its owner or root may
			// remove it: "remove it" would send the person to an rm
			// that fails, and another user's link there may be a trap.
			return fmt.Sprintf("private directory %s is not a directory (a symlink or file of uid %d, not ours (uid %d), is in the way): refusing it; ask its owner or root to remove it, or set XDG_RUNTIME_DIR", e.Dir, e.Owner, os.Getuid())
		}
		return fmt.Sprintf("private directory %s is not a directory (a symlink or file is in the way; remove it)", e.Dir)
	case ProblemOwner:
		return fmt.Sprintf("private directory %s belongs to uid %d, not to us (uid %d): refusing to use it; remove it or set XDG_RUNTIME_DIR", e.Dir, e.Owner, os.Getuid())
	case ProblemMode:
		return fmt.Sprintf("private directory %s has mode %04o, want 0700: refusing to use it; run chmod 700 %s", e.Dir, e.Mode, shellword.Word(e.Dir))
	case ProblemParent:
		return fmt.Sprintf("private directory %s is under %s, which others may write and which is not sticky (anyone could put a directory of theirs in place of ours): refusing to use it; run chmod +t %s (or chmod o-w), or set XDG_RUNTIME_DIR", e.Dir, e.Parent, shellword.Word(e.Parent))
	}
	return fmt.Sprintf("private directory %s: %v", e.Dir, e.Err)
}

func (e *PrivateDirError) Unwrap() error { return e.Err }

// CheckPrivateDir checks, without creating or repairing anything, that dir
// is a real directory owned by us and closed to everyone else. The error
// is a *PrivateDirError; a missing dir matches fs.ErrNotExist (unless
// the directories above it already rule it out: ProblemParent).
func CheckPrivateDir(dir string) error { return checkPrivate(dir) }

func checkPrivate(dir string) error {
	// Above first: a directory that cannot be private there is refused
	// before it is made, and doctor does not call a missing one fine.
	if err := checkAbove(dir); err != nil {
		return err
	}
	return checkPrivateItself(dir)
}

// checkAbove checks the directories above dir, symlinks resolved: one
// that others may write and that is not sticky lets anyone rename our
// private directory (or a directory on the way to it) away and put one of
// theirs in its place, between our check and our use, and then replace
// what Pi loads from it. A sticky one (/tmp) lets only the owner of an
// entry rename it, and one that others cannot reach (below a directory
// they may not search, as a test's 0700 temporary directory) is no
// danger. Group-writable directories pass: with a group per user (umask
// 002) a home's directories often are.
func checkAbove(dir string) error {
	parent, err := filepath.EvalSymlinks(filepath.Dir(filepath.Clean(dir)))
	if err != nil {
		return nil // nothing to make dir in: Mkdir or Lstat says so
	}
	if parent, err = filepath.Abs(parent); err != nil {
		return nil
	}
	var chain []string // parent first, "/" last
	for p := parent; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- { // from "/" down
		fi, err := os.Stat(chain[i])
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		if perm&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return &PrivateDirError{Dir: dir, Problem: ProblemParent, Parent: chain[i]}
		}
		if perm&0o001 == 0 {
			return nil // others cannot reach anything below
		}
	}
	return nil
}

func checkPrivateItself(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return &PrivateDirError{Dir: dir, Problem: ProblemUnreadable, Err: err}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		owner := os.Getuid()
		if ok {
			owner = int(st.Uid)
		}
		return &PrivateDirError{Dir: dir, Problem: ProblemNotDir, Owner: owner}
	}
	if !ok {
		return &PrivateDirError{Dir: dir, Problem: ProblemUnreadable, Err: errors.New("cannot read its owner")}
	}
	if int(st.Uid) != os.Getuid() {
		return &PrivateDirError{Dir: dir, Problem: ProblemOwner, Owner: int(st.Uid)}
	}
	// 0700 exactly: closed to others, and open to us, who make files in
	// it (a 0500 left by chmod -R a-w is as unusable as a full disk).
	if perm := fi.Mode().Perm(); perm != 0o700 {
		return &PrivateDirError{Dir: dir, Problem: ProblemMode, Mode: perm}
	}
	return nil
}

// ProcessAlive reports whether pid names a running process. EPERM means it
// exists but is someone else's, which is still alive.
func ProcessAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// LockDir takes an exclusive lock on the directory dir itself (flock), so
// no lock file is left behind and a process that dies while it holds the
// lock lets go of it. While another holds it, LockDir calls waiting once
// (nil for none) and tries again every poll, until wait has passed or ctx
// ends (wait 0: one try). locked is false when the lock could not be had;
// unlock then does nothing. Otherwise unlock lets it go; a second call
// does nothing.
func LockDir(ctx context.Context, dir string, wait, poll time.Duration, waiting func()) (unlock func(), locked bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}, false
	}
	if !flockWithin(ctx, fd, time.Now().Add(wait), poll, &waiting) {
		_ = unix.Close(fd)
		return func() {}, false
	}
	var once sync.Once
	return func() { once.Do(func() { _ = unix.Close(fd) }) }, true
}

// LockFile is LockDir for a lock of its own at path, a file in a private
// directory: one directory can then hold many locks that do not wait for
// each other. The file is made (0600) when missing, locked with flock (a
// process that dies lets go of it, and what it leaves is a free lock), and
// removed by unlock before it lets go, so nothing is left once the last
// holder is done. A waiter may meanwhile hold the removed file, which is
// no lock any more: a lock is only had when the locked file is still the
// one at path, else LockFile opens path anew. waiting, wait and poll are
// as for LockDir, the wait counted across those tries and waiting called
// at most once. locked is false when the lock could not be had (the wait
// ended, or path cannot be opened as a regular file); unlock then does
// nothing.
func LockFile(ctx context.Context, path string, wait, poll time.Duration, waiting func()) (unlock func(), locked bool) {
	deadline := time.Now().Add(wait)
	for {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
		if err != nil {
			return func() {}, false
		}
		if !regularFile(fd) || !flockWithin(ctx, fd, deadline, poll, &waiting) {
			_ = unix.Close(fd)
			return func() {}, false
		}
		if sameFile(fd, path) {
			var once sync.Once
			return func() {
				once.Do(func() {
					// Removed while held, so no one can take the lock
					// between the removal and the close; one who holds
					// the file open meanwhile finds it gone and opens
					// path anew.
					if sameFile(fd, path) {
						_ = unix.Unlink(path)
					}
					_ = unix.Close(fd)
				})
			}, true
		}
		// Its holder removed it (or it was replaced) while this waited.
		_ = unix.Close(fd)
	}
}

// RemoveFreeLockFile removes the lock file at path that LockFile left
// when its holder died (killed, so it could not remove it): nobody holds
// it now. One that is held, or not there, is left alone; so is anything
// that is not a regular file. Removing is safe under LockFile's rules: a
// waiter that holds the removed file open opens path anew.
func RemoveFreeLockFile(path string) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if regularFile(fd) && unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil && sameFile(fd, path) {
		_ = unix.Unlink(path)
	}
}

// flockWithin takes an exclusive flock on fd, trying again every poll
// while another holds it, until deadline (one try when it has passed) or
// ctx ends. *waiting (nil for none) is called before the first wait and
// then set to nil, so a caller that tries several files calls it once.
func flockWithin(ctx context.Context, fd int, deadline time.Time, poll time.Duration, waiting *func()) bool {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return true
		}
		if (!errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR)) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		if *waiting != nil {
			(*waiting)()
			*waiting = nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// regularFile tells whether fd is a regular file (a fifo or a device in
// a lock's place is not one).
func regularFile(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// sameFile tells whether fd is the file at path now.
func sameFile(fd int, path string) bool {
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(path, &named) != nil {
		return false
	}
	return held.Dev == named.Dev && held.Ino == named.Ino
}
