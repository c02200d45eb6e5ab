package observe

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// reports reads the agent's status reports (OSC 7501) in the output on the
// copy loop's own thread, as each chunk is committed to the tap (its
// Watch), and hands the reports found to one goroutine that passes them
// on in order. The scan is a vectorised search per chunk, on bytes still
// in the cache from the read: handing every chunk to another goroutine to
// scan cost that goroutine's wake-ups and the other core's time under a
// flood. Reading on the loop also means no report is lost to the tap's
// limit, whatever the screen's pace: a report must not wait for the screen,
// which rests after heavy work — Pi's "working" would then arrive after
// the session file said the person answered, and the pane would show idle
// in between.
type reports struct {
	scan   statusScanner
	emit   func(state.ProgramStatus) // found, but for tests
	broken bool                      // the scan panicked: it is off
	report atomic.Pointer[func(state.ProgramStatus)]
	lost   func()
	logf   guard.Logf

	mu      sync.Mutex
	queue   []state.ProgramStatus
	dropped bool // reports dropped from the queue since the last delivery
	ready   chan struct{}
}

// reportQueue bounds the reports found and not yet delivered. An agent
// reports a few times a turn; only output made of nothing but reports
// fills it, and then the oldest go and the machine is told some were lost.
const reportQueue = 64

func newReports(lost func(), logf guard.Logf) *reports {
	r := &reports{lost: lost, logf: logf, ready: make(chan struct{}, 1)}
	r.emit = r.found
	return r
}

// ReportTo sends the reports to f (the Observer's ReportProgramStatus).
func (r *reports) ReportTo(f func(state.ProgramStatus)) { r.report.Store(&f) }

// watch is the tap's Watch: it runs on the copy loop for every chunk. A
// panic in the scan turns it off rather than end the copy loop (and the
// agent's session with it); the screen decides from then on.
func (r *reports) watch(p []byte) {
	if r.broken {
		return
	}
	defer r.recoverScan()
	r.scan.scan(p, r.emit)
}

func (r *reports) recoverScan() {
	v := recover()
	if v == nil {
		return
	}
	r.broken = true
	guard.Recovered(r.logf, "observe: the status reader", "the agent's status reports are no longer read; the screen decides", v)
	r.lost()
}

func (r *reports) found(s state.ProgramStatus) {
	r.mu.Lock()
	if len(r.queue) == reportQueue {
		n := copy(r.queue, r.queue[1:])
		r.queue = r.queue[:n]
		r.dropped = true
	}
	r.queue = append(r.queue, s)
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// run delivers reports until ctx ends, and then those still queued: a
// run's last report ("done") is written as the agent exits, and the
// Observer stops right after.
func (r *reports) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			r.deliver()
			return
		case <-r.ready:
			r.deliver()
		}
	}
}

func (r *reports) deliver() {
	r.mu.Lock()
	q, dropped := r.queue, r.dropped
	r.queue, r.dropped = nil, false
	r.mu.Unlock()
	if dropped {
		r.lost()
	}
	report := *r.report.Load()
	for _, s := range q {
		guard.Run(r.logf, "observe: a status report's consumer", "it misses this report", func() { report(s) })
	}
}
