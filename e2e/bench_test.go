package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The overhead benchmark pushes the same bytes and keystrokes through
// herdr-pi wrap, through util-linux script (the same two pty hops) and
// through no wrapper at all (one hop, the physical limit), all driven from an
// outer pty in one run, and reports ratios. It builds herdr-pi without the
// race detector: the numbers are about the product, not the test binary.
//
//	make bench   (go test -run '^$' -bench '^BenchmarkOverhead$' -benchtime 1x -v ./e2e/)
//
// HERDR_PI_BENCH_MIB sets the payload (default 200), HERDR_PI_BENCH_RUNS the
// runs per variant (default 5), HERDR_PI_BENCH_KEYS the keystrokes (2000).

type benchConfig struct {
	mib, runs, keys int
	idle            time.Duration
}

type benchReport struct {
	cfg                       benchConfig
	wall                      map[string][]time.Duration // variant → runs
	latency                   map[string][]time.Duration // variant → round trips
	wrapMaxRSSKiB             int64
	idleCPU                   time.Duration
	idleWall                  time.Duration
	throughputRatio, bareRate float64
}

// BenchmarkOverhead measures once, whatever b.N (run it with -benchtime 1x,
// as make bench does): a run moves hundreds of MiB through each variant.
// Its bounds are reported, not asserted by any test: on a loaded 2-core
// machine wall time says nothing about behaviour.
func BenchmarkOverhead(b *testing.B) {
	cfg := benchConfig{mib: envInt("HERDR_PI_BENCH_MIB", 200), runs: envInt("HERDR_PI_BENCH_RUNS", 5),
		keys: envInt("HERDR_PI_BENCH_KEYS", 2000), idle: 10 * time.Second}
	rep := runBench(b, cfg)
	b.Log("\n" + rep.markdown())
	if out := os.Getenv("HERDR_PI_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(rep.markdown()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rep.ratio("wrap", "script"), "wrap/script")
	b.ReportMetric(float64(p(rep.latency["wrap"], 99)-p(rep.latency["script"], 99))/1e3, "echo-p99-added-µs")
	if r := rep.ratio("wrap", "script"); r > 1.05 {
		b.Errorf("throughput: wrap/script = %.3f, want ≤ 1.05", r)
	}
	if added := p(rep.latency["wrap"], 99) - p(rep.latency["script"], 99); added > time.Millisecond {
		b.Errorf("keystroke echo p99 adds %v over script, want ≤ 1ms", added)
	}
}

func runBench(t testing.TB, cfg benchConfig) *benchReport {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("util-linux script is needed for the baseline (apt-get install bsdutils)")
	}
	bin := buildHerdrPi(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(file, randomTerminalBytes(cfg.mib<<20, 7), 0o600); err != nil {
		t.Fatal(err)
	}
	variants := map[string][]string{
		"bare":   {"cat", file},
		"script": {"script", "-q", "-e", "-c", "cat " + file, "/dev/null"},
		"wrap":   {bin, "wrap", "--", "cat", file},
	}
	order := []string{"script", "wrap", "bare"}
	rep := &benchReport{cfg: cfg, wall: map[string][]time.Duration{}, latency: map[string][]time.Duration{}}
	env := append(os.Environ(), "HERDR_PI_LOG=off")
	for i := 0; i < cfg.runs; i++ {
		// Rotate the order so no variant always runs on a warm or cold cache.
		for j := range order {
			name := order[(i+j)%len(order)]
			d, hwm := timeOuter(t, variants[name], env, int64(cfg.mib<<20))
			rep.wall[name] = append(rep.wall[name], d)
			if name == "wrap" {
				rep.wrapMaxRSSKiB = max(rep.wrapMaxRSSKiB, hwm)
			}
		}
	}
	rep.throughputRatio = rep.ratio("wrap", "script")
	rep.bareRate = float64(cfg.mib) / median(rep.wall["bare"]).Seconds()

	echo := []string{"sh", "-c", "stty raw -echo; echo ready; exec cat"}
	for _, name := range []string{"script", "wrap", "bare"} {
		var argv []string
		switch name {
		case "bare":
			argv = echo
		case "script":
			argv = []string{"script", "-q", "-e", "-c", "stty raw -echo; echo ready; exec cat", "/dev/null"}
		case "wrap":
			argv = append([]string{bin, "wrap", "--"}, echo...)
		}
		rep.latency[name] = echoLatency(t, argv, env, cfg.keys)
	}

	if cfg.idle > 0 {
		start := time.Now()
		r, err := startOuter(outerOptions{Argv: []string{bin, "wrap", "--", "sleep", fmt.Sprint(cfg.idle.Seconds())}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.wait(cfg.idle + 30*time.Second); err != nil {
			t.Fatal(err)
		}
		rep.idleWall = time.Since(start)
		if ru, ok := r.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// CPU of herdr-pi plus the sleeping child it reaped.
			rep.idleCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return rep
}

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

// timeOuter runs argv under an outer pty and returns the wall time until all
// of want bytes were read and the process exited, and the process's peak
// resident set in KiB. The peak is sampled from /proc (VmHWM): wait4's
// ru_maxrss would include the pages the forked harness had before exec.
func timeOuter(t testing.TB, argv, env []string, want int64) (time.Duration, int64) {
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
	return d, peak
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
	var mu sync.Mutex
	var seen strings.Builder
	echoed := make(chan struct{}, 1<<16)
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
				echoed <- struct{}{}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%q never became ready", argv)
	}
	time.Sleep(50 * time.Millisecond)
	rtts := make([]time.Duration, 0, n)
	key := []byte{'k'}
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := r.master.Write(key); err != nil {
			t.Fatal(err)
		}
		select {
		case <-echoed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: key %d not echoed", argv, i)
		}
		rtts = append(rtts, time.Since(t0))
	}
	// Ctrl-D twice ends cat in raw mode? No: raw mode passes it through, so
	// end the child with a signal to its session.
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	_, _ = r.wait(30 * time.Second)
	return rtts
}

func (r *benchReport) ratio(a, b string) float64 {
	return median(r.wall[a]).Seconds() / median(r.wall[b]).Seconds()
}

func (r *benchReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. Payload %d MiB of random text and escape sequences, %d runs per variant, %d keystrokes.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), r.cfg.mib, r.cfg.runs, r.cfg.keys)
	b.WriteString("| variant | throughput, median wall | MB/s | vs script | vs bare | echo p50 | echo p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, name := range []string{"bare", "script", "wrap"} {
		m := median(r.wall[name])
		fmt.Fprintf(&b, "| %s | %v | %.0f | %.3f | %.3f | %v | %v |\n", name, m.Round(time.Millisecond),
			float64(r.cfg.mib)*1.048576/m.Seconds(), r.ratio(name, "script"), r.ratio(name, "bare"),
			p(r.latency[name], 50).Round(time.Microsecond), p(r.latency[name], 99).Round(time.Microsecond))
	}
	fmt.Fprintf(&b, "\nwrap/script throughput ratio %.3f; keystroke echo added over script: p50 %v, p99 %v.\n",
		r.throughputRatio, (p(r.latency["wrap"], 50) - p(r.latency["script"], 50)).Round(time.Microsecond),
		(p(r.latency["wrap"], 99) - p(r.latency["script"], 99)).Round(time.Microsecond))
	fmt.Fprintf(&b, "herdr-pi max RSS while the payload flowed: %.1f MiB.\n", float64(r.wrapMaxRSSKiB)/1024)
	if r.idleWall > 0 {
		fmt.Fprintf(&b, "herdr-pi CPU while its child slept %v: %v (user+system, child included).\n",
			(r.idleWall).Round(100*time.Millisecond), r.idleCPU.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "All runs (ms): ")
	for _, name := range []string{"bare", "script", "wrap"} {
		ms := make([]string, 0, len(r.wall[name]))
		for _, d := range r.wall[name] {
			ms = append(ms, fmt.Sprint(d.Milliseconds()))
		}
		fmt.Fprintf(&b, "%s [%s] ", name, strings.Join(ms, " "))
	}
	b.WriteString("\n")
	return b.String()
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
