package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
