package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A run directory is "run-<pid>-<random>" under the runtime base. Whether
// its wrapper still runs is told by a lock, not by the pid: the wrapper
// holds flock(LOCK_EX) on runLockName inside it for as long as the
// directory exists, and the kernel drops that lock when the wrapper dies,
// SIGKILL included. A pid says nothing across pid namespaces (two
// containers sharing /tmp or XDG_RUNTIME_DIR and a uid see each other's
// pids as absent) and nothing once the pid is reused; a lock on a shared
// file means the same in every namespace.
//
// The lock is the wrapper's alone (opened close-on-exec): the directory
// holds the control socket, the tool bridge and the probe the wrapper
// serves, all dead with it, and the wrapper removes the directory on
// every exit of its own. An agent that outlives a killed wrapper keeps
// nothing in it alive, so it must not keep the directory either.
const (
	// runDirPrefix starts every per-run directory name; the wrapper's pid
	// follows, for people reading the directory and for the directories
	// of older herdr-pi versions, which have no lock (see runDirDead).
	runDirPrefix = "run-"
	// makingPrefix names a run directory while it is made, before its lock
	// is held; the sweep of run directories never matches it, so a
	// directory under runDirPrefix always has its lock held from the
	// moment it appears.
	makingPrefix = "." + runDirPrefix
	// runLockName is the lock file inside a run directory.
	runLockName = "wrapper.lock"
	// makingGrace is how old a directory under makingPrefix that has no
	// lock file yet must be before a sweep removes it: a wrapper creates
	// the lock file right after the directory, so one without it this old
	// was left by a wrapper killed in between. A wrapper stalled longer
	// than that only finds its directory gone and makes another.
	makingGrace = time.Minute
	// makeAttempts bounds the retries of a wrapper whose half-made
	// directory a sweep took from it.
	makeAttempts = 3
)

// errRaced says a sweep removed the directory being made; a fresh one is
// made instead.
var errRaced = errors.New("a sweep removed the directory while it was made")

// HeldRunDir is a run directory this process made and holds the lock of:
// it counts as alive for every sweep, doctor and owner lookup, in any pid
// namespace, until Remove or until this process dies.
type HeldRunDir struct {
	// Path is the directory, private (0700).
	Path string
	// Swept are the directories of killed wrappers NewRunDir removed
	// before making this one, for the caller to say so.
	Swept []RunDir
	lock  *os.File
	// dirLock holds an flock on the directory itself, which keeps
	// systemd-tmpfiles' aging out of it (see fresh.go); -1 for none.
	dirLock int
}

// heldRuns are the run directories this process holds, for its wrapper's
// freshening (fresh.go): a live handoff's directory is made apart from
// the wrapper's own, and must be kept young as long.
var heldRuns = struct {
	sync.Mutex
	dirs map[*HeldRunDir]bool
}{dirs: map[*HeldRunDir]bool{}}

// heldDirs lists the run directories this process holds now.
func heldDirs() []string {
	heldRuns.Lock()
	defer heldRuns.Unlock()
	out := make([]string, 0, len(heldRuns.dirs))
	for d := range heldRuns.dirs {
		out = append(out, d.Path)
	}
	return out
}

// Remove removes the directory with everything in it, and only then lets
// go of its lock, so no sweep ever sees it unlocked while it is still
// there. Safe to call more than once.
func (d *HeldRunDir) Remove() error {
	if d == nil || d.lock == nil {
		return nil
	}
	heldRuns.Lock()
	delete(heldRuns.dirs, d)
	heldRuns.Unlock()
	err := os.RemoveAll(d.Path)
	_ = d.lock.Close()
	d.lock = nil
	if d.dirLock >= 0 {
		_ = unix.Close(d.dirLock)
		d.dirLock = -1
	}
	return err
}

// NewRunDir makes a fresh private directory for one wrapper run under base
// (itself checked with [EnsurePrivateDir]), after removing the directories
// of runs whose wrapper is gone (killed with SIGKILL, say). The caller
// removes it with [HeldRunDir.Remove] on every way out.
func NewRunDir(base string) (*HeldRunDir, error) {
	if err := EnsurePrivateDir(base); err != nil {
		return nil, err
	}
	swept := sweepRunDirs(base)
	var err error
	for range makeAttempts {
		var d *HeldRunDir
		if d, err = makeRunDir(base); !errors.Is(err, errRaced) {
			if d != nil {
				d.Swept = swept
			}
			return d, err
		}
	}
	return nil, fmt.Errorf("create run directory in %s: %w", base, err)
}

