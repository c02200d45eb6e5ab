package control

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Two cleaners of /tmp, as far as they decide what goes, run over a
// runtime base whose every entry a test has made 11 days old. ctime cannot
// be set back, so both judge by atime and mtime only; on a file really left
// alone for 11 days ctime is as old as those.

// systemdTmpfilesAge removes what systemd-tmpfiles (252, as tmpfiles.d(5)
// "Age" and its source describe) would under a "q /tmp 1777 root root 10d"
// line, upstream's default for /tmp: it descends into a directory only when
// it can take a shared flock on it; a file goes when both its times are
// before cutoff, unless its sticky bit is set, it is a socket that is live
// (listed in /proc/net/unix) or a device; a directory, emptied, when both
// its times are.
func systemdTmpfilesAge(t *testing.T, dir string, cutoff time.Time) {
	t.Helper()
	live := liveUnixSockets(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil {
			continue
		}
		old := time.Unix(st.Atim.Unix()).Before(cutoff) && time.Unix(st.Mtim.Unix()).Before(cutoff)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			if unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) != nil {
				unix.Close(fd) // locked: skipped, and all below it
				continue
			}
			systemdTmpfilesAge(t, path, cutoff)
			unix.Close(fd)
			if old {
				_ = unix.Rmdir(path) // ENOTEMPTY: kept
			}
		case unix.S_IFSOCK:
			if !live[path] && old && st.Mode&unix.S_ISVTX == 0 {
				_ = os.Remove(path)
			}
		case unix.S_IFCHR, unix.S_IFBLK:
		default:
			if old && st.Mode&unix.S_ISVTX == 0 {
				_ = os.Remove(path)
			}
		}
	}
}

// reaperAge removes what tmpreaper and tmpwatch do by default: regular
// files (and symlinks) whose access time is before cutoff, then
// directories left empty whose modification time is; sockets and other
// special files stay (no --all). Neither knows of locks or sticky bits.
func reaperAge(dir string, cutoff time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			reaperAge(path, cutoff)
			if time.Unix(st.Mtim.Unix()).Before(cutoff) {
				_ = unix.Rmdir(path)
			}
		case unix.S_IFREG, unix.S_IFLNK:
			if time.Unix(st.Atim.Unix()).Before(cutoff) {
				_ = os.Remove(path)
			}
		}
	}
}

// liveUnixSockets are the bound paths /proc/net/unix lists.
func liveUnixSockets(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	live := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			live[fields[7]] = true
		}
	}
	return live
}

// ageAll sets the times of base and everything under it back by age and
// returns every path it aged, sorted.
func ageAll(t *testing.T, base string, age time.Duration) []string {
	t.Helper()
	then := time.Now().Add(-age)
	var paths []string
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, path)
		ts := []unix.Timespec{unix.NsecToTimespec(then.UnixNano()), unix.NsecToTimespec(then.UnixNano())}
		return unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	return paths
}

// missing lists those of paths that are gone.
func missing(paths []string) []string {
	var gone []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, p)
		}
	}
	return gone
}

