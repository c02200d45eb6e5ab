package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/hostinfo"
)

// soakSample is one look at the wrapper during the soak.
type soakSample struct {
	At          float64 `json:"at_s"` // since the start
	RSSKiB      int64   `json:"rss_kib"`
	FDs         int     `json:"fds"`
	Goroutines  int     `json:"goroutines"`
	HeapLiveKiB int64   `json:"heap_live_kib,omitempty"`
}

// soakResult is what the soak writes to HERDR_PI_SOAK_OUT (RELIABILITY.md
// is made from it).
type soakResult struct {
	Command  string       `json:"command"`
	Date     string       `json:"date"`
	Machine  string       `json:"machine"`
	Duration float64      `json:"duration_s"`
	Cycles   int          `json:"cycles"`
	Reported int          `json:"reported"` // cycles Herdr saw whole
	Samples  []soakSample `json:"samples"`
	// Flat: every cycle reported, nothing climbed (the test passed).
	Flat bool `json:"flat"`
}

// TestSoak runs a scripted agent under wrap (built without the race
// detector, as users run it) against the fake Herdr for HERDR_PI_SOAK
// (default one minute; `make soak` runs 30), cycling working → blocked →
// answered → idle every few seconds. Every cycle must reach Herdr, and the
// wrapper's resident memory, descriptors and goroutines must stay flat.
func TestSoak(t *testing.T) {
	d := time.Minute
	if v := os.Getenv("HERDR_PI_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("HERDR_PI_SOAK=%q: %v", v, err)
		}
	}
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	// The machine's own account, to tell a failure's story: whether a
	// missing state was never decided, or decided and not reported.
	trace := filepath.Join(e.dir, "trace.jsonl")
	e.env = append(e.env, "HERDR_PI_TRACE="+trace)
	// herdr-pi as users run it; fakeagent stays this test binary.
	link := filepath.Join(e.dir, "bin", "herdr-pi")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(buildHerdrPi(t), link); err != nil {
		t.Fatal(err)
	}

	// The agent cycles until the test leaves a stop file, checked at the
	// start of each cycle: a loaded machine makes cycles longer, not the
	// soak. The script holds more cycles than can run (each takes 3.5 s).
	stop := filepath.Join(e.dir, "stop")
	lines := []string{"print ready\\r\\n"}
	for i := 0; i < int(d/time.Second)+10; i++ {
		lines = append(lines,
			"exit-if "+stop+" 11",
			"print cycle\\r\\n",
			"pi-working 1s",
			fmt.Sprintf("run herdr-pi waiting start --source soak --id c%d", i),
			"sleep 1s",
			fmt.Sprintf("run herdr-pi waiting stop --source soak --id c%d", i),
			"pi-idle",
			"sleep 1500ms")
	}
	lines = append(lines, "exit 12") // ran out of cycles: fails the exit check

	start := time.Now()
	r := e.wrap(lines...)
	pid := r.cmd.Process.Pid
	every := max(2*time.Second, d/180)
	var samples []soakSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.After(d)
