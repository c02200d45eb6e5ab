package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/hostinfo"
)

// BenchmarkDoc measures everything BENCHMARKS.md states and writes the file:
//
//	make bench
//	(HERDR_PI_BENCH_DOC=$PWD/BENCHMARKS.md go test -run '^$' -bench '^BenchmarkDoc$' -benchtime 1x -v -timeout 90m ./e2e/)
//
// Every figure is a ratio against its baseline measured in the same run,
// the variants interleaved (A B A B …, the order rotated every round) so
// that a shared machine's load falls on all of them alike; medians, not
// means. herdr-pi is built without the race detector, as shipped. Without
// HERDR_PI_BENCH_DOC the document is only logged.
//
// Knobs (defaults in brackets): HERDR_PI_BENCH_MIB payload [200],
// HERDR_PI_BENCH_RUNS rounds per throughput case [15], HERDR_PI_BENCH_KEYS
// keystrokes [2000], HERDR_PI_BENCH_PACED keys at a person's pace per
// variant [300, and half as many after long pauses], HERDR_PI_BENCH_STARTS start-ups [60],
// HERDR_PI_BENCH_IDLE idle seconds [60], HERDR_PI_BENCH_CYCLES detection
// cycles [200], HERDR_PI_BENCH_BLOCKED sentinel cycles [100],
// HERDR_PI_BENCH_OPENS opens [100]; HERDR_PI_BENCH_SETTLE seconds to wait
// at most, after the build, for a quiet machine [300]; HERDR_PI_BENCH_ONLY, a comma-separated
// list of sections (throughput, keystrokes, startups, idle, detection,
// blocked, open), runs those alone — for trying a change, not for the
// document, whose other sections then read as not measured.
//
// Nothing here is asserted: on a loaded 2-core machine wall time says
// nothing about behaviour. The bounds are printed next to the figures.
func BenchmarkDoc(b *testing.B) {
	cfg := docConfig{
		mib: envInt("HERDR_PI_BENCH_MIB", 200), runs: envInt("HERDR_PI_BENCH_RUNS", 15),
		keys: envInt("HERDR_PI_BENCH_KEYS", 2000), paced: envInt("HERDR_PI_BENCH_PACED", 300), starts: envInt("HERDR_PI_BENCH_STARTS", 60),
		idle: time.Duration(envInt("HERDR_PI_BENCH_IDLE", 60)) * time.Second, cycles: envInt("HERDR_PI_BENCH_CYCLES", 200),
		blocked: envInt("HERDR_PI_BENCH_BLOCKED", 100), opens: envInt("HERDR_PI_BENCH_OPENS", 100),
		settle: time.Duration(envInt("HERDR_PI_BENCH_SETTLE", 300)) * time.Second,
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Fatal("python3 is needed for the independent reader (apt-get install python3)")
	}
	d := &doc{cfg: cfg, started: time.Now(), loadBefore: uptime()}
	d.bin = buildHerdrPi(b)
	dir := b.TempDir()
	d.payloads = []payload{
		{name: "base64 lines", what: "160-column base64 lines", file: filepath.Join(dir, "lines.txt"), data: base64Lines(cfg.mib << 20)},
		{name: "cut escapes", what: "random bytes with escape sequences cut at random points", file: filepath.Join(dir, "cut.bin"), data: cutEscapes(cfg.mib<<20, 7)},
	}
	for _, p := range d.payloads {
		if err := os.WriteFile(p.file, p.data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	d.payloads[0].data, d.payloads[1].data = nil, nil
	d.py = py
	d.settled = settle(cfg.settle)
	b.Logf("before the first round: %s", d.settled)
	only := strings.Split(os.Getenv("HERDR_PI_BENCH_ONLY"), ",")
	for _, sec := range []struct {
		name string
		run  func(*testing.B)
	}{
		{"throughput", d.throughput}, {"keystrokes", d.keystrokes}, {"startups", d.startups}, {"idle", d.idle},
		{"detection", d.detection}, {"blocked", d.blockedLatency}, {"open", d.open},
	} {
		if only[0] == "" || slices.Contains(only, sec.name) {
			sec.run(b)
		}
	}
	d.loadAfter = uptime()
	d.took = time.Since(d.started)
	text := d.markdown()
	b.Log("\n" + text)
	if out := os.Getenv("HERDR_PI_BENCH_DOC"); out != "" && only[0] != "" {
		b.Logf("HERDR_PI_BENCH_ONLY is set: %s is not written (its other sections would be empty)", out)
	} else if out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

type docConfig struct {
	mib, runs, keys, paced, starts, cycles, blocked, opens int
	idle, settle                                           time.Duration
}

type payload struct {
	name, what, file string
	data             []byte
}

// tcase is one throughput case: a payload read by one reader.
type tcase struct {
	payload, reader string
	wall            map[string][]time.Duration // variant → runs, in round order
	cpu             map[string][]time.Duration // variant → its process tree's CPU per run, in round order
}

type doc struct {
	cfg                   docConfig
	bin, py               string
	payloads              []payload
	started               time.Time
	took                  time.Duration
	loadBefore, loadAfter string
	settled               string // how quiet the machine was when the first round began

	cases       []*tcase
	wrapRSSKiB  int64
	echo        map[string][]time.Duration
	paced       map[string][]time.Duration // keys after 10–50 ms pauses
	pausedLong  map[string][]time.Duration // keys after 100–200 ms pauses
	start       map[string][]time.Duration
	idleCPU     map[string]time.Duration
	idleWall    time.Duration
	detect      []time.Duration
	detectMiss  int
	blocked     []time.Duration
	blockedMiss int
	openLines   []string
}

var variants = []string{"script", "wrap", "bare"}

// argv is the command of a variant: cat FILE under util-linux script,
// herdr-pi wrap, or nothing (one pty hop).
func (d *doc) argv(variant string, cmd ...string) []string {
	switch variant {
	case "script":
		q := make([]string, len(cmd))
		for i, c := range cmd {
			q[i] = strconv.Quote(c)
		}
		return []string{"script", "-q", "-e", "-c", strings.Join(q, " "), "/dev/null"}
	case "wrap":
		return append([]string{d.bin, "wrap", "--"}, cmd...)
	}
	return cmd
}

func benchEnv() []string { return append(os.Environ(), "HERDR_PI_LOG=off") }

// throughput: every round runs every case, and in each case every variant,
// the variants' order rotated from round to round.
func (d *doc) throughput(b *testing.B) {
	for _, p := range d.payloads {
		for _, r := range []string{"go", "python"} {
			d.cases = append(d.cases, &tcase{payload: p.name, reader: r, wall: map[string][]time.Duration{}, cpu: map[string][]time.Duration{}})
		}
	}
	env := benchEnv()
	want := int64(d.cfg.mib << 20)
	for round := 0; round < d.cfg.runs; round++ {
		for ci, c := range d.cases {
			file := d.payloads[ci/2].file
			for j := range variants {
				v := variants[(round+ci+j)%len(variants)]
				argv := d.argv(v, "cat", file)
				var took, cpu time.Duration
				if c.reader == "go" {
					m := timeOuter(b, argv, env, want)
					took, cpu = m.took, m.cpu
					if v == "wrap" {
						d.wrapRSSKiB = max(d.wrapRSSKiB, m.hwmKiB)
					}
				} else {
					took, cpu = d.pyRead(b, argv, want)
				}
				c.wall[v] = append(c.wall[v], took)
				c.cpu[v] = append(c.cpu[v], cpu)
			}
		}
		b.Logf("throughput round %d/%d done", round+1, d.cfg.runs)
	}
}

// pyRead runs argv under the Python reader and returns the time it measured
// and the CPU argv's process tree used.
func (d *doc) pyRead(b *testing.B, argv []string, want int64) (took, cpu time.Duration) {
	cmd := exec.Command(d.py, append([]string{"testdata/bench/ptyread.py"}, argv...)...)
	cmd.Env = benchEnv()
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("python reader %q: %v\n%s", argv, err, out)
	}
	var secs, cpuSecs float64
	var n int64
	var status int
	if _, err := fmt.Sscan(string(out), &secs, &n, &status, &cpuSecs); err != nil || status != 0 || n < want {
		b.Fatalf("python reader %q: %q (want %d bytes, status 0, then the CPU seconds)", argv, out, want)
	}
	return time.Duration(secs * float64(time.Second)), time.Duration(cpuSecs * float64(time.Second))
}

// keystrokes: the keys in four blocks per variant, the variants
// alternating; then keys at a person's pace.
func (d *doc) keystrokes(b *testing.B) {
	d.echo = map[string][]time.Duration{}
	env := benchEnv()
	const blocks = 4
	for blk := 0; blk < blocks; blk++ {
		for j := range variants {
			v := variants[(blk+j)%len(variants)]
			d.echo[v] = append(d.echo[v], echoLatency(b, d.echoArgv(v), env, d.cfg.keys/blocks)...)
		}
	}
	d.pacedKeys(b, env)
}

// echoArgv is a raw-mode cat under a variant.
func (d *doc) echoArgv(v string) []string {
	const echo = "stty raw -echo; echo ready; exec cat"
	switch v {
	case "script":
		return []string{"script", "-q", "-e", "-c", echo, "/dev/null"}
	case "wrap":
		return []string{d.bin, "wrap", "--", "sh", "-c", echo}
	}
	return []string{"sh", "-c", echo}
}

// pacedKeys types keys as a person does, each after a pause: the three
// variants run side by side and take a key each in turn, in a fresh random
// order every round, so that what the machine does at any moment falls on
// all of them alike. Pauses of 10–50 ms put a variant's own keys 30–150 ms
// apart, within the wrapper's raw wait (pane/pty/rawio.go, 250 ms); pauses
// of 100–200 ms put them 300–600 ms apart, past it, so that the key finds
// the wrapper's loop parked (pane/pty/park.go).
func (d *doc) pacedKeys(b *testing.B, env []string) {
	d.paced = map[string][]time.Duration{}
	d.pausedLong = map[string][]time.Duration{}
	es := map[string]*echoer{}
	for _, v := range variants {
		es[v] = startEchoer(b, d.echoArgv(v), env)
		defer es[v].stop()
	}
	time.Sleep(200 * time.Millisecond)
	rng := rand.New(rand.NewPCG(7, 7))
	order := slices.Clone(variants)
	typeKeys := func(into map[string][]time.Duration, n int, lo, hi time.Duration) {
		for i := 0; i < n; i++ {
			rng.Shuffle(len(order), func(a, c int) { order[a], order[c] = order[c], order[a] })
			for _, v := range order {
				time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo))))
				into[v] = append(into[v], es[v].key(b))
			}
		}
	}
	typeKeys(d.paced, d.cfg.paced, 10*time.Millisecond, 50*time.Millisecond)
	typeKeys(d.pausedLong, d.cfg.paced/2, 100*time.Millisecond, 200*time.Millisecond)
}