// makeRunDir builds the directory under makingPrefix, takes its lock, and
// only then renames it into place.
func makeRunDir(base string) (*HeldRunDir, error) {
	tmp, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", makingPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("create run directory in %s: %w", base, err)
	}
	// os.OpenFile opens close-on-exec: the wrapped agent never inherits
	// the lock (see the package comment above). The file is made and
	// locked under another name and only then named the lock: a sweep
	// that finds the lock file finds it held, and one that comes before
	// finds none and leaves a directory this young alone (makingGrace).
	// Made under its own name, a sweep between the making and the
	// locking took the lock and the directory, and a maker raced so on
	// every attempt (many wrappers starting at once) got none.
	lockPath := filepath.Join(tmp, runLockName)
	lock, err := os.OpenFile(lockPath+".new", os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errRaced // a sweep took tmp for a leftover (makingGrace)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("create run directory lock in %s: %w", tmp, err)
	}
	beforeLock(tmp)
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("lock run directory %s: %w", tmp, err)
	}
	if err := os.Rename(lockPath+".new", lockPath); err != nil {
		_ = lock.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errRaced // a sweep took tmp for a leftover (makingGrace)
		}
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("create run directory lock in %s: %w", tmp, err)
	}
	d := &HeldRunDir{Path: tmp, lock: lock, dirLock: -1}
	beforeRename(tmp)
	final := filepath.Join(base, strings.TrimPrefix(filepath.Base(tmp), "."))
	if err := renameNoReplace(tmp, final); err != nil {
		_ = d.Remove()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) || errors.Is(err, unix.ENOTEMPTY) {
			return nil, errRaced // swept before we locked, or the name is taken
		}
		return nil, fmt.Errorf("create run directory %s: %w", final, err)
	}
	d.Path = final
	// The lock we hold must be the file in the directory: a sweep may
	// have removed the file we opened, with tmp itself, before our flock.
	held, err1 := lock.Stat()
	there, err2 := os.Lstat(filepath.Join(final, runLockName))
	if err1 != nil || err2 != nil || !os.SameFile(held, there) {
		_ = d.Remove()
		return nil, errRaced
	}
	if err := checkPrivate(final); err != nil {
		_ = d.Remove()
		return nil, err
	}
	d.dirLock = lockDirForCleaners(final)
	heldRuns.Lock()
	heldRuns.dirs[d] = true
	heldRuns.Unlock()
	return d, nil
}

// beforeRename lets a test look at the base while a directory is half
// made, its lock held but not yet in place; beforeLock, while its lock
// file is made but not yet locked.
var (
	beforeRename = func(tmp string) {}
	beforeLock   = func(tmp string) {}
)

// renameNoReplace renames a directory unless newpath exists: a plain
// rename would replace an empty directory there.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// A file system or kernel without RENAME_NOREPLACE: check, then
	// rename. The name is random, so only a collision could fill the gap.
	if _, err := os.Lstat(newpath); err == nil {
		return fs.ErrExist
	}
	return os.Rename(oldpath, newpath)
}

// RunDir is one per-run directory under the runtime base.
type RunDir struct {
	Path string
	// PID is the wrapper that made it, in the wrapper's pid namespace;
	// Alive says whether that wrapper still runs (see [ReadRunDir]).
	PID   int
	Alive bool
}