sampling:
	for {
		select {
		case err := <-r.exited:
			r.exited <- err
			break sampling
		case <-end:
			if err := os.WriteFile(stop, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		case <-tick.C:
		}
		s := soakSample{At: time.Since(start).Seconds(), RSSKiB: procStatusKiB(pid, "VmRSS:")}
		if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			s.FDs = len(fds)
		}
		if st, ok := tryStatus(e.env); ok {
			s.Goroutines, s.HeapLiveKiB = st.Goroutines, st.HeapLiveKiB
		}
		if s.RSSKiB == 0 || s.FDs == 0 || s.Goroutines == 0 {
			continue // exiting
		}
		samples = append(samples, s)
	}
	r.finish(11, true)
	cycles := bytes.Count(r.bytes(), []byte("cycle\r")) // the pty adds its own \r before \n

	res := soakResult{Command: fmt.Sprintf("HERDR_PI_SOAK=%v go test -count=1 -run '^TestSoak$' ./e2e/", d), Date: start.UTC().Format(time.RFC3339), Machine: hostinfo.Machine(),
		Duration: time.Since(start).Seconds(), Cycles: cycles, Reported: reportedCycles(h.Reports(h.PaneID())), Samples: samples}
	problems := flatness(samples)
	res.Flat = res.Reported == cycles && len(problems) == 0
	if out := os.Getenv("HERDR_PI_SOAK_OUT"); out != "" {
		b, _ := json.MarshalIndent(res, "", " ")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("soak: %d cycles in %.0f s, %d reported; %d samples", res.Cycles, res.Duration, res.Reported, len(samples))
	if res.Reported != cycles {
		t.Errorf("Herdr saw %d whole cycles of %d; around each break, the reports and the machine's events:\n%s",
			res.Reported, cycles, cycleBreaks(h.Reports(h.PaneID()), readTrace(t, trace), start))
	}
	if len(problems) > 0 {
		t.Errorf("not flat: %s\nsamples: %+v", strings.Join(problems, "; "), samples)
	}
}

// reportedCycles counts working → blocked → … → idle runs in the reports.
func reportedCycles(reports []herdrtest.AgentCall) int {
	n, _ := walkCycles(reports)
	return n
}

// walkCycles counts the whole cycles in the reports and gives the index
// of each report that broke one: a blocked with no working before it, an
// idle with no blocked.
func walkCycles(reports []herdrtest.AgentCall) (whole int, breaks []int) {
	// 0 before working, 1 working seen, 2 blocked seen, 3 a blocked came
	// without a working: the cycle is lost, wait for its idle.
	phase := 0
	for i, c := range reports {
		if !c.Accepted {
			continue
		}
		switch {
		case c.State == "working" && phase == 0:
			phase = 1
		case c.State == "blocked" && phase == 1:
			phase = 2
		case c.State == "blocked" && phase == 0:
			breaks, phase = append(breaks, i), 3
		case c.State == "idle" && phase == 2:
			whole, phase = whole+1, 0
		case c.State == "idle":
			if phase == 1 {
				breaks = append(breaks, i)
			}
			phase = 0 // a cycle that skipped a state is not counted
		}
	}
	return whole, breaks
}

