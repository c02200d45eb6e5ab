package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeLease(t *testing.T) {
	l, err := DecodeLease([]byte(`{"pid":32754,"token":"ff1bf489-4528-43a0-a95e-1e654c214d69","startedAt":1796131938919.6892}` + "\n"))
	if err != nil || l.PID != 32754 || l.Token != "ff1bf489-4528-43a0-a95e-1e654c214d69" || l.StartedAt != 1796131938919.6892 {
		t.Fatalf("%+v %v", l, err)
	}
	for js, want := range map[string]string{
		`{"token":"t","startedAt":1}`:             "no pid",
		`{"pid":0,"token":"t","startedAt":1}`:     "pid 0 is not a positive integer",
		`{"pid":1.5,"token":"t","startedAt":1}`:   "pid 1.5 is not a positive integer",
		`{"pid":-3,"token":"t","startedAt":1}`:    "pid -3 is not a positive integer",
		`{"pid":"7","token":"t","startedAt":1}`:   `pid "7" is not a positive integer`,
		`{"pid":7,"token":"t","startedAt":"1"}`:   `startedAt "1" is not a finite number`,
		`{"pid":7,"token":"t","startedAt":true}`:  "startedAt true is not a finite number",
		`{"pid":7,"token":"","startedAt":1}`:      "no token",
		`{"pid":7,"startedAt":1}`:                 "no token",
		`{"pid":7,"token":"t"}`:                   "no startedAt",
		`{"pid":7,"token":"t","startedAt":1e999}`: "startedAt 1e999 is not a finite number",
		`{"pid":7,"token":"t","startedAt":null}`:  "no startedAt",
		`garbage`:                                 "invalid JSON",
	} {
		if _, err := DecodeLease([]byte(js)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", js, err, want)
		}
	}
}

func TestReadLease(t *testing.T) {
	dir := t.TempDir()
	if l, err := ReadLease(dir); l != nil || err != nil {
		t.Fatalf("no lease: %v %v", l, err)
	}
	if err := os.WriteFile(filepath.Join(dir, LeaseFile), []byte(`{"pid":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadLease(dir)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(dir, LeaseFile) {
		t.Fatalf("bad lease: %v", err)
	}
}

// selfLease is a lease of this test process, taken the way the engine
// takes one.
func selfLease(t *testing.T) *Lease {
	t.Helper()
	ct, err := procCtimeMs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return &Lease{PID: os.Getpid(), Token: "t", StartedAt: ct}
}

func TestLeaseAlive(t *testing.T) {
	self := selfLease(t)
	if !self.Alive() {
		t.Error("this process's own lease is not alive")
	}
	// /proc/<pid> newer than the lease: the pid now belongs to another
	// process.
	reused := *self
	reused.StartedAt -= 0.001
	if reused.Alive() {
		t.Error("a lease older than its pid's /proc entry is alive")
	}
	later := *self
	later.StartedAt += 1000
	if !later.Alive() {
		t.Error("a lease taken after the process started is dead")
	}

	// A process that has exited and been reaped: kill(pid, 0) says ESRCH.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := &Lease{PID: cmd.Process.Pid, Token: "t", StartedAt: 1e18}
	if dead.Alive() {
		t.Errorf("the lease of exited pid %d is alive", dead.PID)
	}
	var none *Lease
	if none.Alive() {
		t.Error("no lease is alive")
	}
}

// TestLeaseCtimeMatchesNode checks the ctime arithmetic against Node's own
// ctimeMs of the same /proc entry, which is what the engine writes as
// startedAt: equality is what keeps a live owner alive.
func TestLeaseCtimeMatchesNode(t *testing.T) {
	node := nodeBinary(t)
	for range 3 {
		cmd := exec.Command(node, "-e", `process.stdout.write(String(require("fs").statSync("/proc/" + process.pid).ctimeMs) + "\n"); process.stdin.resume()`)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, _ := out.Read(buf)
		nodeMs, perr := strconv.ParseFloat(strings.TrimSpace(string(buf[:n])), 64)
		ours, err := procCtimeMs(cmd.Process.Pid)
		l := &Lease{PID: cmd.Process.Pid, Token: "t", StartedAt: nodeMs}
		alive := l.Alive()
		stdin.Close()
		cmd.Wait()
		if perr != nil || err != nil || ours != nodeMs || !alive {
			t.Fatalf("node ctimeMs %q (%v), ours %v (%v), alive %v", buf[:n], perr, ours, err, alive)
		}
	}
}