// startups: `true` under each variant, from the start of the process to its
// exit with its output read, alternating.
func (d *doc) startups(b *testing.B) {
	d.start = map[string][]time.Duration{}
	env := benchEnv()
	for i := 0; i < d.cfg.starts; i++ {
		for j := range variants {
			v := variants[(i+j)%len(variants)]
			took := timeOuter(b, d.argv(v, "true"), env, 0).took
			d.start[v] = append(d.start[v], took)
		}
	}
}

// idle: wrap and script, each around a sleeping child, side by side; the
// CPU each used (with its descendants: wrap's session leader, script's
// shell) from 5 s after the start, so start-up is not counted, for the
// configured time, read from /proc/PID/task/*/sched.
func (d *doc) idle(b *testing.B) {
	d.idleCPU = map[string]time.Duration{}
	secs := fmt.Sprint(int((d.cfg.idle + 10*time.Second).Seconds()))
	env := benchEnv()
	runs := map[string]*outerRun{}
	for _, v := range []string{"wrap", "script"} {
		r, err := startOuter(outerOptions{Argv: d.argv(v, "sleep", secs), Env: env})
		if err != nil {
			b.Fatal(err)
		}
		runs[v] = r
	}
	time.Sleep(5 * time.Second)
	before := map[string]time.Duration{}
	for v, r := range runs {
		before[v] = treeCPU(r.cmd.Process.Pid)
	}
	start := time.Now()
	time.Sleep(d.cfg.idle)
	for v, r := range runs {
		d.idleCPU[v] = treeCPU(r.cmd.Process.Pid) - before[v]
	}
	d.idleWall = time.Since(start)
	for v, r := range runs {
		if status, err := r.wait(time.Minute); err != nil || status != 0 {
			b.Fatalf("idle %s: status %d, %v", v, status, err)
		}
	}
}

