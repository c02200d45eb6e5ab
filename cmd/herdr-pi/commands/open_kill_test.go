package commands

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff"
)

// openChildEnv makes the test binary, started by the test below, run one
// `herdr-pi open` in the parent's world (JSON of openChild) and block.
const openChildEnv = "HERDR_PI_TEST_OPEN_CHILD"

type openChild struct {
	Env  []string
	Dir  string
	Self string
	Run  string
}

// An open killed with SIGKILL while it waits for the fork runs no cleanup
// of its own: its command file's watch file (and the command file, when
// the pane had not started it) is left in the private runtime directory.
// The next open removes what the killed one left, and leaves nothing of
// its own.
func TestTheNextOpenRemovesWhatAKilledOpenLeft(t *testing.T) {
	if spec := os.Getenv(openChildEnv); spec != "" {
		var c openChild
		if err := json.Unmarshal([]byte(spec), &c); err != nil {
			t.Fatal(err)
		}
		f := NewFactory(IO{In: strings.NewReader(""), Out: os.Stdout, Err: os.Stderr, Env: c.Env, Dir: c.Dir})
		f.Executable = func() (string, error) { return c.Self, nil }
		err := openRun(t.Context(), f, &openOptions{Run: c.Run, Attempt: "api", JSON: true, StartTimeout: time.Minute, ForkTimeout: time.Hour})
		t.Fatalf("open returned (%v); it was to wait for the fork until killed", err)
	}
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	self, _ := f.Executable()
	spec, err := json.Marshal(openChild{Env: f.IO.Env, Dir: f.IO.Dir, Self: self, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v")
	child.Env = append(os.Environ(), openChildEnv+"="+string(spec))
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	files := filepath.Join(f.Paths().RuntimeBase, "open")
	// The pane started its command (the script removed itself) and the
	// open waits for the fork, its watch file in place.
	for left := 0; ; left++ {
		names := filesUnder(t, files)
		watches, scripts := 0, 0
		for _, n := range names {
			switch filepath.Ext(n) {
			case ".watch":
				watches++
			case ".sh":
				scripts++
			}
		}
		if watches == 1 && scripts == 0 {
			break
		}
		if left == 6000 { // a guard against a hang, not a measurement
			t.Fatalf("the open never waited for the fork with its watch file in place: %v\n%s", names, childOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if names := filesUnder(t, files); len(names) == 0 {
		t.Fatal("the killed open left nothing, so this proves nothing")
	}

	if err := openRun(t.Context(), f, &openOptions{Run: run, Attempt: "api", JSON: true, StartTimeout: time.Minute, ForkTimeout: time.Millisecond}); err != nil {
		t.Fatalf("the next open: %v\n%s%s", err, out, errb)
	}
	if names := filesUnder(t, files); len(names) != 0 {
		t.Fatalf("after the next open, %s still holds %v", files, names)
	}
}

// filesUnder lists the files (not directories) under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// openLockChildEnv makes the test binary, started by the test below, run
// one `herdr-pi open --workspace` (JSON of openChild) and say how it ended.
const openLockChildEnv = "HERDR_PI_TEST_OPEN_LOCK_CHILD"

// Ctrl-C while open waits for the run's placement lock (it said it waits)
// ends it as at any other step: "interrupted", exit 130, nothing opened in
// Herdr — not the default death by SIGINT, without a word, after a line
// that promised it would open anyway.
func TestOpenInterruptedWhileItWaitsForThePlacementLock(t *testing.T) {
	if spec := os.Getenv(openLockChildEnv); spec != "" {
		var c openChild
		if err := json.Unmarshal([]byte(spec), &c); err != nil {
			t.Fatal(err)
		}
		f := NewFactory(IO{In: strings.NewReader(""), Out: os.Stdout, Err: os.Stderr, Env: c.Env, Dir: c.Dir})
		f.Executable = func() (string, error) { return c.Self, nil }
		err := openRun(t.Context(), f, &openOptions{Run: c.Run, Attempt: "api", Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond})
		fmt.Printf("OPEN RETURNED: %v\n", err)
		return
	}
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	unlock := handoff.LedgerAt(f.Paths().RuntimeBase).LockPlacement(t.Context(), run, nil)
	defer unlock()
	self, _ := f.Executable()
	spec, err := json.Marshal(openChild{Env: f.IO.Env, Dir: f.IO.Dir, Self: self, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v")
	child.Env = append(os.Environ(), openLockChildEnv+"="+string(spec))
	var childOut lockedBuilder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	for left := 0; !strings.Contains(childOut.String(), "waiting for another herdr-pi"); left++ {
		if left == 6000 { // a guard against a hang, not a measurement
			t.Fatalf("the open never said it waits for the lock:\n%s", childOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = child.Wait()
	got := childOut.String()
	if !strings.Contains(got, "OPEN RETURNED: exit 130") || !strings.Contains(got, "herdr-pi open: interrupted") {
		t.Fatalf("Ctrl-C while open waited for the placement lock: %v; it said:\n%s\nwant it interrupted (130), saying so", err, got)
	}
	if m := strings.Join(s.Methods(), " "); strings.Contains(m, "workspace.create") || strings.Contains(m, "pane.") {
		t.Fatalf("Herdr heard %s from an open interrupted before it placed anything", m)
	}
}

// lockedBuilder is a strings.Builder a child's two streams write at once.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
