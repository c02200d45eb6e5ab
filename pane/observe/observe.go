// Package observe is the watching half of one wrapped run: the bytes the
// agent draws go from the pty's tap into a shadow screen, every screen is
// classified by the agent's detection manifest, and the verdicts feed the
// state machine, whose events go to the sinks one at a time, in order. On
// the way to the screen the bytes are read for the agent's own status
// reports (OSC 7501), which feed the machine too.
//
// The copy loop only writes into the tap: a slow screen or manifest delays
// the state, never the agent's output. observe decides nothing itself; the
// machine (pane/state) does.
package observe

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Config is what one run is watched with.
type Config struct {
	Manifest *detect.Manifest
	// Debounce and StartupGrace tune the state machine (see state.Config).
	Debounce, StartupGrace time.Duration
	// Sinks get every state event, in order.
	Sinks []func(state.Event)
	Logf  func(format string, args ...any)
}

// Observer watches one run. Tap is where the copy loop hands it the
// output; Machine is the run's state machine, which other signals (the
// probe, the session file, waits) feed too.
type Observer struct {
	Tap     *pty.Tap
	Machine *state.Machine

	manifest *detect.Manifest
	reports  *reports
	cancel   context.CancelFunc
	running  sync.WaitGroup
}

// Start builds the pipeline and starts its goroutines — the deliverer of
// status reports (read on the copy loop, as the tap's Watch) and the
// screen — which the Observer owns: Stop ends them and waits for them.
func Start(cfg Config) *Observer {
	o := &Observer{Tap: pty.NewTap(screenHold), manifest: cfg.Manifest}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sinks := cfg.Sinks
	o.Machine = state.New(state.Config{
		Debounce:     cfg.Debounce,
		StartupGrace: cfg.StartupGrace,
		// The screen's verdicts wait for it to look at the output the
		// copy loop committed to the tap (FollowOptions.Seen below).
		Output: func() uint64 { total, _ := o.Tap.Stats(); return total },
		Logf:   logf,
		Sink: func(e state.Event) {
			for _, s := range sinks {
				// Sinks run on whichever goroutine moved the machine, a
				// debounce timer's included, where nothing above would
				// catch a panic: one sink's panic costs its own event.
				guard.Run(logf, "observe: a state sink", "it misses this event", func() { s(e) })
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	o.reports = newReports(o.Machine.ProgramStatusLost, logf)
	o.ReportProgramStatus(o.Machine.ProgramStatus)
	o.Tap.Watch(o.reports.watch)
	// A panic in either goroutine ends the watching, not the wrapper: left
	// to the runtime it would kill the process before pty.Run gave the
	// terminal its mode back or the run's socket and files were removed.
	guard.Go(&o.running, logf, "observe: the status reports", lostWatch, func() { o.reports.run(ctx) })
	guard.Go(&o.running, logf, "observe: the screen", lostWatch, func() {
		defer func() {
			if ctx.Err() == nil {
				// The screen looks no more (it panicked, or the output
				// ended and it drew the end): no verdict may wait for
				// its next look.
				o.Machine.ScreenSeen(math.MaxUint64)
			}
		}()
		screen.Follow(ctx, o.Tap, screen.FollowOptions{
			Rows: 24, Cols: 80, // replaced by the size the tap carries first
			Logf:    cfg.Logf,
			Publish: o.classify,
			Seen:    o.Machine.ScreenSeen,
			Gap:     takeGap,
		})
	})
	return o
}

// lostWatch is what a panic in one of the Observer's goroutines costs.
const lostWatch = "its watching is over for this run; the agent runs on"

// ReportProgramStatus sends the agent's status reports (OSC 7501) to f
// rather than straight to the machine: pane/signals takes them first, to
// have the session file read when a run ends. f runs on the reports
// goroutine, one report at a time, and must pass each to the machine.
func (o *Observer) ReportProgramStatus(f func(state.ProgramStatus)) {
	o.reports.ReportTo(f)
}

// classify turns one screen snapshot into a verdict for the machine.
func (o *Observer) classify(s screen.Snapshot) {
	v := o.manifest.Evaluate(detect.Input{Text: s.Text, Title: s.Title, Progress: s.Progress})
	sv := state.Verdict{State: state.State(v.State), Skip: v.Skip}
	if v.Rule != nil {
		sv.Rule = v.Rule.ID
	}
	o.Machine.Screen(sv)
}

// Stop ends the watching once the child is gone. Nothing is left to see:
// the screen consumer is cancelled rather than drained (it may be resting
// after a flood, and the wrapper's exit must not wait for it), then waited
// for, and the machine stops its timers.
func (o *Observer) Stop() {
	o.Tap.Close()
	o.cancel()
	o.running.Wait()
	o.Machine.Stop()
}

// ChooseAgent picks the manifest's agent: the flag, else the configured
// one, else the command's base name when a manifest has that name, else pi.
func ChooseAgent(flag, configured string, argv []string, set *detect.Set) string {
	if flag != "" {
		return flag
	}
	if configured != "" {
		return configured
	}
	if len(argv) > 0 {
		if base := filepath.Base(argv[0]); base != "" {
			if _, ok := set.Lookup(base); ok {
				return base
			}
		}
	}
	return "pi"
}

// Describe is one state event as a log line.
func Describe(e state.Event) string {
	switch e.Kind {
	case state.EventRunFinished:
		if e.Cause != "" { // told by Pi's status channel, which gives no stop reason
			return fmt.Sprintf("run finished: %s (%s, %v)", e.Outcome, e.Cause, e.Duration.Round(time.Millisecond))
		}
		return fmt.Sprintf("run finished: %s (stop reason %q, %v)", e.Outcome, e.StopReason, e.Duration.Round(time.Millisecond))
	case state.EventOpened, state.EventClosed, state.EventAsked:
		return fmt.Sprintf("%s %s (%s)", e.Kind, e.Reason.Key, e.Reason.Kind)
	case state.EventRelabelled:
		return fmt.Sprintf("still %s, relabelled (%s): %q", e.To, e.Cause, e.Message)
	}
	s := fmt.Sprintf("%s → %s (%s)", e.From, e.To, e.Cause)
	if e.Message != "" {
		s += fmt.Sprintf(": %q", e.Message)
	}
	return s
}

// screenHold bounds the output the tap holds for the screen. The screen
// draws only the newest 16 KiB of what it takes at once
// (screen.FollowOptions.MaxFeed) and counts the rest as skipped, so
// holding more buys nothing; holding a megabyte cost 15 MiB of RSS under
// a flood. The status reports are read before the limit applies.
const screenHold = 64 << 10

// takeGap is the least time between two takes of the screen. A flood
// makes the screen rest anyway; a stream of small writes below a flood's
// rate would otherwise wake it once per read of the copy loop. What the
// screen shows is at most 2 ms late: Pi draws a frame every 16 ms or more.
const takeGap = 2 * time.Millisecond