// treeCPU is the CPU time a live process and its descendants have used.
func treeCPU(pid int) time.Duration {
	var total time.Duration
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		// sched's se.sum_exec_runtime is the thread's CPU in ms, to the
		// nanosecond (schedstat is empty where schedstats are off).
		if data, err := os.ReadFile(filepath.Join(task, "sched")); err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(l, "se.sum_exec_runtime"); ok {
					if ms, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")), 64); err == nil {
						total += time.Duration(ms * float64(time.Millisecond))
					}
				}
			}
		}
		if data, err := os.ReadFile(filepath.Join(task, "children")); err == nil {
			for _, c := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(c); err == nil {
					total += treeCPU(child)
				}
			}
		}
	}
	return total
}

// idleMark is what the fake agent's idle screen draws (pi-idle 1.6): the
// full-width border; a busy row starts "── ⠋".
var idleMark = []byte("\x1b[2K───")

// detection: the fake agent works (Pi 1.6's spinner) then goes idle, over
// and over, under wrap in a fake Herdr; each latency runs from the idle
// screen reaching the outer terminal to the idle report reaching Herdr.
func (d *doc) detection(b *testing.B) {
	dir := b.TempDir()
	fake := herdrtest.Start(b)
	env := linkCommands(b, dir, fake.Env()...)
	var script strings.Builder
	// One cycle more than measured: the first falls in the state
	// machine's start-up grace.
	for i := 0; i <= d.cfg.cycles; i++ {
		script.WriteString("pi-working 500ms 1.6\npi-idle 1.6\nsleep 500ms\n")
	}
	path := filepath.Join(dir, "agent")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var idleAt []time.Time
	var carry []byte
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", path}, Env: env, Rows: 24, Cols: 80,
		OnBytes: func(p []byte) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			buf := append(carry, p...)
			for i := 0; ; {
				j := bytes.Index(buf[i:], idleMark)
				if j < 0 {
					break
				}
				// One idle frame draws two borders: count it once.
				if len(idleAt) == 0 || now.Sub(idleAt[len(idleAt)-1]) > 100*time.Millisecond {
					idleAt = append(idleAt, now)
				}
				i += j + len(idleMark)
			}
			carry = append(carry[:0], buf[max(0, len(buf)-len(idleMark)+1):]...)
		}})
	if err != nil {
		b.Fatal(err)
	}
	if status, err := r.wait(time.Duration(d.cfg.cycles)*5*time.Second + time.Minute); err != nil || status != 0 {
		b.Fatalf("detection run: status %d, %v", status, err)
	}
	reports := fake.Reports(fake.PaneID())
	mu.Lock()
	defer mu.Unlock()
	for i, at := range idleAt {
		if i == 0 {
			continue
		}
		next := time.Time{}
		if i+1 < len(idleAt) {
			next = idleAt[i+1]
		}
		found := false
		for _, c := range reports {
			if c.State == "idle" && c.At.After(at) && (next.IsZero() || c.At.Before(next)) {
				d.detect = append(d.detect, c.At.Sub(at))
				found = true
				break
			}
		}
		if !found {
			d.detectMiss++
		}
	}
	d.detectMiss += max(0, d.cfg.cycles+1-len(idleAt))
	var states []string
	for _, c := range reports {
		states = append(states, c.State)
	}
	b.Logf("detection: %d idle screens, reports %s", len(idleAt), strings.Join(states, " "))
}

// blockedLatency: a fake Pi sits idle while the benchmark appends to its
// session file an assistant reply ending in the :input_needed: sentinel;
// each latency runs from the append to the blocked report reaching Herdr.
// A user message after it clears the pane for the next cycle.
func (d *doc) blockedLatency(b *testing.B) {
	dir := b.TempDir()
	fake := herdrtest.Start(b)
	env := linkCommands(b, dir, fake.Env()...)
	session := filepath.Join(dir, "session.jsonl")
	appendLine := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(session, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
	}
	appendLine(map[string]any{"type": "session", "version": 3, "id": "01a22799-ba7b-7032-8994-b66058536b75",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "cwd": dir})
	message := func(id, parent, role, text string) map[string]any {
		var pid any
		if parent != "" {
			pid = parent
		}
		m := map[string]any{"role": role, "content": []any{map[string]string{"type": "text", "text": text}}}
		if role == "assistant" {
			m["stopReason"] = "stop"
		}
		return map[string]any{"type": "message", "id": id, "parentId": pid,
			"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "message": m}
	}
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, []byte("pi-idle 1.6\nsleep 1h\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--agent", "pi", "--", "fakeagent", agent, "--session", session},
		Env: env, Rows: 24, Cols: 80})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
		_, _ = r.wait(30 * time.Second)
	}()
	time.Sleep(2 * time.Second) // started, idle reported, the file found
	waitFor := func(seen int, state string, limit time.Duration) (time.Time, int, bool) {
		end := time.Now().Add(limit)
		for time.Now().Before(end) {
			reps := fake.Reports(fake.PaneID())
			for i := seen; i < len(reps); i++ {
				if reps[i].State == state {
					return reps[i].At, i + 1, true
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Time{}, seen, false
	}
	parent := ""
	rng := rand.New(rand.NewPCG(250, 1))
	seen := len(fake.Reports(fake.PaneID()))
	for i := 0; i < d.cfg.blocked; i++ {
		aid, uid := fmt.Sprintf("a%d", i), fmt.Sprintf("u%d", i)
		// A random pause first: a report follows one of the watcher's
		// polls, and appending right after it would measure the longest
		// wait for the next poll every time.
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		t0 := time.Now()
		appendLine(message(aid, parent, "assistant", "Which file should I edit?\n:input_needed:"))
		at, n, ok := waitFor(seen, "blocked", 5*time.Second)
		if !ok {
			d.blockedMiss++
			continue
		}
		seen = n
		d.blocked = append(d.blocked, at.Sub(t0))
		appendLine(message(uid, aid, "user", "main.go"))
		if _, n, ok := waitFor(seen, "idle", 5*time.Second); ok {
			seen = n
		}
		parent = uid
	}
}

// open runs the open benchmark (e2e/open_bench_test.go) and keeps its
// result lines.
func (d *doc) open(b *testing.B) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "BenchmarkOpenToSendInput", "-benchtime", fmt.Sprintf("%dx", d.cfg.opens), ".")
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("open benchmark: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "opens to pane.send_input"); i >= 0 {
			d.openLines = append(d.openLines, strings.TrimSpace(l[strings.Index(l, ": ")+2:]))
		}
	}
}

