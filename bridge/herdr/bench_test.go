package herdr_test

import (
	"context"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// BenchmarkReport measures what a state change costs the code that hands
// it over (wrap's state wiring, fed from the copy loop's observers) while
// the Presence talks to Herdr over its real socket: a healthy Herdr, and a
// hung one that holds every request until its deadline. The two should be
// alike: Report never waits for Herdr.
func BenchmarkReport(b *testing.B) {
	for _, bc := range []struct {
		name  string
		fault herdrtest.Fault
	}{
		{"healthy", herdrtest.Fault{}},
		{"hung", herdrtest.Fault{Kind: herdrtest.FaultHang}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := herdrtest.Start(b)
			s.SetFault(bc.fault)
			p := herdr.StartPresence(presenceConfig(s, nil))
			defer p.Close(context.Background())
			states := []string{"working", "idle", "blocked"}
			i := 0
			for b.Loop() {
				p.Report(states[i%3], "")
				i++
			}
			b.StopTimer()
			b.ReportMetric(float64(len(s.Requests())), "requests")
		})
	}
}
