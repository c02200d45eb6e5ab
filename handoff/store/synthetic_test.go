package store

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
)

// TestSyntheticStore checks the benchmark's generated store reads like a
// real one: every run listed newest first, every attempt pickable by
// name#n with its transcript and cwd in place, agent numbers counting on
// across the runs of one owner session.
func TestSyntheticStore(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	g, err := storetest.Generate(t.TempDir(), storetest.Synthetic{Runs: 60, Projects: 3, RunsPerSession: 4, AgentsPerRun: 3, Seed: 7, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	s := New(g.Home, g.Cwd)
	runs, _, err := s.Runs()
	if err != nil || len(runs) != 60 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for i, r := range runs {
		if r.Err != nil || r.ID != g.IDs[i] {
			t.Fatalf("run %d: %s (%v), want %s", i, r.ID, r.Err, g.IDs[i])
		}
		for _, a := range r.Attempts() {
			got, err := r.PickText(a.Name())
			if err != nil || got.Record.N != a.Record.N {
				t.Fatalf("%s: %v", a, err)
			}
			if _, err := a.SessionFile(); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Cwd(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Run 4 is the second project's second run (runs rotate over the
	// projects), in its first session: agents 4-6.
	r, err := s.FindRun(g.IDs[4])
	if err != nil {
		t.Fatal(err)
	}
	var numbers []string
	for _, ag := range r.Record.Agents {
		numbers = append(numbers, ag.ID[strings.LastIndexByte(ag.ID, ':'):])
	}
	if strings.Join(numbers, " ") != ":4 :5 :6" {
		t.Fatalf("agent numbers %v", numbers)
	}
}
