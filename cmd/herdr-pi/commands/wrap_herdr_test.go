package commands

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

func TestOutsideHerdrNothingIsSent(t *testing.T) {
	s := herdrtest.Start(t)
	for _, env := range [][]string{
		nil,
		{"HERDR_SOCKET_PATH=" + s.SocketPath(), "HERDR_PANE_ID=w1:p1"}, // HERDR_ENV missing
		{"HERDR_ENV=1", "HERDR_SOCKET_PATH=" + s.SocketPath()},         // pane missing
		{"HERDR_ENV=true", "HERDR_SOCKET_PATH=" + s.SocketPath(), "HERDR_PANE_ID=w1:p1"},
	} {
		var logs []string
		report, stop, _ := startHerdrReporting(settings.EnvFrom(env), settings.Defaults(), "", func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
		report("working", "")
		stop()
		if n := len(s.Requests()); n != 0 {
			t.Errorf("env %q: %d requests sent", env, n)
		}
		if len(env) > 0 && len(logs) != 1 {
			t.Errorf("env %q: log %q, want one line saying what is missing", env, logs)
		}
	}
}

func TestReportingUsesConfigAndReleases(t *testing.T) {
	s := herdrtest.Start(t)
	cfg := settings.Defaults()
	cfg.Herdr.Source = "custom:team"
	report, stop, _ := startHerdrReporting(settings.EnvFrom(s.Env()), cfg, "", t.Logf)
	s.WaitFor(t, time.Second, "the claim", func() bool { return s.Pane(s.PaneID()).Status == "unknown" && len(s.Reports(s.PaneID())) == 1 })
	report("blocked", "approve")
	s.WaitFor(t, time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if st := s.Pane(s.PaneID()); st.Source != "custom:team" || st.Agent != "pi" {
		t.Errorf("pane %+v", st)
	}
	stop()
	stop() // twice is fine
	if rel := s.Releases(s.PaneID()); len(rel) != 1 || !rel[0].Applied {
		t.Errorf("releases %+v", rel)
	}
}

// TestReportingDoesNotSlowTheCopyLoop measures wrap's copy loop (pane/pty)
// moving 64 MiB from a child to the terminal while the state wiring hammers
// report() with bursts of 1,000 changes every 50 ms, against a healthy and
// a hung Herdr, and compares it with no reporting at all.
func TestReportingDoesNotSlowTheCopyLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB nine times")
	}
	const size = 64 << 20
	healthy := herdrtest.Start(t)
	hung := herdrtest.Start(t)
	hung.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
	modes := []struct {
		name string
		env  []string
	}{
		{"no Herdr", nil},
		{"healthy Herdr, hammered", healthy.Env()},
		{"hung Herdr, hammered", hung.Env()},
	}
	rates := make([][]float64, len(modes))
	bursts := make([]int, len(modes))
	for round := 0; round < 3; round++ {
		for i, m := range modes {
			rate, b := copyRate(t, m.env, size)
			rates[i] = append(rates[i], rate)
			bursts[i] += b
		}
	}
	// The best of three runs is what the loop can do; the others measure
	// the other tests sharing the machine. The bar is low because the
	// machine is shared; a copy loop that waited on Herdr even once per
	// burst would lose far more (a hung Herdr holds a report for 500 ms).
	best := func(v []float64) float64 { return slices.Max(v) }
	base := best(rates[0])
	for i, m := range modes {
		t.Logf("%-24s best %6.1f MB/s of %v (%d bursts of 1,000 changes)", m.name, best(rates[i]), fmtRates(rates[i]), bursts[i])
		if i > 0 && best(rates[i]) < 0.5*base {
			t.Errorf("%s: %.1f MB/s against %.1f MB/s without Herdr", m.name, best(rates[i]), base)
		}
	}
	if n := len(healthy.Reports(healthy.PaneID())); n == 0 || n > bursts[1]*3 {
		t.Errorf("healthy Herdr got %d reports for %d bursts", n, bursts[1])
	}
	t.Logf("healthy Herdr got %d reports in all", len(healthy.Reports(healthy.PaneID())))
}

func fmtRates(v []float64) string {
	s := ""
	for _, r := range v {
		s += fmt.Sprintf(" %.0f", r)
	}
	return "[" + s[1:] + "]"
}

func copyRate(t *testing.T, herdrEnv []string, size int) (mbps float64, bursts int) {
	t.Helper()
	in, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	report, stop, _ := startHerdrReporting(settings.EnvFrom(herdrEnv), settings.Defaults(), "", func(string, ...any) {})
	defer stop()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the hammer: owned here, ended by done
		defer wg.Done()
		states := []string{"working", "idle", "blocked"}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			// Each burst ends on another state, so reports keep flowing.
			for i := 0; i < 1000; i++ {
				report(states[(i+bursts)%3], "")
			}
			bursts++
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	err = pty.Run(context.Background(), pty.Options{
		Argv:  []string{"head", "-c", fmt.Sprint(size), "/dev/zero"},
		Env:   []string{"PATH=" + os.Getenv("PATH")},
		Stdin: in, Stdout: out,
	})
	took := time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("pty.Run: %v", err)
	}
	return float64(size) / took.Seconds() / 1e6, bursts
}

// wrapRun defers stop right after starting, so a panic unwinding through
// wrap still gives the pane back.
func TestReleaseRunsWhenWrapPanics(t *testing.T) {
	s := herdrtest.Start(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		report, stop, _ := startHerdrReporting(settings.EnvFrom(s.Env()), settings.Defaults(), "", t.Logf)
		defer stop()
		report("blocked", "approve")
		s.WaitFor(t, time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
		panic("wrap broke")
	}()
	if rel := s.Releases(s.PaneID()); len(rel) != 1 || !rel[0].Applied {
		t.Errorf("releases %+v", rel)
	}
	if st := s.Pane(s.PaneID()); st.Status != "unknown" {
		t.Errorf("pane left %q", st.Status)
	}
}
