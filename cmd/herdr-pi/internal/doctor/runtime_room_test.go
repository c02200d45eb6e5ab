package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
)

// The runtime directory is ours and 0700, or can be made, and still
// cannot take a wrapper's files: its filesystem is full, read-only, or
// refuses writes. wrap then runs the agent without its control socket,
// so the row fails, naming the directory and the way out (it said ok).
// The room check is injected here (the real one is bridge/control's,
// tested there and against a real full tmpfs in e2e).
func TestDoctorRuntimeDirectoryWithoutRoom(t *testing.T) {
	const without = "; until then wrap runs the agent without its control socket"
	for _, tc := range []struct {
		name   string
		exists bool
		err    func(dir string) error
		want   string
	}{
		{"it exists: no space", true, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomSpace, Free: 4 << 10}
		}, "fail|BASE cannot take a new file: its filesystem has 4 KiB free for us, and a wrapper writes up to 128 KiB there" + without +
			"|free space on the filesystem of BASE (df -h BASE shows it), or point XDG_RUNTIME_DIR at a directory of yours on another filesystem"},
		{"it exists: no inodes", true, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomInodes}
		}, "fail|BASE cannot take a new file: its filesystem has no free inodes" + without + "|remove files on the filesystem of BASE (df -i BASE counts its inodes)"},
		{"it exists: read-only", true, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomReadOnly, Err: syscall.EROFS}
		}, "fail|BASE cannot take a new file: it is on a read-only filesystem" + without + "|remount the filesystem of BASE read-write"},
		{"it exists: writes refused", true, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomDenied, Err: &os.PathError{Op: "open", Path: dir + "/.room-1", Err: syscall.EPERM}}
		}, "fail|BASE cannot take a new file although it is ours and 0700: open BASE/.room-1: operation not permitted" + without + "|lsattr -d BASE"},
		{"not made yet: its parent is full", false, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomInodes}
		}, "fail|BASE cannot be made: PARENT cannot take a new file: its filesystem has no free inodes" + without + "|df -i PARENT"},
		{"not made yet: its parent is read-only", false, func(dir string) error {
			return &control.RoomError{Dir: dir, Problem: control.RoomReadOnly}
		}, "fail|BASE cannot be made: PARENT cannot take a new file: it is on a read-only filesystem" + without + "|remount the filesystem of PARENT read-write"},
		{"room enough", true, func(string) error { return nil }, "ok|BASE is ours and 0700"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := doctortest.New(t)
			base := w.Paths().RuntimeBase
			if tc.exists {
				mkdir(t, base, 0o700)
			}
			in := input(w, time.Second)
			var asked []string
			in.Room = func(dir string, write bool) error {
				asked = append(asked, dir)
				if write != tc.exists {
					t.Errorf("Room(%s, write %v): the test file belongs only in a directory of ours", dir, write)
				}
				return tc.err(dir)
			}
			checkRowWant(t, runtimeDirRow(in), strings.NewReplacer("BASE", base, "PARENT", filepath.Dir(base)).Replace(tc.want))
			want := base
			if !tc.exists {
				want = filepath.Dir(base)
			}
			if len(asked) != 1 || asked[0] != want {
				t.Errorf("room asked of %q, want %q", asked, want)
			}
		})
	}
}

// Without an injected check the row asks the real one: in a directory
// with room it passes, and leaves no file behind.
func TestDoctorRuntimeDirectoryRoomLeavesNothing(t *testing.T) {
	w := doctortest.New(t)
	base := w.Paths().RuntimeBase
	mkdir(t, base, 0o700)
	checkRowWant(t, runtimeDirRow(input(w, time.Second)), "ok|"+base+" is ours and 0700")
	if left, err := os.ReadDir(base); err != nil || len(left) != 0 {
		t.Errorf("left in %s: %v %v", base, left, err)
	}
}
