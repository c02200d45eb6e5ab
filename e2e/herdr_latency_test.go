package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// TestKeystrokeEchoWithBrokenHerdr measures, through real ptys, how long a
// keystroke takes to come back through `herdr-pi wrap` (typed into our
// terminal, through the wrapper into the child's pty, echoed by its line
// discipline, and back), while Herdr is healthy, absent, dead, hung, or
// answering garbage. The keystrokes start right after the child is up, so
// they overlap wrap's first report and its retries. A wrapper whose copy
// loop waited for Herdr would show delays of 500 ms and more.
func TestKeystrokeEchoWithBrokenHerdr(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for a few seconds per mode")
	}
	herdrPi, err := exec.LookPath("herdr-pi")
	if err != nil {
		t.Fatalf("herdr-pi is not on PATH (testscript.Main puts it there): %v", err)
	}
	type mode struct {
		name  string
		env   func(s *herdrtest.Server) []string
		setup func(s *herdrtest.Server)
	}
	modes := []mode{
		{name: "no Herdr (baseline)", env: func(*herdrtest.Server) []string { return nil }},
		{name: "healthy", env: (*herdrtest.Server).Env},
		{name: "absent socket", env: func(s *herdrtest.Server) []string {
			return replaceEnv(s.Env(), "HERDR_SOCKET_PATH", filepath.Join(filepath.Dir(s.SocketPath()), "gone.sock"))
		}},
		{name: "dangling socket", env: (*herdrtest.Server).Env, setup: (*herdrtest.Server).Crash},
		{name: "accepts, never answers", env: (*herdrtest.Server).Env, setup: func(s *herdrtest.Server) { s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang}) }},
		{name: "garbage", env: (*herdrtest.Server).Env, setup: func(s *herdrtest.Server) { s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage}) }},
		{name: "closes mid-line", env: (*herdrtest.Server).Env, setup: func(s *herdrtest.Server) { s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultCloseMidLine}) }},
	}
	var base echoStats
	for i, m := range modes {
		s := herdrtest.Start(t)
		if m.setup != nil {
			m.setup(s)
		}
		st := measureEcho(t, herdrPi, m.env(s), 2500*time.Millisecond)
		t.Logf("%-24s echo median %-9v p95 %-9v max %-9v (%d keys); child up after %v; exit %v after the child",
			m.name, st.median, st.p95, st.max, st.n, st.ready, st.exit)
		if i == 0 {
			base = st
			continue
		}
		if st.median > base.median+3*time.Millisecond {
			t.Errorf("%s: echo median %v against %v without Herdr", m.name, st.median, base.median)
		}
		if st.max > 250*time.Millisecond {
			t.Errorf("%s: a keystroke took %v to come back", m.name, st.max)
		}
		if st.ready > base.ready+200*time.Millisecond {
			t.Errorf("%s: the child came up after %v, against %v without Herdr", m.name, st.ready, base.ready)
		}
		if st.exit > base.exit+time.Second {
			t.Errorf("%s: wrap exited %v after its child, against %v without Herdr", m.name, st.exit, base.exit)
		}
		if st.code != 0 {
			t.Errorf("%s: exit status %d", m.name, st.code)
		}
	}
}

type echoStats struct {
	n                int
	median, p95, max time.Duration
	ready, exit      time.Duration
	code             int
}

func replaceEnv(env []string, key, val string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		if strings.HasPrefix(kv, key+"=") {
			out[i] = key + "=" + val
		}
	}
	return out
}

func measureEcho(t *testing.T, herdrPi string, herdrEnv []string, dur time.Duration) echoStats {
	t.Helper()
	master, tty, err := openPollablePty()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	if err := setSize(master, 24, 80); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cmd := exec.Command(herdrPi, "wrap", "--", "sh", "-c", "echo ready; exec cat")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + state, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + state, "TERM=xterm",
		// A race-enabled binary sleeps 1 s at exit by default; that is not
		// the wrapper's time.
		"GORACE=atexit_sleep_ms=0"}, herdrEnv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	chunks := make(chan []byte, 4096)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				chunks <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = master.SetReadDeadline(time.Now())
		<-readerDone
	}()

	waitFor := func(want []byte, limit time.Duration) bool {
		var seen []byte
		timer := time.NewTimer(limit)
		defer timer.Stop()
		for {
			select {
			case c, ok := <-chunks:
				if !ok {
					return false
				}
				seen = append(seen, c...)
				if bytes.Contains(seen, want) {
					return true
				}
			case <-timer.C:
				return false
			}
		}
	}
	if !waitFor([]byte("ready"), 10*time.Second) {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("the child never said ready")
	}
	st := echoStats{ready: time.Since(start)}
	var lat []time.Duration
	keys := "abcdefghijklmnopqrstuvwxyz"
	for i := 0; time.Since(start) < st.ready+dur; i++ {
		k := keys[i%len(keys) : i%len(keys)+1]
		t0 := time.Now()
		if _, err := master.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
		if !waitFor([]byte(k), 5*time.Second) {
			t.Fatalf("key %q never came back", k)
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(10 * time.Millisecond)
	}
	// End the line and the input: cat exits, and so must the wrapper.
	master.Write([]byte("\r\x04"))
	childGone := time.Now()
	select {
	case err := <-exited:
		st.exit = time.Since(childGone)
		st.code = exitStatus(err)

	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("wrap did not exit after its child")
	}
	slices.Sort(lat)
	st.n = len(lat)
	st.median, st.p95, st.max = lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)-1]
	return st
}

var _ = fmt.Sprint
