package testenv

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SystemdTmpfilesClean runs the real systemd-tmpfiles' aging over dir, as
// its "q /tmp … 10d" line (upstream's default for /tmp) ages /tmp: what
// in dir is older than age goes, except what it must spare (a directory
// someone holds a lock on, and all below it; a live socket; …). The line
// judges by access and modification time only ("am:" before the age):
// a test can set those back, not the change time, which on a file really
// left alone is as old. Missing (see there) without systemd-tmpfiles.
func SystemdTmpfilesClean(t testing.TB, dir string, age time.Duration) {
	t.Helper()
	bin, err := exec.LookPath("systemd-tmpfiles")
	if err != nil {
		Missing(t, "systemd-tmpfiles", "apt-get install systemd")
		return
	}
	conf := filepath.Join(t.TempDir(), "age.conf")
	// "e": age an existing directory's contents, never make or change it.
	line := fmt.Sprintf("e %s - - - am:%ds\n", dir, int(age/time.Second))
	if err := os.WriteFile(conf, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "--clean", conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles --clean %s (%q): %v\n%s", conf, line, err, out)
	}
}

// AgeAll sets the access and modification times of base and everything
// under it (a symlink's own) back by age, as if nobody had touched them
// since.
func AgeAll(t testing.TB, base string, age time.Duration) {
	t.Helper()
	then := unix.NsecToTimespec(time.Now().Add(-age).UnixNano())
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{then, then}, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		t.Fatal(err)
	}
}
