package handoff

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// The command file and its watch file are private (0600, whatever the
// umask) and made with O_EXCL beside each other; the script removes the
// watch file only when its launch fails (that absence is what tells the
// opener) and removes itself either way.
func TestTheWatchFileIsPrivateAndGoesOnlyWhenTheLaunchFails(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	for _, c := range []struct {
		name      string
		argv      []string
		watchGoes bool
	}{
		{"fails", []string{"sh", "-c", "exit 3"}, true},
		{"ends well", []string{"true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := privateDir(t)
			cf, err := WriteCommandFile(dir, Launch{Argv: c.argv, Title: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(cf.Watch) != dir || !strings.HasSuffix(cf.Watch, ".watch") {
				t.Fatalf("watch file %s, want one beside the command file in %s", cf.Watch, dir)
			}
			for _, p := range []string{cf.Path, cf.Watch} {
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: %v (%v), want a regular 0600 file", p, fi.Mode(), err)
				}
			}
			cmd := exec.Command("sh", cf.Path)
			cmd.Stdin = strings.NewReader("\n") // the Enter that closes a failed pane
			_ = cmd.Run()
			if _, err := os.Lstat(cf.Path); !os.IsNotExist(err) {
				t.Errorf("the command file is still there after it ran: %v", err)
			}
			_, err = os.Lstat(cf.Watch)
			if gone := os.IsNotExist(err); gone != c.watchGoes {
				t.Errorf("watch file gone = %v (%v), want %v", gone, err, c.watchGoes)
			}
		})
	}
}

// The command a command file runs is told where to say its Pi started
// (StartedFileEnv): the file beside the command file, which the script
// does not make.
func TestTheCommandIsToldWhereToSayItsPiStarted(t *testing.T) {
	dir := privateDir(t)
	out := filepath.Join(dir, "out")
	cf, err := WriteCommandFile(dir, Launch{Argv: []string{"sh", "-c", `printf %s "$` + StartedFileEnv + `" > "$0"`, out}, Title: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(cf.Path, ".sh") + ".started"; cf.Started != want {
		t.Fatalf("started file %s, want %s", cf.Started, want)
	}
	if err := exec.Command("sh", cf.Path).Run(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != cf.Started {
		t.Errorf("the command was told %q (%v), want %q", b, err, cf.Started)
	}
	if _, err := os.Lstat(cf.Started); !os.IsNotExist(err) {
		t.Errorf("the script made the started file: %v", err)
	}
}

// A command file whose text cannot be written whole (a full disk, here a
// file size limit) leaves nothing behind: neither the partly written
// script nor the watch file made before it.
func TestACommandFileThatCannotBeWrittenLeavesNothing(t *testing.T) {
	if dir := testenv.FileSizeLimited(t); dir != "" {
		_, err := WriteCommandFile(dir, Launch{Argv: []string{"pi", strings.Repeat("x", 4096)}, Title: "test"})
		t.Logf("result: %v", err)
		return
	}
	dir := privateDir(t)
	out := testenv.RunFileSizeLimited(t, dir, 64)
	if !strings.Contains(out, "result: writing the command file") || !strings.Contains(out, "file too large") {
		t.Fatalf("the write did not fail for the file size limit, so this proves nothing:\n%s", out)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the private directory: %v", left)
	}
}
