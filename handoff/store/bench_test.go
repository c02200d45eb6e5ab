package store

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
)

// benchStore generates the 1,000-run store of the benchmarks: 10 projects,
// 4 runs per owner session, 3 agents per run (every third retried), the
// caller in the first project.
func benchStore(b *testing.B) (*Store, *storetest.Generated) {
	b.Helper()
	g, err := storetest.Generate(b.TempDir(), storetest.Synthetic{Runs: 1000, Projects: 10, RunsPerSession: 4, AgentsPerRun: 3, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return New(g.Home, g.Cwd), g
}

// reportPercentiles adds p50 and p99 of the per-operation times.
func reportPercentiles(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	at := func(q float64) float64 { return float64(times[int(q*float64(len(times)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkFindPick is what `herdr-pi open <run> <attempt>` does in the
// store for a random run of 1,000: find it (by full id, or by the 8-char
// prefix lists show, which reads every session's runs directory), decode
// its state.json, pick the attempt, check its transcript, cwd and lease.
func BenchmarkFindPick(b *testing.B) {
	s, g := benchStore(b)
	for _, mode := range []struct {
		name string
		ref  func(id string) string
	}{
		{"id", func(id string) string { return id }},
		{"prefix", func(id string) string { return id[:8] }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				id := g.IDs[rng.IntN(len(g.IDs))]
				start := time.Now()
				a, err := s.Find(mode.ref(id), "tests#1")
				if err == nil {
					_, err = a.SessionFile()
				}
				if err == nil {
					_, err = a.Cwd()
				}
				if err == nil {
					_, _, err = a.Live()
				}
				times = append(times, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportPercentiles(b, times)
		})
	}
}

// BenchmarkRuns lists a 1,000-run store (`herdr-pi open --list`): every
// state.json decoded, sorted most recent first.
func BenchmarkRuns(b *testing.B) {
	s, _ := benchStore(b)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		runs, _, err := s.Runs()
		times = append(times, time.Since(start))
		if err != nil || len(runs) != 1000 {
			b.Fatalf("%d runs, %v", len(runs), err)
		}
	}
	b.StopTimer()
	reportPercentiles(b, times)
}
