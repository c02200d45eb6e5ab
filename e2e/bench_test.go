package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Helpers of the benchmarks (benchdoc_test.go writes BENCHMARKS.md with
// them): build the shipped binary, time a command under an outer pty, type
// keys into it.

func buildHerdrPi(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herdr-pi")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/herdr-pi")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// outerTiming is what timeOuter measured of one run.
type outerTiming struct {
	took   time.Duration // wall time until every byte was read and the process exited
	hwmKiB int64         // the process's peak resident set
	cpu    time.Duration // user and system time of the process and every descendant it waited for
}

// timeOuter runs argv under an outer pty and returns the wall time until all
// of want bytes were read and the process exited, the process's peak
// resident set in KiB and the CPU its tree used. The peak is sampled from
// /proc (VmHWM): wait4's ru_maxrss would include the pages the forked
// harness had before exec. The CPU is wait4's: the process's own and that
// of the children it reaped (a wrapper's leader and the command under it).
func timeOuter(t testing.TB, argv, env []string, want int64) outerTiming {
	t.Helper()
	start := time.Now()
	r, err := startOuter(outerOptions{Argv: argv, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	hwm := make(chan int64, 1)
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, vmHWM(r.cmd.Process.Pid))
			select {
			case <-stop:
				hwm <- peak
				return
			case <-tick.C:
			}
		}
	}()
	status, err := r.wait(5 * time.Minute)
	d := time.Since(start)
	close(stop)
	peak := <-hwm
	if err != nil || status != 0 {
		t.Fatalf("%q: status %d, %v", argv, status, err)
	}
	if got := r.count(); got < want {
		t.Fatalf("%q delivered %d bytes, want at least %d", argv, got, want)
	}
	st := r.cmd.ProcessState
	return outerTiming{took: d, hwmKiB: peak, cpu: st.UserTime() + st.SystemTime()}
}

// vmHWM reads a live process's peak resident set in KiB (0 once it is gone).
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kib)
			return kib
		}
	}
	return 0
}

// echoLatency types n keys, one at a time, into a raw-mode cat and measures
// each round trip from the outer pty back to the outer pty.
func echoLatency(t testing.TB, argv, env []string, n int) []time.Duration {
	t.Helper()
	e := startEchoer(t, argv, env)
	defer e.stop()
	time.Sleep(50 * time.Millisecond)
	rtts := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		rtts = append(rtts, e.key(t))
	}
	return rtts
}

// echoer is argv (a raw-mode cat that prints "ready" first) on an outer
// pty, typed into one key at a time.
type echoer struct {
	r      *outerRun
	argv   []string
	echoed chan struct{}
	keys   int
}

func startEchoer(t testing.TB, argv, env []string) *echoer {
	t.Helper()
	var mu sync.Mutex
	var seen strings.Builder
	e := &echoer{argv: argv, echoed: make(chan struct{}, 1<<16)}
	ready := make(chan struct{})
	var readyOnce sync.Once
	r, err := startOuter(outerOptions{Argv: argv, Env: env, OnBytes: func(p []byte) {
		mu.Lock()
		seen.Write(p)
		hasReady := strings.Contains(seen.String(), "ready")
		mu.Unlock()
		if hasReady {
			readyOnce.Do(func() { close(ready) })
		}
		for _, b := range p {
			if b == 'k' {
				e.echoed <- struct{}{}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%q never became ready", argv)
	}
	return e
}

// key types one key and returns how long its echo took to come back.
func (e *echoer) key(t testing.TB) time.Duration {
	t.Helper()
	t0 := time.Now()
	if _, err := e.r.master.Write([]byte{'k'}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.echoed:
	case <-time.After(10 * time.Second):
		t.Fatalf("%q: key %d not echoed", e.argv, e.keys)
	}
	e.keys++
	return time.Since(t0)
}

// stop ends the cat. Ctrl-D would not (raw mode passes it through): a
// signal to its session does.
func (e *echoer) stop() {
	_ = syscall.Kill(-e.r.cmd.Process.Pid, syscall.SIGTERM)
	_, _ = e.r.wait(30 * time.Second)
}

func median(ds []time.Duration) time.Duration { return p(ds, 50) }

func p(ds []time.Duration, pct int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*pct + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func envInt(key string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(key), &n); err == nil && n > 0 {
		return n
	}
	return def
}
