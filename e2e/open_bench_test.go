package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// BenchmarkOpenToSendInput measures `herdr-pi open <run-prefix> <agent>` on
// a generated store of 1,000 runs in 5 projects (issue 11: ≤ 150 ms): from
// just before the process is started to the moment the fake Herdr receives
// pane.send_input — the pane has its command, everything after is the
// pane's. herdr-pi is built without the race detector, as shipped. The
// fake's panes are data only, so nothing runs the command file and open is
// stopped once the input arrived. Each iteration gets a fresh fake Herdr
// (not timed). The run is found by an 8-character prefix, in the caller's
// project or, the slower path, in another one; a store of one run is the
// baseline.
//
//	go test -run '^$' -bench BenchmarkOpenToSendInput -benchtime 200x ./e2e/
func BenchmarkOpenToSendInput(b *testing.B) {
	hp := buildHerdrPi(b)
	home, small := b.TempDir(), b.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 1000, Projects: 5, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	one, err := storetest.Generate(small, storetest.Synthetic{Runs: 1, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	runtime, err := os.MkdirTemp("", "hpb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(runtime) })
	cfg := filepath.Join(runtime, "config.toml")
	if err := os.WriteFile(cfg, []byte("[open]\npi = \"/bin/true\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	files := filepath.Join(runtime, fmt.Sprintf("herdr-pi-%d", os.Getuid()), "open")
	// Run i of the generator lives in project i%5; the first project is
	// the caller's. Both are completed runs with an agent "api".
	// The store of one run is the baseline: what starting herdr-pi and
	// talking to Herdr cost without a store to search.
	for _, c := range []struct {
		name      string
		home, cwd string
		run       string
	}{{"1 run", small, one.Cwd, one.IDs[0]}, {"own project", home, g.Cwd, g.IDs[700]}, {"other project", home, g.Cwd, g.IDs[351]}} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				b.StopTimer()
				s := herdrtest.Start(b)
				cmd := exec.Command(hp, "open", c.run[:8], "api")
				cmd.Dir = c.cwd
				cmd.Env = append([]string{"HOME=" + c.home, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + runtime,
					"XDG_STATE_HOME=" + runtime, "HERDR_PI_CONFIG=" + cfg, "HERDR_PI_LOG=off"}, s.Env()...)
				b.StartTimer()
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				var at time.Time
				for at.IsZero() {
					select {
					case err := <-done:
						b.Fatalf("open ended before pane.send_input: %v; calls %q", err, s.Methods())
					case <-time.After(time.Millisecond):
					}
					for _, q := range s.Requests() {
						if q.Method == "pane.send_input" {
							at = q.At
						}
					}
				}
				b.StopTimer()
				took = append(took, at.Sub(start))
				cmd.Process.Kill()
				<-done
				s.Close()
				// open was stopped before the pane could take its command file.
				left, _ := os.ReadDir(files)
				for _, e := range left {
					os.Remove(filepath.Join(files, e.Name()))
				}
				b.StartTimer()
			}
			slices.Sort(took)
			pct := func(p int) time.Duration { return took[(len(took)-1)*p/100] }
			b.ReportMetric(float64(pct(50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
			b.Logf("%s: %d opens to pane.send_input: p50 %v p99 %v max %v min %v", c.name, len(took),
				pct(50).Round(100*time.Microsecond), pct(99).Round(100*time.Microsecond),
				took[len(took)-1].Round(100*time.Microsecond), took[0].Round(100*time.Microsecond))
		})
	}
}
