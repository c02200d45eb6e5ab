package e2e

import (
	"bytes"
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

// echoModes are the ways Herdr can be, from healthy to broken.
type echoMode struct {
	name  string
	env   func(s *herdrtest.Server) []string
	setup func(s *herdrtest.Server)
}

var echoModes = []echoMode{
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

// TestKeystrokeEchoWithBrokenHerdr types through real ptys into
// `herdr-pi wrap` (our terminal → the wrapper → the child's pty, echoed by
// its line discipline, and back) while Herdr is healthy, absent, dead, hung,
// or answering garbage. The keystrokes start right after the child is up, so
// they overlap wrap's first report and its retries. Every key comes back and
// wrap exits 0 after its child in every mode; how fast is
// BenchmarkKeystrokeEchoWithBrokenHerdr's to say.
func TestKeystrokeEchoWithBrokenHerdr(t *testing.T) {
	herdrPi := herdrPiOnPath(t)
	for _, m := range echoModes {
		s := herdrtest.Start(t)
		if m.setup != nil {
			m.setup(s)
		}
		st := measureEcho(t, herdrPi, m.env(s), 30)
		t.Logf("%-24s echo median %-9v p95 %-9v max %-9v (%d keys)", m.name, st.median, st.p95, st.max, st.n)
		if st.code != 0 {
			t.Errorf("%s: exit status %d", m.name, st.code)
		}
	}
}

// BenchmarkKeystrokeEchoWithBrokenHerdr reports the echo latency per mode
// and what each adds over no Herdr at all. A wrapper whose copy loop waited
// for Herdr would add 500 ms and more.
func BenchmarkKeystrokeEchoWithBrokenHerdr(b *testing.B) {
	herdrPi := herdrPiOnPath(b)
	var base echoStats
	for i, m := range echoModes {
		s := herdrtest.Start(b)
		if m.setup != nil {
			m.setup(s)
		}
		st := measureEcho(b, herdrPi, m.env(s), 250)
		if i == 0 {
			base = st
		}
		b.Logf("%-24s echo median %-9v p95 %-9v max %-9v (%d keys); +%v median over no Herdr; child up after %v; exit %v after the child",
			m.name, st.median, st.p95, st.max, st.n, st.median-base.median, st.ready, st.exit)
	}
}

func herdrPiOnPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("herdr-pi")
	if err != nil {
		t.Fatalf("herdr-pi is not on PATH (testscript.Main puts it there): %v", err)
	}
	return p
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

// measureEcho types keys one at a time, each after the previous came back.
func measureEcho(t testing.TB, herdrPi string, herdrEnv []string, keys int) echoStats {
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
		"XDG_RUNTIME_DIR=" + privateRuntime(t),
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
	const alphabet = "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i < keys; i++ {
		k := alphabet[i%len(alphabet) : i%len(alphabet)+1]
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
