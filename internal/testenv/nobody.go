package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Nobody is the uid and gid DialAsNobody runs as.
const Nobody = 65534

// The environment that makes a test binary, started by DialAsNobody, dial
// instead of running tests (Main and Checked look for it).
const (
	dialEnv = "HERDR_PI_TEST_DIAL"
	lineEnv = "HERDR_PI_TEST_LINE"
)

// DialAsNobody runs a copy of this test binary as uid/gid 65534: it dials
// the unix socket at path, sends line, and prints what happened (the dial
// error, or the reply line and read error), which is returned. It needs
// root (CI runs as root); elsewhere the test ends through Missing.
func DialAsNobody(t testing.TB, path, line string) string {
	t.Helper()
	if os.Getuid() != 0 {
		Missing(t, "root", "run the tests as root to start a process as another uid (CI runs as root)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary sits in a private build directory; nobody needs a
	// copy it can execute.
	dir, err := os.MkdirTemp("/tmp", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dialer")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{dialEnv + "=" + path, lineEnv + "=" + line}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dialer as uid %d: %v\n%s", Nobody, err, out)
	}
	return string(out)
}

// dialMode is the test binary started by DialAsNobody: it dials, tells,
// and exits.
func dialMode() {
	path := os.Getenv(dialEnv)
	if path == "" {
		return
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		os.Exit(0)
	}
	fmt.Fprintln(c, os.Getenv(lineEnv))
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	reply, err := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("reply: %q err: %v\n", reply, err)
	c.Close()
	os.Exit(0)
}

// AsUnprivileged runs fn with files checked as a user who may not read
// path. Under root (as CI runs) no mode keeps the process out, so fn runs
// on an OS thread of its own whose filesystem uid is [Nobody] (setfsuid(2)
// is per thread and drops the capability to override modes); the thread
// ends with fn, so no other test ever runs on it. fn must do its file work
// on the goroutine it was called on.
func AsUnprivileged(t testing.TB, path string, fn func()) {
	t.Helper()
	if os.Getuid() != 0 {
		fn()
		return
	}
	var skip string
	done := make(chan struct{})
	go func() { // owned by AsUnprivileged, which waits for it
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := unix.Setfsuid(Nobody); err != nil {
			skip = "setfsuid: " + err.Error()
			return
		}
		if f, err := os.Open(path); err == nil {
			f.Close()
			skip = "setfsuid(65534) did not take: " + path + " is still readable"
			return
		}
		fn()
	}()
	<-done
	if skip != "" {
		Missing(t, "a thread that cannot read "+path, skip+"; run the test as an unprivileged user")
	}
}
