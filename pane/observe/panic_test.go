package observe

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// A panic anywhere in the watching — a sink (run on a debounce timer's
// goroutine), the status reader on the copy loop, a consumer of its
// reports, the screen — stays in the Observer: it is
// logged with what it cost, the rest keeps working, and Stop still ends
// every goroutine. Escaping, it would kill the wrapper with the user's
// terminal raw and the run's socket and files left behind (the test
// binary dies instead of failing here).
func TestAPanicStaysInTheObserver(t *testing.T) {
	pi, _ := detect.Embedded().Lookup("pi")
	// A rule whose pattern was never compiled: evaluating it panics on the
	// screen's goroutine, as a bug in the manifest engine would.
	broken := &detect.Manifest{ID: "broken", Rules: []detect.Rule{{
		ID: "r", State: detect.Working, Gate: detect.Gate{Regex: []detect.Pattern{{Source: "x"}}},
	}}}
	working := report("working", "", "s")
	for _, tc := range []struct {
		name     string
		manifest *detect.Manifest
		sinkPans bool // the first sink panics on every event
		readerPs bool // the status reader's consumer panics
		scanPs   bool // the status reader's scan panics (on the copy loop)
		// want is the transitions the recording sink sees.
		want, log string
	}{
		{"sink", pi, true, false, false, "idle(screen) working(program-status:working)", "a state sink panicked (it misses this event)"},
		{"report consumer", pi, false, true, false, "idle(screen)", "a status report's consumer panicked (it misses this report)"},
		{"status scan", pi, false, false, true, "idle(screen)", "the status reader panicked (the agent's status reports are no longer read"},
		// The screen is gone; the reports still count.
		{"screen", broken, false, false, false, "idle(screen) working(program-status:working)", "the screen panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var logs, got []string
				sinks := []func(state.Event){func(e state.Event) {
					if tc.sinkPans {
						panic("sink boom")
					}
				}, func(e state.Event) {
					if e.Kind == state.EventTransition {
						mu.Lock()
						got = append(got, string(e.To)+"("+e.Cause+")")
						mu.Unlock()
					}
				}}
				o := Start(Config{Manifest: tc.manifest, Debounce: 50 * time.Millisecond, Sinks: sinks,
					Logf: func(f string, a ...any) {
						mu.Lock()
						logs = append(logs, fmt.Sprintf(f, a...))
						mu.Unlock()
					}})
				if tc.readerPs {
					o.ReportProgramStatus(func(state.ProgramStatus) { panic("reader boom") })
				}
				if tc.scanPs {
					o.reports.emit = func(state.ProgramStatus) { panic("scan boom") }
				}
				o.Tap.Resize(pty.Size{Rows: 10, Cols: 40})
				o.Tap.Write([]byte("\x1b[Hsome screen x"))
				time.Sleep(100 * time.Millisecond)
				synctest.Wait()
				o.Tap.Write([]byte(working))
				time.Sleep(time.Second)
				synctest.Wait()
				o.Stop()
				mu.Lock()
				defer mu.Unlock()
				if s := strings.Join(got, " "); s != tc.want {
					t.Errorf("transitions %q, want %q", s, tc.want)
				}
				if all := strings.Join(logs, "\n"); !strings.Contains(all, tc.log) {
					t.Errorf("no log line saying %q; logs:\n%s", tc.log, all)
				}
			})
		})
	}
}
