package observe

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// The frames these tests draw on a 10x40 screen: Pi's busy indicator
// (rule busy_border) and the idle editor's top border in its place.
var (
	piBorder    = strings.Repeat("─", 40)
	piBusyFrame = []byte("\x1b[6;1H\x1b[2K── ⠋ Working ────\x1b[9;1H" + piBorder)
	piIdleFrame = []byte("\x1b[6;1H\x1b[2K" + piBorder)
	// nothingVisible moves the cursor home: the screen takes and draws
	// it, and what it shows does not change.
	nothingVisible = []byte("\x1b[H")
)

// A screen verdict is confirmed only on a screen that has looked at every
// byte the copy loop committed before the confirmation. Here the screen
// shows idle when the debounce comes due, but the agent's busy frame
// already sits in the tap: the screen took a byte just before (nothing
// visible) and rests for takeGap, so it draws the frame only after the
// debounce fired. The idle it showed is stale and must never be reported;
// working is, one debounce after the screen drew it.
//
// "start": the agent's first frame, as in CI (TestWrapReportsWorkingThenIdle
// saw idle, working, idle: the empty opening screen confirmed idle while
// the first busy bytes were unread). "mid-run": a run's idle frame, then
// the next run's busy frame before the idle held for the debounce on a
// screen that had seen everything.
func TestNoVerdictFromAScreenBehindTheOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before draws the screen the stale verdict comes from and
		// returns when that verdict comes due; want is every transition.
		before func(o *Observer) (due time.Time)
		want   string
	}{
		{"start", func(o *Observer) time.Time {
			return time.Now().Add(testDebounce) // the empty screen, drawn now
		}, "working(screen:busy_border)"},
		{"mid-run", func(o *Observer) time.Time {
			drawBusy(o, 500*time.Millisecond)
			o.Tap.Write(piIdleFrame)
			synctest.Wait()
			return time.Now().Add(testDebounce)
		}, "working(screen:busy_border)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o, transitions := startRecorded()
				o.Tap.Resize(pty.Size{Rows: 10, Cols: 40})
				synctest.Wait()
				due := tc.before(o)
				// The screen takes a byte a gap before the verdict is due
				// and rests; the busy frame comes in its rest.
				time.Sleep(time.Until(due) - takeGap*3/4)
				o.Tap.Write(nothingVisible)
				synctest.Wait()
				time.Sleep(takeGap / 2)
				o.Tap.Write(piBusyFrame)
				time.Sleep(takeGap)
				synctest.Wait()
				atDue := transitions()
				drawBusy(o, time.Second)
				o.Stop()
				if strings.HasSuffix(atDue, "idle(screen)") {
					t.Fatalf("transitions %q: idle confirmed from a screen that had not drawn the busy frame committed before the debounce fired", atDue)
				}
				if got := transitions(); got != tc.want {
					t.Fatalf("transitions %q, want %q", got, tc.want)
				}
			})
		})
	}
}

// drawBusy redraws Pi's busy indicator every 80 ms for d.
func drawBusy(o *Observer, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		o.Tap.Write(piBusyFrame)
		time.Sleep(80 * time.Millisecond)
		synctest.Wait()
	}
}

// A flood that ends on the idle screen is confirmed idle promptly: the
// screen, resting through the flood, looks at once when the output pauses,
// and the verdict comes due on a screen that has seen everything. The
// bound is the detection benchmark's (debounce + 50 ms after the idle
// screen was written).
func TestFloodEndingIdleConfirmsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, events := startTimed()
		o.Tap.Resize(pty.Size{Rows: 10, Cols: 40})
		drawBusy(o, 500*time.Millisecond)
		// 4 KiB a millisecond for a second: lines scrolling under Pi's
		// busy indicator, far more than the tap holds for the screen.
		chunk := append([]byte(strings.Repeat("some tool output scrolls by here\r\n", 120)), piBusyFrame...)
		for range 1000 {
			o.Tap.Write(chunk)
			time.Sleep(time.Millisecond)
		}
		o.Tap.Write(piIdleFrame)
		idleWritten := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		o.Stop()
		got := events()
		if len(got) != 2 || got[0].To != "working" || got[1].To != "idle" {
			t.Fatalf("transitions %v, want working then idle", got)
		}
		t.Logf("idle %v after the flood ended", got[1].At.Sub(idleWritten))
		if took := got[1].At.Sub(idleWritten); took < testDebounce || took > testDebounce+50*time.Millisecond {
			t.Fatalf("idle confirmed %v after the flood ended on the idle screen, want within debounce (%v) + 50ms", took, testDebounce)
		}
	})
}

// An agent that keeps printing while its screen stays idle (here: it
// repaints the idle screen as fast as a flood) is confirmed idle at the
// screen's next look after the verdict came due, not held back until the
// printing stops: the verdict waits only for the output written before it
// came due.
func TestIdleWhilePrintingIsConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, events := startTimed()
		o.Tap.Resize(pty.Size{Rows: 10, Cols: 40})
		drawBusy(o, 500*time.Millisecond)
		idleFrom := time.Now()
		chunk := bytes.Repeat(piIdleFrame, 40)
		for range 3000 {
			o.Tap.Write(chunk)
			time.Sleep(time.Millisecond)
		}
		printedTo := time.Now()
		synctest.Wait()
		o.Stop()
		got := events()
		if len(got) != 2 || got[0].To != "working" || got[1].To != "idle" {
			t.Fatalf("transitions %v, want working then idle", got)
		}
		t.Logf("idle %v after the idle screen, the printing lasting %v", got[1].At.Sub(idleFrom), printedTo.Sub(idleFrom))
		// Under a flood the screen looks twice a second: once to see the
		// idle screen, once more as it turns lossy (a change the machine
		// hears), and the verdict due after that waits for one more look.
		if at := got[1].At; !at.Before(printedTo) || at.Sub(idleFrom) > 2*time.Second {
			t.Fatalf("idle confirmed %v after the idle screen, the printing lasting %v: want it while printing, within 2s",
				at.Sub(idleFrom), printedTo.Sub(idleFrom))
		}
	})
}

// startTimed is startRecorded with the transitions' times.
func startTimed() (o *Observer, transitions func() []state.Event) {
	pi, _ := detect.Embedded().Lookup("pi")
	var mu sync.Mutex
	var got []state.Event
	o = Start(Config{Manifest: pi, Debounce: testDebounce, Sinks: []func(state.Event){func(e state.Event) {
		if e.Kind == state.EventTransition {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}
	}}})
	return o, func() []state.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
