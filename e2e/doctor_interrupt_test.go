package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// doctor's pi section loads the probe under node from a directory of its
// own in TMPDIR. Ctrl-C, a SIGTERM or the hangup of a closing terminal
// while node runs stops doctor, and the directory goes with it: no exit
// path of herdr-pi leaves a file of its making behind. Killed by the
// signal's default action instead, doctor left herdr-pi-doctor-* there,
// probe and all.
func TestDoctorInterruptedLeavesNothingInTMPDIR(t *testing.T) {
	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin, tmp := filepath.Join(dir, "bin"), filepath.Join(dir, "tmp")
			for _, d := range []string{bin, tmp} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			// A node that answers --version and then, loading the probe,
			// says so and hangs: doctor is then mid-check, its directory
			// made.
			loading := filepath.Join(dir, "loading")
			node := "#!/bin/sh\ncase \"$1\" in\n--version) echo v24.0.0 ;;\n--input-type=module) : > " + loading + "; exec sleep 30 ;;\n*) exit 1 ;;\nesac\n"
			if err := os.WriteFile(filepath.Join(bin, "node"), []byte(node), 0o700); err != nil {
				t.Fatal(err)
			}
			self, err := exec.LookPath("herdr-pi")
			if err != nil {
				t.Fatalf("herdr-pi is not on PATH (testscript.Main puts it there): %v", err)
			}
			cmd := exec.Command(self, "doctor", "pi")
			cmd.Env = append(withoutHerdr(os.Environ()), "PATH="+bin+":/usr/bin:/bin", "TMPDIR="+tmp,
				"HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "HERDR_PI_LOG=off")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }() // owned by this test, which waits for it below
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(loading); err == nil {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					<-exited
					t.Fatalf("doctor never loaded the probe; stderr: %s", stderr.Bytes())
				}
			}
			if entries, _ := os.ReadDir(tmp); len(entries) == 0 {
				t.Fatal("doctor's probe directory is not in TMPDIR while node loads it: this test looks at the wrong place")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if got := exitStatus(err); got != 130 {
					t.Errorf("exit status %d, want 130 (interrupted); stderr: %s", got, stderr.Bytes())
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatal("doctor did not end after the signal")
			}
			if got := stderr.String(); !strings.Contains(got, "herdr-pi doctor: interrupted") {
				t.Errorf("stderr %q, want it to say doctor was interrupted", got)
			}
			entries, _ := os.ReadDir(tmp)
			for _, e := range entries {
				t.Errorf("left in TMPDIR: %s", e.Name())
			}
		})
	}
}