// longRun starts a registered run under base with a file of the probe's
// and a session claim in its directory, as a wrapper of Pi has.
func longRun(t *testing.T, base string) *Run {
	t.Helper()
	rec := newRecorder()
	run, err := Start(RunConfig{RuntimeBase: base, PaneID: "w1:p1", HerdrSocket: "/tmp/h.sock", Events: rec, Requests: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	if err := os.WriteFile(filepath.Join(run.Dir, "probe.js"), []byte("//"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run.ClaimSession("/home/a/.pi/agent/sessions/s.jsonl"); err != nil {
		t.Fatal(err)
	}
	return run
}

// statusThroughRegistry asks the pane's wrapper for its status the way a
// hook outside the agent does: through the pane registry.
func statusThroughRegistry(t *testing.T, base string) error {
	t.Helper()
	ep, err := PaneRegistry(base).Lookup(PaneKey("/tmp/h.sock", "w1:p1"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, ep.Socket, ep.Token)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Status(ctx)
	return err
}

// systemd-tmpfiles ages /tmp while a wrapper has run there for 11 days:
// nothing of its run directory goes, without the wrapper having done
// anything meanwhile.
func TestSystemdTmpfilesAgingSparesALiveRunDirectory(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	run := longRun(t, base)
	aged := ageAll(t, run.Dir, 11*24*time.Hour)
	systemdTmpfilesAge(t, filepath.Dir(base), time.Now().Add(-10*24*time.Hour))
	if gone := missing(aged); len(gone) > 0 {
		t.Fatalf("systemd-tmpfiles' aging removed, of a wrapper that still runs:\n%s", strings.Join(gone, "\n"))
	}
}

// After a freshening pass (hourly in a wrapper) nothing of a run that had
// been left alone for 11 days is old for any cleaner: neither tmpreaper or
// tmpwatch nor systemd-tmpfiles removes anything of it, the pane's
// registry entry included, and a hook still reaches the wrapper through it.
func TestCleanersOfTmpSpareAFreshenedRun(t *testing.T) {
	defer func(d time.Duration) { freshenEvery = d }(freshenEvery)
	freshenEvery = 20 * time.Millisecond
	base := filepath.Join(shortDir(t), "rt")
	longRun(t, base)
	aged := ageAll(t, base, 11*24*time.Hour)
	fresh := func() bool {
		for _, p := range aged {
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || time.Since(time.Unix(st.Atim.Unix())) > time.Hour {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(10 * time.Second); !fresh(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			break // the cleaners below say what this costs
		}
	}
	cutoff := time.Now().Add(-10 * 24 * time.Hour)
	reaperAge(filepath.Dir(base), cutoff)
	systemdTmpfilesAge(t, filepath.Dir(base), cutoff)
	if gone := missing(aged); len(gone) > 0 {
		t.Fatalf("cleaners of /tmp removed, of a wrapper that still runs:\n%s", strings.Join(gone, "\n"))
	}
	if err := statusThroughRegistry(t, base); err != nil {
		t.Fatalf("status through the pane registry after the cleaners: %v", err)
	}
}

// A wrapper running a live handoff holds the handoff's run directory too
// (its lock, the bridge's client module Pi loads again on /reload, the
// launch's files), made apart from its own: after the wrapper's
// freshening pass no cleaner of /tmp removes anything of it.
func TestCleanersOfTmpSpareTheRunDirectoryOfALiveHandoff(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	run := longRun(t, base)
	handoff, err := NewRunDir(SocketBase(base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { handoff.Remove() })
	for _, name := range []string{"tools-1.mjs", "system.md"} {
		if err := os.WriteFile(filepath.Join(handoff.Path, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	aged := ageAll(t, base, 11*24*time.Hour)
	run.Freshen()
	cutoff := time.Now().Add(-10 * 24 * time.Hour)
	reaperAge(filepath.Dir(base), cutoff)
	systemdTmpfilesAge(t, filepath.Dir(base), cutoff)
	if gone := missing(aged); len(gone) > 0 {
		t.Fatalf("cleaners of /tmp removed, of a wrapper that still runs a handoff:\n%s", strings.Join(gone, "\n"))
	}
}

// Someone removes a live run's directory (rm -rf, a cleaner that knows no
// mercy): the wrapper goes on, and its log says once what was lost and
// what to do, for the person whose `status` then fails.
func TestARunDirectoryRemovedFromUnderTheWrapperIsLoggedOnce(t *testing.T) {
	defer func(d time.Duration) { freshenEvery = d }(freshenEvery)
	freshenEvery = 5 * time.Millisecond
	logs := &logs{}
	rec := newRecorder()
	run, err := Start(RunConfig{RuntimeBase: filepath.Join(shortDir(t), "rt"), Events: rec, Requests: rec, Logf: logs.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := os.RemoveAll(run.Dir); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, "was removed from under this wrapper")
	time.Sleep(50 * time.Millisecond) // ten more passes
	logs.mu.Lock()
	n := 0
	for _, l := range logs.lines {
		if strings.Contains(l, "was removed from under this wrapper") {
			n++
		}
	}
	logs.mu.Unlock()
	if n != 1 {
		t.Fatalf("the removal was logged %d times, want once", n)
	}
	if err := run.Close(); err != nil {
		t.Fatalf("closing a run whose directory is gone: %v", err)
	}
}
