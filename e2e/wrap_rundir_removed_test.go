package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Days into a run, something removes the wrapper's run directory from
// under it (a /tmp cleaner where there is no XDG_RUNTIME_DIR, a logout
// that empties it): its control socket is gone with it. `status` in the
// agent then says that the wrapper still runs and cannot be reached, not
// that it has exited (which would have the person start a second one).
func TestStatusSaysARemovedRunDirectoryIsNotAnExitedWrapper(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "hprm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent",
		agentScript(t, "print ready\\r\\n", "readline", "run herdr-pi status")}})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for deadline := time.Now().Add(30 * time.Second); len(runs) == 0; time.Sleep(20 * time.Millisecond) {
		runs, _ = filepath.Glob(filepath.Join(dir, "herdr-pi-*", "run-*"))
		if time.Now().After(deadline) {
			t.Fatalf("no run directory under %s", dir)
		}
	}
	if err := os.RemoveAll(runs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	r.wait(30 * time.Second)
	out := r.bytes()
	if !bytes.Contains(out, []byte("still runs")) || bytes.Contains(out, []byte("has exited")) {
		t.Fatalf("status after the run directory was removed:\n%s", out)
	}
}
