package board

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A wrapper can run for weeks with its board under /tmp (no
// XDG_RUNTIME_DIR). Age-based cleaners remove what nobody touched for ten
// days: its presence file first, and with it every toast of the others
// stopped naming its questions, as if it had exited. What Kept names is
// what its hourly freshening touches; after that, eleven days of age and
// the real systemd-tmpfiles' aging, the others still see it and its
// question.
func TestSystemdTmpfilesAgingSparesTheBoardOfALiveWrapper(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "toasts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	a, _ := Open(dir, "/h.sock", "w1:p1")
	b, _ := Open(dir, "/h.sock", "w1:p2")
	present(t, a, b)
	held := a.Hold("api")

	const age = 11 * 24 * time.Hour
	testenv.AgeAll(t, base, age)
	for _, w := range []*Board{a, b} { // their freshening passes
		now := unix.Timespec{Nsec: unix.UTIME_NOW}
		for _, p := range w.Kept() {
			_ = unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	testenv.SystemdTmpfilesClean(t, base, 10*24*time.Hour)

	if got := b.Others(); !slices.Equal(got, []Held{{Entry: held, Place: "api"}}) {
		left, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		t.Fatalf("after 11 days and systemd-tmpfiles' aging, the other wrapper sees %+v, want a's question (the board holds %q)", got, left)
	}
	if n := b.Namesakes("x"); n != 1 {
		t.Errorf("b counts %d namesakes of a, want 1: a's presence is gone", n)
	}
}