// cycleBreaks shows the reports around each place where a cycle broke,
// with their times since the start, so a failed soak says which state
// went missing and when among hours of reports.
func cycleBreaks(reports []herdrtest.AgentCall, events []traceEvent, start time.Time) string {
	var b strings.Builder
	_, breaks := walkCycles(reports)
	for _, i := range breaks {
		at := reports[i].At
		for k := max(i-4, 0); k < min(i+4, len(reports)); k++ {
			o, mark := reports[k], " "
			if k == i {
				mark = ">"
			}
			fmt.Fprintf(&b, "%s %8.3f s  report %-8s accepted=%v %q\n", mark, o.At.Sub(start).Seconds(), o.State, o.Accepted, o.Message)
		}
		for _, e := range events {
			if e.At.After(at.Add(-4*time.Second)) && e.At.Before(at.Add(2*time.Second)) {
				fmt.Fprintf(&b, "  %8.3f s  machine %s %s→%s %s\n", e.At.Sub(start).Seconds(), e.Kind, e.From, e.To, e.Cause)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// A cycle is whole when Herdr saw working, then blocked, then idle; the
// report that shows a cycle lost points at it once.
func TestWalkCycles(t *testing.T) {
	var reports []herdrtest.AgentCall
	for _, st := range strings.Fields("unknown idle working blocked working idle " + // whole
		"blocked working idle " + // no working before the blocked
		"working idle " + // no blocked
		"working blocked blocked working idle") { // whole, relabelled
		reports = append(reports, herdrtest.AgentCall{State: st, Accepted: true})
	}
	reports = append(reports, herdrtest.AgentCall{State: "working"}, herdrtest.AgentCall{State: "blocked", Accepted: true}) // not accepted: lost
	whole, breaks := walkCycles(reports)
	if whole != 2 || !slices.Equal(breaks, []int{6, 10, 17}) {
		t.Fatalf("walkCycles = %d, %v; want 2, [6 10 17]", whole, breaks)
	}
}

// flatness compares the second half of the samples after warm-up (the
// first tenth) with the first half: descriptors and goroutines may not
// climb beyond what a request in flight opens, resident memory not by more
// than a fifth and a MiB, the live Go heap not by more than a fifth and
// half a MiB.
func flatness(samples []soakSample) []string {
	warm := max(len(samples)/10, 1)
	if len(samples)-warm < 4 {
		return []string{fmt.Sprintf("only %d samples", len(samples))}
	}
	rest := samples[warm:]
	a, b := rest[:len(rest)/2], rest[len(rest)/2:]
	var problems []string
	pick := func(ss []soakSample, f func(soakSample) int64) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, f(s))
		}
		slices.Sort(out)
		return out
	}
	fds := func(s soakSample) int64 { return int64(s.FDs) }
	gs := func(s soakSample) int64 { return int64(s.Goroutines) }
	rss := func(s soakSample) int64 { return s.RSSKiB }
	const inFlight = 4 // a Herdr call, a `waiting`, our status: each a socket and a goroutine or two
	if x, y := slices.Max(pick(a, fds)), slices.Max(pick(b, fds)); y > x+inFlight {
		problems = append(problems, fmt.Sprintf("descriptors rose from at most %d to %d", x, y))
	}
	if x, y := slices.Max(pick(a, gs)), slices.Max(pick(b, gs)); y > x+inFlight {
		problems = append(problems, fmt.Sprintf("goroutines rose from at most %d to %d", x, y))
	}
	ra, rb := pick(a, rss), pick(b, rss)
	if x, y := ra[len(ra)/2], rb[len(rb)/2]; y > x+x/5+1024 {
		problems = append(problems, fmt.Sprintf("median RSS rose from %d KiB to %d KiB", x, y))
	}
	// The live heap is what a leak grows: resident memory can rise to the
	// heap's peak and stay there while nothing leaks.
	heap := func(s soakSample) int64 { return s.HeapLiveKiB }
	ha, hb := pick(a, heap), pick(b, heap)
	if x, y := ha[len(ha)/2], hb[len(hb)/2]; y > x+x/5+512 {
		problems = append(problems, fmt.Sprintf("median live heap rose from %d KiB to %d KiB", x, y))
	}
	return problems
}

// procStatusKiB reads one "Key: N kB" line of /proc/PID/status.
func procStatusKiB(pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			var kib int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kib)
			return kib
		}
	}
	return 0
}

// The verdict: flat samples pass; descriptors, goroutines, resident memory
// or the live heap climbing past their allowance each fail it.
func TestSoakFlatness(t *testing.T) {
	flat := func() []soakSample {
		var ss []soakSample
		for i := range 40 {
			ss = append(ss, soakSample{At: float64(i), RSSKiB: 20 << 10, FDs: 17, Goroutines: 10, HeapLiveKiB: 3 << 10})
		}
		return ss
	}
	if p := flatness(flat()); len(p) != 0 {
		t.Fatalf("flat samples judged not flat: %q", p)
	}
	for what, grow := range map[string]func(*soakSample, int){
		"descriptors": func(s *soakSample, i int) { s.FDs += i },
		"goroutines":  func(s *soakSample, i int) { s.Goroutines += i },
		"RSS":         func(s *soakSample, i int) { s.RSSKiB += int64(i) << 9 },
		"live heap":   func(s *soakSample, i int) { s.HeapLiveKiB += int64(i) << 7 },
	} {
		ss := flat()
		for i := range ss {
			grow(&ss[i], i)
		}
		if p := flatness(ss); len(p) != 1 || !strings.Contains(p[0], what) {
			t.Errorf("%s growing: %q", what, p)
		}
	}
}