// RunDirs lists the per-run directories under base (none when base is
// missing or unreadable).
func RunDirs(base string) []RunDir {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var dirs []RunDir
	for _, e := range entries {
		pid, ok := runDirPID(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(base, e.Name())
		dirs = append(dirs, RunDir{Path: path, PID: pid, Alive: runDirAlive(path, pid)})
	}
	return dirs
}

// ReadRunDir is the run directory dir, as [RunDirs] would list it; false
// when dir is not a run directory (by its name) or not there. The owner
// lookup asks it, so it and the sweep never disagree on a wrapper.
func ReadRunDir(dir string) (RunDir, bool) {
	pid, ok := runDirPID(filepath.Base(dir))
	if !ok {
		return RunDir{}, false
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return RunDir{}, false
	}
	return RunDir{Path: dir, PID: pid, Alive: runDirAlive(dir, pid)}, true
}

// RunDirEnded says whether dir, named as a run directory, is a wrapper's
// that has ended: the directory is gone (its wrapper removed it on the
// way out, or a sweep did) or its lock is free (the wrapper was killed).
// False when dir is not named as a run directory, or its wrapper runs, or
// that cannot be judged.
func RunDirEnded(dir string) bool {
	if _, named := runDirPID(filepath.Base(dir)); !named {
		return false
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return true
	}
	rd, ok := ReadRunDir(dir)
	return ok && !rd.Alive
}

// RunDirRemoved says whether dir, named as a run directory, is gone while
// the wrapper named in it still runs: something other than herdr-pi
// removed it (a cleaner of /tmp, a logout that emptied
// XDG_RUNTIME_DIR), and the control socket with it. pid is the wrapper.
// A pid that another process took since is not taken for the wrapper:
// it must run `… wrap …` (see wrapperProcess).
func RunDirRemoved(dir string) (pid int, removed bool) {
	pid, named := runDirPID(filepath.Base(dir))
	if !named {
		return 0, false
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return 0, false
	}
	return pid, ProcessAlive(pid) && wrapperProcess(pid)
}

// wrapperProcess says whether pid runs a herdr-pi wrapper, by its
// command line: "wrap" among its words. Unreadable: not one.
func wrapperProcess(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(b), "\x00"), "wrap")
}

// runDirPID is the pid in a run directory's name ("run-<pid>-…").
func runDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, runDirPrefix)
	if !ok {
		return 0, false
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

func runDirAlive(dir string, pid int) bool {
	dead, lock := runDirDead(dir, pid)
	if lock != nil {
		_ = lock.Close()
	}
	return !dead
}

// runDirDead is the one test of a run directory's wrapper: dead when its
// lock can be taken — then the lock is returned, held, for the caller to
// remove the directory under and close — and, in a directory of an older
// herdr-pi with no lock file, when its pid is not running. A lock file
// that cannot be opened or locked for another reason counts as alive:
// what cannot be judged is never removed.
func runDirDead(dir string, pid int) (bool, *os.File) {
	lock, err := takeLock(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return !ProcessAlive(pid), nil
	}
	return err == nil, lock
}

// takeLock takes the lock of the run directory dir without waiting: the
// lock file, held, when nobody else holds it; fs.ErrNotExist when dir has
// no lock file; another error when it is held or cannot be opened.
func takeLock(dir string) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(dir, runLockName), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, err
	}
	return lock, nil
}

// sweepRunDirs removes the run directories of wrappers that are gone, and
// directories left half-made under makingPrefix, each while holding its
// lock so that a wrapper cannot be making or using it meanwhile. It
// returns what it removed (the pid in the name; 0 when it has none).
func sweepRunDirs(base string) (swept []RunDir) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(base, e.Name())
		if pid, ok := runDirPID(e.Name()); ok {
			if dead, lock := runDirDead(path, pid); dead {
				if os.RemoveAll(path) == nil {
					swept = append(swept, RunDir{Path: path, PID: pid})
				}
				if lock != nil {
					_ = lock.Close()
				}
			}
			continue
		}
		if strings.HasPrefix(e.Name(), makingPrefix) && sweepHalfMade(path) {
			pid, _ := runDirPID(strings.TrimPrefix(e.Name(), "."))
			swept = append(swept, RunDir{Path: path, PID: pid})
		}
	}
	return swept
}

// sweepHalfMade removes a directory under makingPrefix whose maker is
// gone: its lock is free, or it never got a lock file and is older than
// makingGrace. The pid in its name is never consulted: the maker may run
// in another pid namespace.
// It says whether it removed it.
func sweepHalfMade(path string) bool {
	lock, err := takeLock(path)
	switch {
	case err == nil:
		defer lock.Close()
		return os.RemoveAll(path) == nil
	case errors.Is(err, fs.ErrNotExist):
		if fi, err := os.Lstat(path); err == nil && time.Since(fi.ModTime()) > makingGrace {
			return os.RemoveAll(path) == nil
		}
	}
	return false
}