// base64Lines is n bytes of 160-column base64 lines.
func base64Lines(n int) []byte {
	rng := rand.New(rand.NewPCG(160, 50))
	out := make([]byte, 0, n+161)
	raw := make([]byte, 120)
	line := make([]byte, 160)
	for len(out) < n {
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		base64.StdEncoding.Encode(line, raw)
		out = append(append(out, line...), '\n')
	}
	return out[:n]
}

// cutEscapes is n random bytes, any value, with escape sequences (CSI, OSC,
// DCS, UTF-8) cut at random points among them.
func cutEscapes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0xe5c))
	seqs := []string{"\x1b[38;5;208m", "\x1b[0m", "\x1b[2K", "\x1b[?2026h", "\x1b[?2026l", "\x1b]0;a title\x07",
		"\x1b]8;;https://example.com\x1b\\", "\x1bP+q544e\x1b\\", "\x1b[10;5H", "\x1b[?1049h", "\x1b[?1049l", "状", "😀", "─"}
	out := make([]byte, 0, n+64)
	for len(out) < n {
		switch k := rng.IntN(10); {
		case k < 2:
			s := seqs[rng.IntN(len(seqs))]
			out = append(out, s[:1+rng.IntN(len(s))]...) // whole or cut
		case k < 3:
			out = append(out, '\r', '\n')
		default:
			for range 1 + rng.IntN(24) {
				out = append(out, byte(rng.Uint32()))
			}
		}
	}
	return out[:n]
}

func uptime() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "(uptime failed: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// settle waits, at most limit, for a machine whose CPUs are at least 95 %
// idle over two seconds (building herdr-pi and writing the payloads just
// before, or a test run that has not quite ended, would otherwise fall on
// the first rounds), and says how long it waited and how busy it was last.
func settle(limit time.Duration) string {
	start := time.Now()
	for {
		busy, err := cpuBusy(2 * time.Second)
		if err != nil {
			return "not waited for a quiet machine (" + err.Error() + ")"
		}
		waited := time.Since(start).Round(time.Second)
		if busy <= 0.05 {
			return fmt.Sprintf("waited %v for a quiet machine; its CPUs were %.1f %% busy over the last 2 s", waited, 100*busy)
		}
		if waited >= limit {
			return fmt.Sprintf("**the machine was never quiet**: its CPUs were still %.1f %% busy after %v", 100*busy, waited)
		}
	}
}

// cpuBusy is the share of all CPUs' time not idle (nor waiting for IO)
// over d, from /proc/stat.
func cpuBusy(d time.Duration) (float64, error) {
	read := func() (busy, total uint64, err error) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu" {
			return 0, 0, fmt.Errorf("/proc/stat begins %q", line)
		}
		for i, s := range f[1:min(len(f), 9)] { // guest time is in user time already
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %q: %v", line, err)
			}
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, nil
	}
	b0, t0, err := read()
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	b1, t1, err := read()
	if err != nil || t1 == t0 {
		return 0, err
	}
	return float64(b1-b0) / float64(t1-t0), nil
}

// machine names this machine and the tools measured against.
func machine() string {
	sv, _ := exec.Command("script", "--version").Output()
	pv, _ := exec.Command("python3", "--version").Output()
	return fmt.Sprintf("%s; %s; %s", hostinfo.Machine(), strings.TrimSpace(string(sv)), strings.TrimSpace(string(pv)))
}

// commit names the tree measured; "dirty" when files other than
// BENCHMARKS.md itself differ from the commit.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--", "..", ":!../BENCHMARKS.md").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}

// pairedRatio is the median of the per-round ratios a/b: each round's two
// runs shared the machine's load of that moment.
func pairedRatio(a, b []time.Duration) float64 { return medianOf(roundRatios(a, b)) }

// pairedSummary is a paired ratio and its 95 % interval.
type pairedSummary struct{ median, lo, hi float64 }

func pairedWithInterval(a, b []time.Duration) pairedSummary {
	rs := roundRatios(a, b)
	lo, hi := medianInterval(rs)
	return pairedSummary{median: medianOf(rs), lo: lo, hi: hi}
}

