package control

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeStatfs makes every directory look like st for the test.
func fakeStatfs(t *testing.T, st unix.Statfs_t) {
	t.Helper()
	old := statfs
	statfs = func(_ string, out *unix.Statfs_t) error { *out = st; return nil }
	t.Cleanup(func() { statfs = old })
}

// roomy is a filesystem with plenty of blocks and inodes.
var roomy = unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1 << 20, Bfree: 1 << 19, Bavail: 1 << 19, Files: 1 << 16, Ffree: 1 << 15}

// What statfs says decides without writing a byte: a full filesystem
// (blocks or inodes) or a read-only one cannot take a run's files.
func TestCheckRoomReadsTheFilesystem(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		edit    func(*unix.Statfs_t)
		problem RoomProblem
		says    string
	}{
		{"plenty", func(*unix.Statfs_t) {}, 0, ""},
		{"no free block", func(s *unix.Statfs_t) { s.Bfree, s.Bavail = 0, 0 }, RoomSpace, dir + " cannot take a new file: its filesystem has 0 KiB free for us, and a wrapper writes up to 128 KiB there"},
		{"less than a run writes", func(s *unix.Statfs_t) { s.Bfree, s.Bavail = 3, 3 }, RoomSpace, "has 12 KiB free for us"},
		{"no free inode", func(s *unix.Statfs_t) { s.Ffree = 0 }, RoomInodes, dir + " cannot take a new file: its filesystem has no free inodes"},
		{"too few inodes", func(s *unix.Statfs_t) { s.Ffree = 5 }, RoomInodes, dir + " cannot take a new file: its filesystem has only 5 free inodes, and a wrapper makes up to 16 files there"},
		{"read-only", func(s *unix.Statfs_t) { s.Flags |= unix.ST_RDONLY }, RoomReadOnly, dir + " cannot take a new file: it is on a read-only filesystem"},
		// Some filesystems count no inodes or blocks at all: not judged by them.
		{"no inode count", func(s *unix.Statfs_t) { s.Files, s.Ffree = 0, 0 }, 0, ""},
		{"no block count", func(s *unix.Statfs_t) { s.Blocks, s.Bfree, s.Bavail = 0, 0, 0 }, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := roomy
			tc.edit(&st)
			fakeStatfs(t, st)
			err := CheckRoom(dir, false)
			var re *RoomError
			switch {
			case tc.problem == 0 && err != nil:
				t.Fatalf("CheckRoom: %v, want nil", err)
			case tc.problem == 0:
			case !errors.As(err, &re) || re.Problem != tc.problem || !strings.Contains(err.Error(), tc.says):
				t.Fatalf("CheckRoom: %v, want problem %d saying %q", err, tc.problem, tc.says)
			}
		})
	}
}

// The test file is created, written and removed on every path, the
// failing write included; a failure is told apart by its errno.
func TestCheckRoomWritesAndRemovesItsTestFile(t *testing.T) {
	fakeStatfs(t, roomy)
	for _, tc := range []struct {
		name    string
		err     error
		problem RoomProblem
	}{
		{"it writes", nil, 0},
		{"no space", syscall.ENOSPC, RoomSpace},
		{"over quota", syscall.EDQUOT, RoomSpace},
		{"read-only", syscall.EROFS, RoomReadOnly},
		{"refused", syscall.EACCES, RoomDenied},
		{"something else", syscall.EIO, RoomOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old := writeProbe
			writeProbe = func(f *os.File) error {
				if _, err := os.Stat(f.Name()); err != nil {
					t.Errorf("the test file is not there while it is written: %v", err)
				}
				if tc.err != nil {
					return &os.PathError{Op: "write", Path: f.Name(), Err: tc.err}
				}
				return old(f)
			}
			defer func() { writeProbe = old }()
			err := CheckRoom(dir, true)
			var re *RoomError
			if tc.problem == 0 && err != nil || tc.problem != 0 && (!errors.As(err, &re) || re.Problem != tc.problem || !errors.Is(err, tc.err)) {
				t.Errorf("CheckRoom: %v, want problem %d", err, tc.problem)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("left in the directory: %v", left)
			}
		})
	}
}

// A directory the test file cannot be created in (here: not there) is a
// failure, not a pass, and leaves nothing behind.
func TestCheckRoomCannotCreate(t *testing.T) {
	fakeStatfs(t, roomy)
	dir := t.TempDir() + "/gone"
	var re *RoomError
	if err := CheckRoom(dir, true); !errors.As(err, &re) || re.Problem != RoomOther || !strings.Contains(err.Error(), dir+" cannot take a new file: ") {
		t.Fatalf("CheckRoom: %v", err)
	}
}
