package control

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// listenAsNobody listens on a unix socket at path as uid 65534: on an OS
// thread of its own whose uids are nobody's (a raw setresuid changes only
// the calling thread), which ends with the goroutine, so no other code
// ever runs as nobody. The kernel records the listener's credentials at
// listen(2): a client's SO_PEERCRED then names nobody. Needs root.
func listenAsNobody(t *testing.T, path string) net.Listener {
	t.Helper()
	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to listen as another uid (CI runs as root)")
	}
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result)
	go func() { // owned by listenAsNobody, which waits for it
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if _, _, errno := syscall.RawSyscall(syscall.SYS_SETRESUID, testenv.Nobody, testenv.Nobody, testenv.Nobody); errno != 0 {
			done <- result{err: errno}
			return
		}
		ln, err := net.Listen("unix", path)
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listen as uid %d: %v", testenv.Nobody, r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

// Dial gives the run's token only to a wrapper of our own uid: a socket
// another user serves where HERDR_PI_CONTROL points (an environment
// carried across su, say) gets nothing, and Dial says whose it is. The
// wrapper side has always checked its peers; Dial trusted whoever answered.
func TestDialGivesTheTokenOnlyToOurOwnUID(t *testing.T) {
	// Where nobody may make its socket: the test's own temporary
	// directory sits below one only root may enter.
	dir, err := os.MkdirTemp("/tmp", "hpnobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.sock")
	ln := listenAsNobody(t, path)
	got := make(chan string, 1)
	go func() { // owned by the test: ends when the listener closes
		c, err := ln.Accept()
		if err != nil {
			got <- ""
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := Dial(ctx, path, "secret-token-of-this-run")
	if err == nil {
		c.Close()
		t.Fatal("Dial took a socket of uid 65534")
	}
	if !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("Dial's error %q does not say whose socket it is", err)
	}
	ln.Close()
	if line := <-got; strings.Contains(line, "secret-token-of-this-run") {
		t.Fatalf("the token went to uid 65534: %q", line)
	}
}