// roundRatios is each round's a/b.
func roundRatios(a, b []time.Duration) []float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, a[i].Seconds()/b[i].Seconds())
	}
	return rs
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianInterval is a 95 % percentile-bootstrap interval for the median of
// rs: the rounds are drawn again with replacement 10,000 times and the
// middle 95 % of the resampled medians kept. It says how far the median
// could move were rounds like these run again: whether a median just under
// 1.00 is a result, or could as well have come out above. The seed is
// fixed, so the same runs give the same interval.
func medianInterval(rs []float64) (lo, hi float64) {
	if len(rs) == 0 {
		return 0, 0
	}
	const resamples = 10000
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, resamples)
	draw := make([]float64, len(rs))
	for i := range meds {
		for j := range draw {
			draw[j] = rs[rng.IntN(len(rs))]
		}
		meds[i] = medianOf(draw)
	}
	slices.Sort(meds)
	return meds[resamples*25/1000], meds[resamples*975/1000-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func us(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func (d *doc) markdown() string {
	var w strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	f("# Benchmarks\n\n")
	f("Generated by `make bench` (`HERDR_PI_BENCH_DOC=$PWD/BENCHMARKS.md go test -run '^$' -bench '^BenchmarkDoc$' -benchtime 1x -v -timeout 90m ./e2e/`,\n")
	f("e2e/benchdoc_test.go); do not edit by hand. Every figure is measured in this one run against its\n")
	f("baseline, the variants interleaved (A B A B …, the order rotated each round), medians throughout.\n\n")
	f("- date: %s (the run took %v)\n", d.started.UTC().Format("2006-01-02 15:04 MST"), d.took.Round(time.Second))
	f("- machine: %s\n", machine())
	f("- tree: %s, herdr-pi built without the race detector\n", commit())
	f("- load (`uptime`) before: `%s`\n- load after: `%s`\n", d.loadBefore, d.loadAfter)
	f("- before the first round: %s\n\n", d.settled)
	f("The machine is shared with other engineers' test runs: absolute times move with their load, the\n")
	f("ratios much less (each round's A and B ran back to back under the same load). Read the ratios.\n\n")

	f("## Throughput\n\n")
	f("%d MiB through `cat FILE` under an outer pty of 200x50: **bare** (no wrapper, one pty hop), **script**\n", d.cfg.mib)
	f("(`script -q -e -c 'cat FILE' /dev/null`, util-linux's wrapper, the same two hops as ours) and **wrap**\n")
	f("(`herdr-pi wrap -- cat FILE`: detection, control socket and notifier on, outside Herdr). Wall time from\n")
	f("start until every byte was read and the process exited, %d rounds. Two readers hold the outer pty: the\n", d.cfg.runs)
	f("Go harness (e2e/outerpty_test.go, 256 KiB reads) and an independent Python reader\n")
	f("(`python3 e2e/testdata/bench/ptyread.py ARGV`: `pty.fork`, 64 KiB `os.read`s). Payloads: %s; %s.\n\n",
		d.payloads[0].what, d.payloads[1].what)
	f("The paired ratio is the median of the rounds' own ratios; beside it, a 95 %% bootstrap interval for\n")
	f("that median (the rounds drawn again with replacement 10,000 times): where it straddles 1.00 the\n")
	f("two wrappers are not told apart by this run.\n\n")
	f("| payload | reader | bare | script | wrap | **wrap/script** (paired) | 95 %% interval | wrap/bare | script/bare | bound |\n")
	f("|---|---|---|---|---|---|---|---|---|---|\n")
	hopOver := 0 // cases where script alone, the second hop, costs more than the wrap/bare bound
	hopLo, hopHi := math.Inf(1), math.Inf(-1)
	for _, c := range d.cases {
		ws, wb := pairedWithInterval(c.wall["wrap"], c.wall["script"]), pairedRatio(c.wall["wrap"], c.wall["bare"])
		sb := pairedRatio(c.wall["script"], c.wall["bare"])
		if sb > 1.25 {
			hopOver++
		}
		hopLo, hopHi = min(hopLo, sb), max(hopHi, sb)
		f("| %s | %s | %s | %s | %s | **%.3f** | %.3f–%.3f | %.3f | %.3f | ≤ 1.00: %s; ≤ 1.25: %s |\n", c.payload, c.reader,
			ms(median(c.wall["bare"])), ms(median(c.wall["script"])), ms(median(c.wall["wrap"])), ws.median,
			ws.lo, ws.hi, wb, sb, verdict(ws.median <= 1.0), verdict(wb <= 1.25))
	}
	f("\nscript/bare is what the second pty hop costs by itself, with util-linux's wrapper doing the copying:\n")
	f("%.3f to %.3f in this run. That cost belongs to the machine more than to any wrapper (each byte\n", hopLo, hopHi)
	f("crosses the tty layer twice, and each crossing may wait for the kernel's flush worker): idle 2-CPU\n")
	f("machines have measured from under 1.1 to about 1.9 here; under load the bare runs slow down as much\n")
	f("as the others and the ratios shrink.\n")
	if hopOver > 0 {
		f("In %d of the %d cases it is over 1.25: no wrapper that copies between two ptys meets the wrap/bare\n", hopOver, len(d.cases))
		f("bound there, so wrap/bare can only be read against script/bare.\n")
	}
	f("\nCPU (user + system) of each variant's process tree in the same runs, from wait4: herdr-pi, its\n")
	f("session leader and cat; script, its shell and cat; cat alone. With both cores busy, CPU one stage\n")
	f("uses is taken from the others.\n\n")
	f("| payload | reader | bare | script | wrap | **wrap/script** (paired) | 95 %% interval | wrap − script (median) |\n")
	f("|---|---|---|---|---|---|---|---|\n")
	for _, c := range d.cases {
		cs := pairedWithInterval(c.cpu["wrap"], c.cpu["script"])
		var diffs []float64 // ms, each round's wrap − script
		for i := range min(len(c.cpu["wrap"]), len(c.cpu["script"])) {
			diffs = append(diffs, float64((c.cpu["wrap"][i]-c.cpu["script"][i]).Microseconds())/1000)
		}
		f("| %s | %s | %s | %s | %s | **%.3f** | %.3f–%.3f | %.1f ms |\n", c.payload, c.reader,
			ms(median(c.cpu["bare"])), ms(median(c.cpu["script"])), ms(median(c.cpu["wrap"])), cs.median, cs.lo, cs.hi, medianOf(diffs))
	}
	f("\nAll runs (ms, round order):\n\n```\n")
	for _, c := range d.cases {
		for _, v := range []string{"bare", "script", "wrap"} {
			var s []string
			for _, x := range c.wall[v] {
				s = append(s, fmt.Sprint(x.Milliseconds()))
			}
			f("%-13s %-6s %-6s %s\n", c.payload, c.reader, v, strings.Join(s, " "))
		}
	}
	f("```\n\n")
	f("Peak resident set of the herdr-pi process while the payloads flowed (VmHWM from /proc, every\n")
	f("20 ms, all Go-reader runs): **%.1f MiB** (bound 25 MiB: %s). The session leader is a separate\n", float64(d.wrapRSSKiB)/1024, verdict(d.wrapRSSKiB <= 25<<10))
	f("process of about 1.5 MiB that sleeps in wait4.\n\n")

	f("## Keystroke echo\n\n")
	f("One key at a time into a raw-mode `cat` that echoes it (`sh -c 'stty raw -echo; exec cat'` under each\n")
	f("variant), round trip from the outer pty back to it, %d keys per variant in 4 alternating blocks.\n\n", len(d.echo["wrap"]))
	f("| variant | p50 | p99 |\n|---|---|---|\n")
	for _, v := range []string{"bare", "script", "wrap"} {
		f("| %s | %s | %s |\n", v, us(p(d.echo[v], 50)), us(p(d.echo[v], 99)))
	}
	add50, add99 := p(d.echo["wrap"], 50)-p(d.echo["script"], 50), p(d.echo["wrap"], 99)-p(d.echo["script"], 99)
	f("\nAdded over script: p50 **%s**, p99 **%s** (bound p99 ≤ 0.5 ms: %s).\n\n", us(add50), us(add99), verdict(add99 <= 500*time.Microsecond))
	f("At a person's pace: the three variants side by side, typed into in turn (in a random order each\n")
	f("round), every key a pause after the one before — 10–50 ms (%d keys each: a variant's own keys\n", len(d.paced["wrap"]))
	f("30–150 ms apart, within the wrapper's first, raw wait of 250 ms), then 100–200 ms (%d keys\n", len(d.pausedLong["wrap"]))
	f("each: 300–600 ms apart, past it, so that the key finds the wrapper's loop parked in the runtime's\n")
	f("poller). Back to back, the keys above never leave the raw wait.\n\n")
	f("| variant | p50, short pauses | p99 | p50, long pauses | p99 |\n|---|---|---|---|---|\n")
	for _, v := range []string{"bare", "script", "wrap"} {
		f("| %s | %s | %s | %s | %s |\n", v, us(p(d.paced[v], 50)), us(p(d.paced[v], 99)), us(p(d.pausedLong[v], 50)), us(p(d.pausedLong[v], 99)))
	}
	for _, c := range []struct {
		name string
		keys map[string][]time.Duration
	}{{"short pauses", d.paced}, {"long pauses", d.pausedLong}} {
		a50, a99 := p(c.keys["wrap"], 50)-p(c.keys["script"], 50), p(c.keys["wrap"], 99)-p(c.keys["script"], 99)
		f("\nAdded over script, %s: p50 **%s**, p99 **%s** (bound p99 ≤ 0.5 ms: %s).\n", c.name, us(a50), us(a99), verdict(a99 <= 500*time.Microsecond))
	}
	f("\n")

	f("## Start-up\n\n")
	f("`true` under each variant (`herdr-pi wrap -- true`, `script -q -e -c true /dev/null`, `true`), from\n")
	f("process start to exit with the output read, %d times each, alternating.\n\n", len(d.start["wrap"]))
	f("| variant | p50 | p99 |\n|---|---|---|\n")
	for _, v := range []string{"bare", "script", "wrap"} {
		f("| %s | %s | %s |\n", v, ms(p(d.start[v], 50)), ms(p(d.start[v], 99)))
	}
	f("\nwrap/script at p50: **%.2f**.\n\n", p(d.start["wrap"], 50).Seconds()/p(d.start["script"], 50).Seconds())
	f("Most of the difference is two starts of a Go program where script has two small C ones: the\n")
	f("wrapper, and the session leader job control needs (this binary run again, pane/pty/leader). On this\n")
	f("machine an empty Go program takes 5 ms of CPU to start and exit and herdr-pi's `--version` 17 ms: the\n")
	f("runtime's set-up grows with the program (type tables; page faults, which a virtual machine makes\n")
	f("slow). What herdr-pi adds is kept small: the leader's init runs before the rest of the program's\n")
	f("(its start ~4 ms shorter), regular expressions compile when first used (~3 ms a process), and the\n")
	f("binary is built without cgo (the dynamic loader added ~10 ms to a wrap).\n\n")

	f("## Idle CPU\n\n")
	f("`herdr-pi wrap -- sleep N` and `script -q -e -c 'sleep N' /dev/null` side by side under outer ptys;\n")
	f("the CPU each used with its descendants (wrap's session leader, script's shell), from 5 s after the\n")
	f("start (start-up not counted) over %v, summed over threads from /proc/PID/task/*/sched:\n\n", d.idleWall.Round(100*time.Millisecond))
	for _, v := range []string{"wrap", "script"} {
		pct := 100 * d.idleCPU[v].Seconds() / d.idleWall.Seconds()
		f("- %s: %s, **%.3f %%** of a core", v, ms(d.idleCPU[v]), pct)
		if v == "wrap" {
			f(" (bound ≤ 0.1 %%: %s)", verdict(pct <= 0.1))
		}
		f("\n")
	}
	f("\n")

	f("## Detection latency\n\n")
	f("The fake agent (e2e/fakeagent_test.go) draws Pi 1.6's working row for 500 ms, then its idle editor,\n")
	f("then waits 500 ms, %d times, under `herdr-pi wrap` (this test binary, no race detector under make\n", d.cfg.cycles)
	f("bench) in the strict fake Herdr (internal/herdrtest).\n")
	f("Latency: from the idle screen reaching the outer terminal to the idle `pane.report_agent` reaching\n")
	f("the fake (its own receive time). The debounce is 300 ms (the default).\n\n")
	dp99 := p(d.detect, 99)
	f("p50 **%s**, p99 **%s**, max %s over %d cycles; %d cycles without an idle report (bound p99 ≤ 350 ms: %s).\n\n",
		ms(p(d.detect, 50)), ms(dp99), ms(p(d.detect, 100)), len(d.detect), d.detectMiss, verdict(len(d.detect) > 0 && dp99 <= 350*time.Millisecond))

	f("## Blocked latency\n\n")
	f("A fake Pi (`herdr-pi wrap --agent pi -- fakeagent … --session FILE`) sits on its idle screen while\n")
	f("the benchmark appends to its session file an assistant reply whose last line is `:input_needed:`,\n")
	f("then a user answer, %d times, each after a random pause of up to 500 ms (appends fall anywhere\n", d.cfg.blocked)
	f("between the session watcher's polls). Latency: from the append to the blocked report at the fake Herdr.\n\n")
	bp99 := p(d.blocked, 99)
	f("p50 **%s**, p99 **%s**, max %s over %d cycles; %d without a blocked report within 5 s (bound p99 ≤ 250 ms: %s).\n\n",
		ms(p(d.blocked, 50)), ms(bp99), ms(p(d.blocked, 100)), len(d.blocked), d.blockedMiss, verdict(len(d.blocked) > 0 && bp99 <= 250*time.Millisecond))

	f("## `herdr-pi open`\n\n")
	f("`go test -run '^$' -bench BenchmarkOpenToSendInput -benchtime %dx ./e2e/` (e2e/open_bench_test.go):\n", d.cfg.opens)
	f("process start to `pane.send_input` at a fresh fake Herdr, a generated store of 1,000 runs (found by\n")
	f("an 8-character prefix in the caller's project or another one) against a store of one run.\n\n```\n")
	for _, l := range d.openLines {
		f("%s\n", l)
	}
	f("```\n\n")
	w.WriteString(copyLoopNotes)
	return w.String()
}

// copyLoopNotes is the prose part of BENCHMARKS.md: how the figures above
// are reached, and what was measured and rejected on the way.
const copyLoopNotes = `## How the copy loop is built (pane/pty, pane/screen)

One goroutine polls the pty master, stdin and an eventfd with ` + "`ppoll`" + `, reads the master until
it would block (bursts of up to 16 reads; the tty layer hands out about 4 KiB a read), reading each
chunk straight into the observers' bounded tap, writes it to the terminal and only then hands it
to the tap; signals and the child's exit arrive through the eventfd.

- The hot reads and writes are raw system calls (pane/pty/rawio.go) on non-blocking descriptors:
  the master, and a private open file description of the caller's terminal (the caller's own stays
  blocking; the shell shares it). Made through ` + "`syscall.Syscall`" + `, a call that blocked a while let
  sysmon hand the loop's P to another thread and then wake every 20 µs: 16,800 wake-ups and 2,400
  futex calls per 200 MiB, each taking a core from the child or the terminal. Raw calls keep the P;
  the reads and writes never block, so a GC never waits on them. A short write means the terminal
  is full: the loop waits at once instead of writing again for an EAGAIN. A bare Go copy loop
  measured 1.17× script before this, the same loop with raw calls 0.96×.
- A read that brings 1 KiB or more but less than the 4 KiB the line discipline holds is topped up
  by up to two more reads before it is written (pane/pty/rawio.go, fillRead): under a flood the
  rest is often still on its way through the pty's flush worker, and each piece written alone was
  one more write to the terminal, each queueing the outer pty's worker. Under random bytes with
  escapes (200 MiB, Python reader) the writes to the terminal fell from 75 k of 2.8 KB on average
  (script: 66 k) to 44 k of 4.8 KB, for 81 k reads of the master instead of 70 k. Against the
  build without it (2026-12-06, quiet machine, interleaved with script): wall 0.945–0.986 of its
  time with the Python reader on cut escapes (four batches of 14–30 rounds, the first three with a
  first form of the change), 0.978 on base64 lines (16), and level with the Go reader (0.992 on
  cut escapes, 1.011 and 0.991 on base64 lines; 14 and 24 rounds). A smaller read (a key's echo,
  a prompt) is written as it came, with no extra read before it.
- A wait starts with up to 250 ms in a raw ` + "`ppoll`" + ` (it keeps the P; 8 ms when GOMAXPROCS is 1), and
  only a longer one goes on, parked in the runtime's network poller: under a flood the loop waits
  often and briefly, and each ordinary wait let sysmon take the P and poll every 20 µs for a
  millisecond or more. sysmon's sleeps per 200 MiB 5,348 → 738, the wrapper tree's CPU 1.111 →
  1.042 of script's and wall 1.133 → 1.025 (10 interleaved rounds on a quiet machine, with a 2 ms
  raw part then). A GC does not wait for a raw ` + "`ppoll`" + `: it is never restarted after a signal, so the
  runtime's preemption signal ends it, and the loop lets the goroutine stop before it waits on.
- The long wait parks (pane/pty/park.go: an epoll instance holding the wait's descriptors, itself
  watched by the runtime's poller), and every call on a key's path is raw, the keyboard read
  through a private non-blocking description of the terminal. An ordinary ` + "`ppoll`" + ` lasting 10 ms had
  sysmon take the loop's P; the next key, getting a P back, woke sysmon, which then polled every
  20 µs for a millisecond, on the other core, while the echo needed it. Typed at a person's pace
  (script, the build before and this one side by side, a key into each in turn after 10–50 ms, 300
  keys each, three runs, 2026-12-06): sysmon's sleeps per key 58 → 3, context switches 141 → 35
  (script's 17), the wrapper's CPU in the 1.5 s after a key 2.0 → 0.85 ms, the echo's lag behind
  script's 58–62 → 9–15 µs at the median and 300–420 → 16–250 µs at p99 (those keys mostly come
  while the loop is still in its raw wait; keys 300–600 ms apart find it parked, and lag script's
  by 56–82 µs at the median against the build before's 95: the poller's wake-up costs ~30 µs more
  than a raw wait's, while a raw wait without end cost 80 ms of CPU per 20 s idle, sysmon once
  awake preempting it every 10 ms). Throughput unchanged
  (0.972 and 0.981 of script against 0.986 and 1.006 for the build before, 10 rounds, Python
  reader): under a flood a wait seldom outlasts its raw part.
- The loop's goroutine is not locked to its thread. The raw calls keep its P, so for the
  scheduler it runs through a whole flood, and sysmon preempts it every 10 ms. Locked, each
  preemption handed the P to another thread and back; unlocked, the same thread picks the loop up
  again from the run queue. On the 2-CPU Xeon (KVM), 200 MiB, Python reader, interleaved rounds
  (2026-12-06): wall 1.102 → 1.038 of script's with cut escapes (16 rounds) and 0.973 → 0.946 with
  base64 lines (12), the tree's CPU 220 and 100 ms less, futex calls 1,027 → 524. On the AMD
  machine before, with the same raw waits, locking had measured the better (context switches
  165,654 → 150,932, tree CPU 1.021–1.055 of script's against 1.054–1.071 unlocked): the choice
  follows the machine CI runs on now.
- The wait for a full terminal (a write that came back short) also watches stdin and the
  eventfd, so keys and signals reach a flooding child while the terminal takes no output:
  one ` + "`ppoll`" + ` of three descriptors instead of one, only when the terminal is full. Against
  the build before it, 0.990 of its wall time (8 interleaved rounds, 100 MiB of base64 lines,
  Python reader, 2026-12-05, the machine loaded by a CI run).
- The master is a raw descriptor the Go runtime never sees. As an ` + "`*os.File`" + ` it was registered
  with the runtime's network poller (edge-triggered), and every burst of the child's output woke an
  idle runtime thread that had nothing to do with it.
- The escape-boundary check for injected bytes (notifications) finds the last ESC of a chunk by
  vector search; a byte-by-byte ` + "`LastIndexByte`" + ` walked every byte of plain text (1.3 % of all CPU).
  Before the last 64 bytes it searches windows growing fourfold towards the front: one window
  for the whole rest cost a search call per ESC when ESCs were dense but none was in the last 64
  bytes (BenchmarkLastESC, random bytes with escapes: 210 → 36 ns a 4 KiB chunk).
- The output is not copied for the observers: the loop reads into the tap's own 64 KiB chunks
  (at least 4 KiB of room a read), the tap hands the screen the very bytes read, and a chunk is
  reused once nothing points into it — no garbage, and the wrapper's user time under the base64
  flood fell by a quarter (copying every chunk into the tap was 6 % of it).
- Pi's status reports are read on the loop itself, as each chunk reaches the tap: a vectorised
  search for their introducer in bytes still in the cache from the read, led by "]7501;": ']' is
  rare in any output (one byte in 250 of Pi's, none in base64), where '7', which led it before, is
  one byte in 64 of base64 (BenchmarkStatusScan: 66 GB/s over base64 lines against 8 GB/s led by
  "7501;", which was 6 % of the wrapper's CPU in the 200 MiB flood; 17 GB/s over dense TUI output
  against 41, for output Pi writes at kilobytes a second); a report found goes to a goroutine that
  wakes for reports only. Before, a goroutine
  drained the tap to read them, up to 100 times a second under a flood, each look a timer and a
  wake-up of another thread (a third of the wrapper's context switches at 500 a second), and a
  flood that overran the tap took the reports in it along.
- The shadow screen (x/vt) never sees every byte of a flood. A flood is bytes dropped by the tap,
  a batch over 16 KiB, or more than 64 KiB within a quarter second in batches of any size; then
  the screen looks at most twice a second, at the newest 16 KiB cut to its last screenful of lines,
  and once more as soon as output pauses for 20 ms, so the screen a flood ends on is drawn at once.
  x/vt scrolls by moving every cell: 16 KiB of 160-column lines cost 39 ms to draw on a 200x50
  screen, and drawing every byte of the base64 payload was 9 % of all CPU. When the newest lines
  are plain text (no escapes, more line feeds than rows, no margins set, no sequence left open)
  the screen is cleared first and the lines fill it from the top instead of scrolling it once
  each: the same text a terminal that drew every byte shows, at 1.0 ms a look instead of 3.7
  (BenchmarkFeedFlood); the screen's share of the wrapper's user time under the base64 flood
  fell from 28 % to 10 %.
- Output that keeps changing the screen without being a flood (fast typing echoed, a stream of
  small writes) is drawn as it arrives and looked at (the screen read as text and classified) at
  most once a frame, 16 ms after the last change; any other output is looked at at once. A look
  renders every cell, and x/vt's own String() took 131 µs and 309 allocations on a 200x50
  screen; the screen renders it in one reused buffer instead (43 µs, 4 allocations, held equal to
  String() by a fuzz target). Before both, the screen looked up to 500 times a second while keys
  were echoed, and that work on the other core was the whole of the keystroke tail: p99 added
  over script 335–720 µs in five keystroke-only runs, 52–72 µs in three after (42–50 µs with
  the screen turned off).
- What the agent printed last (for Pi's resume hint) costs no copy either: the tap keeps the chunk
  it filled before the current one, so the newest 4 KiB are always still there. A second, 4 KiB
  tap fed every chunk was one more copy of every byte, with its bookkeeping (2 % of the wrapper's
  user time). The clock is read per chunk only while the output drains after the child exited.
- The shadow terminal keeps no scrollback; when the child exits the screen is cancelled, not drained.
- Nothing runs while the agent is quiet: the screen goroutine waits on the tap, the state machine
  arms a timer only while a verdict is pending.

What the observers cost under a flood was measured apart from this document's runs, with
test-only builds (Python reader, base64 lines, interleaved with script, 2026-12-03). With the
status reader and the screen never started, wrap/script was 0.975–1.015 in five batches of 10–15
rounds; the build of the time, whose status reader drained the tap on a goroutine of its own,
measured 1.036–1.045 in the same batches. The build that reads the reports on the loop against
that one, later the same day on a quiet machine: wall 0.945 and 0.990, the wrapper tree's CPU
0.951 and 1.001 (two batches of 12 rounds; task-clock and context switches under ` + "`perf stat`" + `
level) — no worse, and the gain is within a batch's noise. So the copy loop by itself is level
with script, not ahead: it makes a third of script's system calls, but both spend their time in
the kernel's tty code. In a profile of a flood, 87 % of the wrapper's samples are in the kernel:
reads of the master that find the line discipline's 4 KiB buffer empty wait for the pty's flush
worker (` + "`__flush_work`" + `), and every write to a pty queues that worker (` + "`queue_work_on`" + `) — in this
virtual machine each of those, with interrupts off, is dear. The same work is script's.

Measured and rejected on this machine:

- gathering a burst of reads into one 64 KiB write to the terminal: 1.18× script (big writes
  serialise the two hops instead of overlapping them);
- non-blocking descriptors with ordinary (scheduler-aware) calls: 1.11× — the descriptors were not
  the cost, the scheduler's bookkeeping around each call was;
- GOMAXPROCS=4, so that a P is always idle and sysmon leaves a waiting one alone: tree CPU 1.079
  of script's against 1.043 (12 rounds) — more threads woke instead;
- marking the tap's segments that may hold a status report as the loop commits them, so that the
  reader scans only those: new/old 0.988 and 1.006 (12 and 20 rounds), no gain;
- reading the master while the terminal is full, to write more at once later: 1.036–1.078 of
  script against 1.065 for the committed code in the same batch;
- 1, 4 or 64 reads a burst instead of 16: 1.115, 1.07 and 1.083 against 1.065–1.08 (these two
  comparisons with cgo builds on both sides).
- reading and writing on two threads (one blocked on the master, one on the terminal, 32 buffers
  of 8 KiB between them), so that a wait on one pty overlaps the other: in a stand-alone copier
  against the same copier on one thread, wall 1.155 and CPU 1.477 (10 interleaved rounds, 100 MiB
  of base64 lines, Python reader, 2026-12-04, the machine loaded by other tests) — every buffer
  handed over woke the other thread.

## Workflow store (handoff/store)

` + "`go test -run '^$' -bench 'FindPick|Runs' -benchtime 500x ./handoff/store/`" + ` times, on a generated
store of 1,000 runs, what ` + "`open`" + ` does in the store for a random run and what ` + "`open --list`" + ` decodes.
Not part of this document's run; see handoff/store/bench_test.go for the figures' meaning.
`
