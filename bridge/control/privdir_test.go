package control

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A symlink or file that another user put where a private directory goes
// (in a sticky /tmp, where the runtime directory falls back to) is refused
// and never followed, and the error says whose it is and the way out that
// works: on a sticky directory only its owner or root may remove it, so
// "remove it" alone sent the person to an rm that fails.
func TestAnotherUsersThingInAPrivateDirsPlaceIsNamedWithItsOwner(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to plant a file as another uid (CI runs as root)")
	}
	sticky := shortDir(t)
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sticky, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(path string) error{
		"a symlink": func(path string) error { return os.Symlink(target, path) },
		"a fifo":    func(path string) error { return unix.Mkfifo(path, 0o644) },
		"a file":    func(path string) error { return os.WriteFile(path, nil, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(sticky, "herdr-pi-0-"+strings.ReplaceAll(name, " ", "-"))
			if err := plant(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			err := EnsurePrivateDir(path)
			var pe *PrivateDirError
			if !errors.As(err, &pe) || pe.Problem != ProblemNotDir || pe.Owner != nobody {
				t.Fatalf("got %#v (%v), want ProblemNotDir owned by %d", pe, err, nobody)
			}
			for _, want := range []string{path, "uid 65534", "ask its owner or root", "set XDG_RUNTIME_DIR"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			var st syscall.Stat_t
			if err := syscall.Stat(target, &st); err != nil || st.Mode&0o777 != 0o700 || st.Uid != 0 {
				t.Errorf("the link's target was touched: mode %o uid %d (%v)", st.Mode&0o777, st.Uid, err)
			}
		})
	}
	// One of our own is ours to remove: the error says so.
	own := filepath.Join(sticky, "own")
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	err := EnsurePrivateDir(own)
	if err == nil || !strings.Contains(err.Error(), "remove it") || strings.Contains(err.Error(), "uid") {
		t.Fatalf("our own symlink: %v", err)
	}
}

// A private directory is only as private as the directories above it: in
// one that others may write and that is not sticky (a TMPDIR or
// XDG_RUNTIME_DIR of mode 0777), anyone may rename ours away and put
// their own in its place between our check and our use, and then replace
// the probe Pi loads from it. Such a directory is refused, naming the
// directory above and the way out; a sticky one (/tmp) is fine.
func TestAPrivateDirUnderADirectoryOthersMayWriteIsRefused(t *testing.T) {
	testenv.PermissiveUmask(t)
	top := shortDir(t)
	if err := os.Chmod(top, 0o755); err != nil { // others reach what is below
		t.Fatal(err)
	}
	open := filepath.Join(top, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{
		"right below it":    filepath.Join(open, "herdr-pi-0"),
		"further below it":  filepath.Join(open, "mine", "herdr-pi-0"),
		"through a symlink": filepath.Join(top, "link", "herdr-pi-0"),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(open, "mine"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(open, filepath.Join(top, "link")); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
			err := EnsurePrivateDir(dir)
			var pe *PrivateDirError
			if !errors.As(err, &pe) || pe.Problem != ProblemParent || pe.Parent != open {
				t.Fatalf("got %v, want it refused for %s above it", err, open)
			}
			for _, want := range []string{dir, open, "chmod +t " + open, "XDG_RUNTIME_DIR"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if err := CheckPrivateDir(dir); !errors.As(err, &pe) || pe.Problem != ProblemParent {
				t.Errorf("CheckPrivateDir: %v", err)
			}
		})
	}
	// A directory to be made under one that is missing says so, whatever
	// the working directory is.
	t.Chdir(open)
	var pe *PrivateDirError
	if err := EnsurePrivateDir(filepath.Join(top, "gone", "herdr-pi-0")); errors.As(err, &pe) && pe.Problem == ProblemParent || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("under a missing directory: %v", err)
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(filepath.Join(open, "herdr-pi-0")); err != nil {
		t.Fatalf("under a sticky directory: %v", err)
	}
	// Others cannot reach an open directory below one they may not
	// search (a test's 0700 temporary directory under umask 000).
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(top, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(filepath.Join(open, "herdr-pi-1")); err != nil {
		t.Fatalf("out of others' reach: %v", err)
	}
}
