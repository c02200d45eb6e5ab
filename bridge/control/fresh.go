package control

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// A wrapper can run for weeks (a Pi left open), and its run directory
// often sits under /tmp, where age-based cleaners remove what has not been
// touched for a while: systemd-tmpfiles' "q /tmp … 10d" line, tmpreaper,
// tmpwatch. They would take the lock file, the probe, the session claim
// and the pane's registry entry of a live wrapper, and `status`, `waiting`
// from a hook and `open` would then fail for an agent that runs on.
//
// Two things keep them away:
//   - the wrapper holds an flock on the run directory itself (see
//     lockDirForCleaners): systemd-tmpfiles skips a directory, and
//     everything below it, whose lock it cannot take while it ages
//     (tmpfiles.d(5), "Age"); it skips a live socket too;
//   - every freshenEvery the wrapper sets the access and modification
//     times of what it keeps there to now: the run directory and all in
//     it, every other run directory the process holds (a live handoff's:
//     its lock, its bridge, its launch's files; see heldRuns) and all in
//     it, the directories above it that it made, its pane's registry
//     entry, and what its caller says it keeps besides (RunConfig.Keep:
//     the ledger records of what is open in Herdr for this wrapper's
//     pane or its handoffs, which live in a directory shared with every
//     other herdr-pi and so cannot be locked for one). Every cleaner judges age by those times, and the XDG base
//     directory spec asks exactly this of files in XDG_RUNTIME_DIR (their
//     access time touched at least every 6 hours). One pass is a few
//     dozen utimensat calls, an hour apart, nowhere near the copy loop.

// freshenEvery is how often a run's files are touched (a variable, so a
// test can shorten it).
var freshenEvery = time.Hour

// lockDirForCleaners opens dir and takes an exclusive flock on it, held
// until the returned descriptor is closed (-1 when it could not be had:
// then only the freshening protects the directory). Close-on-exec: the
// agent does not inherit it. No part of herdr-pi locks a run directory
// itself (its wrapper's lock is the file runLockName in it).
func lockDirForCleaners(dir string) int {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		_ = unix.Close(fd)
		return -1
	}
	return fd
}

// freshener touches a run's files every freshenEvery until stopped. It
// owns one goroutine, which stop ends and waits for.
type freshener struct {
	dir   string   // the run directory
	above []string // directories of ours above it, and the registry's
	entry string   // the pane's registry entry ("" when not registered)
	// also names, at every pass, more files the run keeps (nil: none).
	also func() []string
	logf func(format string, args ...any)

	quit chan struct{}
	wg   sync.WaitGroup
	// mu makes a pass asked for (Run.Freshen) and the ticker's one at
	// the same moment take turns.
	mu sync.Mutex
	// gone is set once the run directory was found missing and logged.
	gone bool
}

func startFreshener(f *freshener) *freshener {
	f.quit = make(chan struct{})
	every := freshenEvery // read here, by the starter: a test sets it
	guard.Go(&f.wg, f.logf, "control: the freshening of the run directory", "its files are no longer kept young for cleaners of /tmp; the agent runs on",
		func() { f.loop(every) })
	return f
}

func (f *freshener) loop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.quit:
			return
		case <-t.C:
			f.pass()
		}
	}
}

func (f *freshener) stop() {
	close(f.quit)
	f.wg.Wait()
}

// pass touches everything once. The run directory missing is told once
// in the log, in words a person reading it after a failed `status` can
// act on; the agent runs on regardless.
func (f *freshener) pass() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := os.Lstat(f.dir); errors.Is(err, fs.ErrNotExist) {
		if !f.gone {
			f.gone = true
			f.logf("control: the run directory %s was removed from under this wrapper (by hand, or by a cleaner of /tmp that heeds neither its lock nor its times), and its control socket with it: "+
				"herdr-pi status, waiting and the probe cannot reach this wrapper any more; the agent runs on, and a restart under herdr-pi wrap gives it a new one", f.dir)
		}
		return
	}
	touchTree(f.dir)
	// The other run directories this process holds (a live handoff's,
	// with its bridge and launch files) live as long as this run does or
	// less: kept young alike.
	for _, dir := range heldDirs() {
		if dir != f.dir {
			touchTree(dir)
		}
	}
	for _, p := range f.above {
		touch(p)
	}
	if f.entry != "" {
		touch(f.entry)
	}
	if f.also != nil {
		for _, p := range f.also() {
			touch(p)
		}
	}
}

// touchTree touches dir and everything in it.
func touchTree(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		// A temporary file is judged by its age when its writer died
		// (SweepTemp): it is left to age.
		if !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		touch(path)
		return nil
	})
}

// touch sets path's access and modification times to now, a symlink's
// own rather than its target's; whatever is not there is left so.
func touch(path string) {
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW)
}
