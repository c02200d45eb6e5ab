// Command reliability runs every fault test RELIABILITY.md lists (cases.go)
// and the soak, and writes RELIABILITY.md from what they did, with the
// machine, the date and the command behind every figure. `make
// reliability` runs it from the module root; `make faults` runs the fault
// tests alone.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "RELIABILITY.md", "where to write the report (- for stdout)")
	soak := flag.Duration("soak", 30*time.Minute, "how long the soak runs (0: no soak)")
	soakResult := flag.String("soak-result", "", "use this earlier soak result (HERDR_PI_SOAK_OUT) instead of running one")
	flag.Parse()

	results, runs, ok := runFaultTests()
	var sk *soakReport
	switch {
	case *soakResult != "":
		r, err := readSoak(*soakResult)
		if err != nil {
			fail(err)
		}
		sk = r
	case *soak > 0:
		r, err := runSoak(*soak)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reliability: soak:", err)
			ok = false
		}
		sk = r
	}
	doc := render(results, runs, sk, *soakResult != "")
	if *out == "-" {
		fmt.Print(doc)
	} else if err := os.WriteFile(*out, []byte(doc), 0o644); err != nil {
		fail(err)
	} else {
		fmt.Fprintln(os.Stderr, "reliability: wrote", *out)
	}
	if !ok || sk != nil && !sk.Flat {
		fmt.Fprintln(os.Stderr, "reliability: not every guarantee held; see the report")
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "reliability:", err)
	os.Exit(2)
}

// result is what go test said about one test.
type result struct {
	Action  string // pass, fail, skip; "" when it never ran
	Elapsed float64
}

// testRun is one go test invocation behind the table.
type testRun struct {
	Command  string
	Date     time.Time
	Duration time.Duration
}

// runFaultTests runs the listed tests, one go test per package (and per
// test whose subtests are picked), and collects each one's verdict.
func runFaultTests() (map[testRef]result, []testRun, bool) {
	type group struct {
		pkg, top string
		subs     []string
	}
	var order []string
	groups := map[string]*group{}
	for _, c := range cases {
		for _, t := range c.Tests {
			top, sub, _ := strings.Cut(t.Name, "/")
			key := t.Pkg
			if sub != "" {
				key += " " + top
			}
			g := groups[key]
			if g == nil {
				g = &group{pkg: t.Pkg}
				if sub != "" {
					g.top = top
				}
				groups[key] = g
				order = append(order, key)
			}
			if sub != "" {
				if !slices.Contains(g.subs, sub) {
					g.subs = append(g.subs, sub)
				}
			} else if !slices.Contains(g.subs, top) {
				g.subs = append(g.subs, top)
			}
		}
	}
	results := map[testRef]result{}
	var runs []testRun
	ok := true
	for _, key := range order {
		g := groups[key]
		pattern := "^(" + strings.Join(g.subs, "|") + ")$"
		if g.top != "" {
			pattern = "^" + g.top + "$/" + pattern
		}
		// e2e's group holds two dozen workflow tests, each with real Pis
		// under the race detector: the timeout e2e is given in CI.
		args := []string{"test", "-race", "-count=1", "-json", "-timeout", "45m", "-run", pattern, "./" + g.pkg}
		start := time.Now()
		fmt.Fprintf(os.Stderr, "reliability: go %s\n", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			fail(err)
		}
		if err := cmd.Start(); err != nil {
			fail(err)
		}
		for name, r := range readEvents(stdout) {
			results[testRef{g.pkg, name}] = r
		}
		if err := cmd.Wait(); err != nil {
			ok = false
		}
		runs = append(runs, testRun{Command: "go " + quoteArgs(args), Date: start, Duration: time.Since(start)})
	}
	for _, c := range cases {
		for _, t := range c.Tests {
			if results[t].Action != "pass" {
				ok = false
			}
		}
	}
	return results, runs, ok
}

// readEvents reads go test -json and keeps each test's last verdict; a
// failing test's output goes to stderr.
func readEvents(r io.Reader) map[string]result {
	out := map[string]result{}
	logs := map[string]*bytes.Buffer{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
			Elapsed              float64
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "output":
			if logs[ev.Test] == nil {
				logs[ev.Test] = &bytes.Buffer{}
			}
			logs[ev.Test].WriteString(ev.Output)
		case "pass", "fail", "skip":
			out[ev.Test] = result{Action: ev.Action, Elapsed: ev.Elapsed}
			if ev.Action != "pass" && logs[ev.Test] != nil {
				os.Stderr.Write(logs[ev.Test].Bytes())
			}
			delete(logs, ev.Test)
		}
	}
	return out
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()* ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// soakSample and soakReport mirror what e2e's TestSoak writes.
type soakSample struct {
	At          float64 `json:"at_s"`
	RSSKiB      int64   `json:"rss_kib"`
	FDs         int     `json:"fds"`
	Goroutines  int     `json:"goroutines"`
	HeapLiveKiB int64   `json:"heap_live_kib,omitempty"`
}

type soakReport struct {
	Command  string       `json:"command"`
	Date     string       `json:"date"`
	Machine  string       `json:"machine"`
	Duration float64      `json:"duration_s"`
	Cycles   int          `json:"cycles"`
	Reported int          `json:"reported"`
	Samples  []soakSample `json:"samples"`
	// Flat is true when TestSoak passed (every cycle reported, nothing
	// climbed).
	Flat bool `json:"flat"`
}

func runSoak(d time.Duration) (*soakReport, error) {
	f, err := os.CreateTemp("", "soak-*.json")
	if err != nil {
		return nil, err
	}
	f.Close()
	defer os.Remove(f.Name())
	timeout := d*2 + 10*time.Minute
	args := []string{"test", "-count=1", "-timeout", timeout.String(), "-run", "^TestSoak$", "-v", "./e2e/"}
	fmt.Fprintf(os.Stderr, "reliability: HERDR_PI_SOAK=%v go %s\n", d, strings.Join(args, " "))
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "HERDR_PI_SOAK="+d.String(), "HERDR_PI_SOAK_OUT="+f.Name())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	r, err := readSoak(f.Name())
	if err != nil {
		return nil, fmt.Errorf("%v (go test: %v)", err, runErr)
	}
	return r, runErr
}

func readSoak(path string) (*soakReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r soakReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(r.Samples) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return &r, nil
}
