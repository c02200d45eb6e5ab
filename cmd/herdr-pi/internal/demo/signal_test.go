package demo

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// signalChildEnv makes the test binary the demo under test, stopped by a
// signal of its own the moment its temporary directory exists.
const signalChildEnv = "HERDR_PI_TEST_DEMO_SIGNAL"

// A demo ended by Ctrl-C, SIGTERM or a hangup while it still starts (its
// temporary directory made, the Herdr stand-in's socket about to be)
// removes what it made, as it does once it runs: nothing else ever
// sweeps those directories out of TMPDIR.
func TestASignalWhileTheDemoStartsLeavesNothingInTMPDIR(t *testing.T) {
	if name := os.Getenv(signalChildEnv); name != "" {
		sig := unix.SignalNum(name)
		madeTempDir = func(string) { _ = unix.Kill(os.Getpid(), sig) }
		err := Run(t.Context(), Options{Out: &bytes.Buffer{}, Wrap: []string{"/bin/sleep", "600"}})
		var stopped *Interrupted
		if !errors.As(err, &stopped) || stopped.Signal != sig {
			t.Fatalf("the demo returned %v, want interrupted by %s", err, name)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{"SIGINT", "SIGTERM", "SIGHUP"} {
		t.Run(sig, func(t *testing.T) {
			tmp, err := os.MkdirTemp("", "hpsig")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(tmp)
			child := exec.Command(exe, "-test.run=^"+t.Name()[:len(t.Name())-len(sig)-1]+"$", "-test.v")
			child.Env = append(os.Environ(), signalChildEnv+"="+sig, "TMPDIR="+tmp)
			out, err := child.CombinedOutput()
			if err != nil {
				t.Errorf("the demo under test: %v\n%s", err, out)
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "*"))
			if len(left) != 0 {
				t.Errorf("left behind in TMPDIR after %s: %v", sig, left)
			}
		})
	}
}
