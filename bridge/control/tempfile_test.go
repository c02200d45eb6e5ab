package control

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tempWriterEnv makes the test binary a writer stopped between writing
// its temporary file and renaming it: it makes the file in the named
// directory, prints its path and waits to be killed.
const tempWriterEnv = "HERDR_PI_TEST_TEMP_WRITER"

func tempWriterHelper() {
	dir := os.Getenv(tempWriterEnv)
	if dir == "" {
		return
	}
	tmp, err := CreateTemp(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	_, _ = tmp.WriteString(`{"half":`)
	fmt.Println(tmp.Name())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// startTempWriter starts a writer process stopped before its rename and
// returns it with its temporary file.
func startTempWriter(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), tempWriterEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		t.Fatalf("temp writer: %q %v", line, err)
	}
	return cmd, strings.TrimSpace(line)
}

// aged sets path's modification time into the past, past tempGrace.
func aged(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-2 * tempGrace)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A wrapper killed (SIGKILL) between writing its registry entry's
// temporary file and renaming it leaves the file behind; the next
// wrapper that registers removes it, and one left by an older herdr-pi
// (no lock) once it is old. The temporary file of a writer that still
// runs is never removed, however long it has been stopped there, nor is
// a fresh one whose writer has not locked it yet.
func TestRegistrySweepsTheTempFilesOfKilledWriters(t *testing.T) {
	reg := PaneRegistry(shortDir(t))
	for _, d := range []string{filepath.Dir(reg.Dir), reg.Dir} {
		if err := EnsurePrivateDir(d); err != nil {
			t.Fatal(err)
		}
	}
	killed, killedTemp := startTempWriter(t, reg.Dir)
	_, stalledTemp := startTempWriter(t, reg.Dir)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	unlocked, fresh := filepath.Join(reg.Dir, ".tmp-123456"), filepath.Join(reg.Dir, ".tmp-654321")
	for _, f := range []string{unlocked, fresh} {
		if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{killedTemp, stalledTemp, unlocked} {
		aged(t, f)
	}

	un, err := reg.Register(PaneKey("/h", "w1:p1"), Endpoint{Socket: "/x", Token: "t", PID: os.Getpid(), PaneID: "w1:p1"})
	if err != nil {
		t.Fatal(err)
	}
	defer un()
	got := names(t, reg.Dir)
	want := []string{filepath.Base(fresh), filepath.Base(stalledTemp), PaneKey("/h", "w1:p1")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the registry holds %q after a wrapper registered, want %q (the killed writer's %s and the old unlocked %s removed, the stalled writer's and the fresh one kept)",
			got, want, filepath.Base(killedTemp), filepath.Base(unlocked))
	}
}

// doctor's test file, left by a doctor killed before it removed it, is
// removed by the next check of that directory.
func TestCheckRoomSweepsTheTestFileOfAKilledCheck(t *testing.T) {
	dir := shortDir(t)
	left := filepath.Join(dir, ".room-123456")
	if err := os.WriteFile(left, make([]byte, 512), 0o600); err != nil {
		t.Fatal(err)
	}
	aged(t, left)
	if err := CheckRoom(dir, true); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("left after a check: %q", got)
	}
}

// A temporary file given up (its write or rename failed) is removed by
// Done; one renamed into place is not touched by it, nor is a file that
// took its name since.
func TestTempFileDoneRemovesOnlyItsOwnTemporaryFile(t *testing.T) {
	dir := shortDir(t)
	given, err := CreateTemp(dir)
	if err != nil {
		t.Fatal(err)
	}
	given.Done()
	given.Done()
	renamed, err := CreateTemp(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(renamed.Name(), filepath.Join(dir, "entry")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renamed.Name(), nil, 0o600); err != nil { // another's, under the same name
		t.Fatal(err)
	}
	renamed.Done()
	if got, want := names(t, dir), []string{filepath.Base(renamed.Name()), "entry"}; !slices.Equal(got, want) {
		t.Fatalf("left %q, want %q", got, want)
	}
}
