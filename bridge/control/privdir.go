package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// EnsurePrivateDir creates dir (mode 0700) if it is missing and checks that
// it is a real directory, owned by us and closed to everyone else. A
// directory someone else could create, replace or read first must never
// hold our sockets and tokens, so a wrong owner or mode is refused, not
// repaired.
func EnsurePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create private directory %s: %w", dir, err)
	}
	return checkPrivate(dir)
}

func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("private directory %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("private directory %s is not a directory (a symlink or file is in the way; remove it)", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("private directory %s: cannot read its owner", dir)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("private directory %s belongs to uid %d, not to us (uid %d): refusing to use it; remove it or set XDG_RUNTIME_DIR", dir, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("private directory %s has mode %04o, want 0700: refusing to use it; run chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// runDirPrefix starts every per-run directory name; the wrapper's pid
// follows, so leftovers of a wrapper that was killed can be found and
// removed by the next one.
const runDirPrefix = "run-"

// NewRunDir makes a fresh private directory for one wrapper run under base
// (itself checked with [EnsurePrivateDir]), after removing the directories
// of runs whose wrapper is gone (killed with SIGKILL, say).
func NewRunDir(base string) (string, error) {
	if err := EnsurePrivateDir(base); err != nil {
		return "", err
	}
	sweepRunDirs(base)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("create run directory in %s: %w", base, err)
	}
	if err := checkPrivate(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func sweepRunDirs(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), runDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(base, e.Name()))
	}
}

// processAlive reports whether pid names a running process. EPERM means it
// exists but is someone else's, which is still alive.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
