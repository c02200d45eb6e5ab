package herdr

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// ReporterConfig says which pane a [Reporter] speaks for and how.
type ReporterConfig struct {
	Client *Client
	PaneID string
	// Source is the reporting source, e.g. "custom:herdr-pi"; a custom
	// source takes the pane's single hook-authority slot (§4.2, §6.2).
	Source string
	// Agent is the agent label shown for the pane, e.g. "pi".
	Agent string
	// Logf receives one line per kind of failure; it must not write to the
	// agent's terminal. Nil discards.
	Logf func(format string, args ...any)
	// Now and Sleep are the clock seqs are read from; nil means the real one.
	Now   func() time.Time
	Sleep func(time.Duration)
	// MinInterval is the least time between the starts of two reports; the
	// changes in between collapse into the newest. Default 100 ms, the tick
	// at which Herdr itself delivers events (§1.4).
	MinInterval time.Duration
	// RetryMin and RetryMax bound the back-off with which the current state
	// is sent again after a report failed. Defaults 1 s and 30 s. Resync
	// ends a back-off at once.
	RetryMin, RetryMax time.Duration
	// Yield, when set, is asked before each report goes out: true means
	// another reporter holds the pane now, and the state is kept, not
	// sent, until the next change or Resync asks again. It runs on the
	// sender's goroutine and may read files, never wait long.
	Yield func() bool
	// ReleaseGrace is how long Release lets a report in flight finish, so
	// the release arrives after it, before cutting it off. Default 250 ms.
	ReleaseGrace time.Duration
}

// ReporterStats counts what a Reporter did, for tests and diagnostics.
type ReporterStats struct {
	Requested int    // Report calls that changed the wanted state
	Sent      int    // reports Herdr answered
	Failed    int    // reports that got no answer or an error
	LastSeq   uint64 // the highest seq sent, release included
}

type stateMsg struct{ state, message string }

// Reporter keeps one pane's agent state in Herdr.
//
// Report never blocks: it records the newest state and returns. One sender
// goroutine, owned by the Reporter, delivers it: one request at a time, the
// newest pending state replacing older unsent ones (a queue of one), at most
// one report per MinInterval, only when (state, message) differs from what
// Herdr last acknowledged. The sender ends once it has caught up; after a
// failure it stays to send the current state again with back-off, so Herdr
// gets it once it answers again (after a restart or a live handoff, §9.1);
// Resync cuts that back-off short. Reported waits, on its caller's
// goroutine, until Herdr has what was reported. Release and Close stop the
// sender and wait for it.
type Reporter struct {
	cfg    ReporterConfig
	client *Client

	// seqMu guards seq, whose next may sleep a few microseconds holding
	// it; nothing else takes seqMu, so Stats and Report never wait on that
	// sleep (under testing/synctest a goroutine waiting on a mutex would
	// also stop the bubble's clock that the sleep waits for).
	seqMu   sync.Mutex
	seq     *seqClock
	lastSeq atomic.Uint64 // the last seq handed out, 0 before the first

	sendCtx    context.Context
	cancelSend context.CancelCauseFunc
	stopCh     chan struct{}
	wake       chan struct{}
	wg         sync.WaitGroup

	mu       sync.Mutex
	want     stateMsg
	hasWant  bool
	dirty    bool // want has not been delivered
	force    bool // send want even if Herdr acknowledged it already
	acked    stateMsg
	hasAcked bool
	claimed  bool // Report was called: this run speaks for the pane
	failing  bool
	// failingSince and failErr say since when reports have failed and
	// why (zero and nil while they reach Herdr), for Presence.Health.
	failingSince time.Time
	failErr      error
	// rejected is Herdr's answer to the last report when it said no (an
	// *Error: a pane it does not have, say); nil once one is taken.
	rejected   error
	lastKind   FailureKind // of the last failure
	lastFailed stateMsg
	retryDelay time.Duration
	retryAt    time.Time
	lastStart  time.Time
	running    bool
	stopped    bool
	released   bool
	logged     map[FailureKind]bool
	recovered  bool
	stats      ReporterStats
	// resume is the command Herdr may restore the agent with, sent with
	// every report while protocol (as ping last said; 0 before) is
	// ProtocolResume or newer.
	resume   []string
	protocol int

	// Generations for Reported: every Report that changes the wanted
	// state, and every Resync, asks for one more; a report settles the
	// generation it was taken at, and so every one before it.
	reqGen  uint64 // the last generation asked for
	sendGen uint64 // the generation of the report in flight
	doneGen uint64 // every generation up to this one is settled
	waiters []*waiter
}

// waiter is one Reported call waiting for generation gen to settle.
type waiter struct {
	gen  uint64
	done chan struct{}
}

var errStopped = errors.New("reporter stopped")

// NewReporter returns a Reporter for one pane. It sends nothing until the
// first Report.
func NewReporter(cfg ReporterConfig) *Reporter {
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = 100 * time.Millisecond
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(30*time.Second, cfg.RetryMin)
	}
	if cfg.ReleaseGrace <= 0 {
		cfg.ReleaseGrace = 250 * time.Millisecond
	}
	r := &Reporter{
		cfg: cfg, client: cfg.Client,
		seq:    newSeqClock(cfg.Now, cfg.Sleep),
		stopCh: make(chan struct{}),
		wake:   make(chan struct{}, 1),
		logged: map[FailureKind]bool{},
	}
	r.sendCtx, r.cancelSend = context.WithCancelCause(context.Background())
	return r
}

// Report asks for the pane to show state (idle, working, blocked or
// unknown) with an optional message. It returns at once; repeating the
// current (state, message) does nothing.
func (r *Reporter) Report(state, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	// The message may be another extension's text (an ask's title, a
	// wait's label): Herdr may draw it, so nothing in it acts on a
	// terminal.
	next := stateMsg{state, termtext.Clean(message)}
	if r.hasWant && r.want == next {
		return
	}
	r.want, r.hasWant, r.dirty, r.claimed = next, true, true, true
	r.stats.Requested++
	r.reqGen++
	r.kickLocked()
}

// wanted is the state the Reporter is asked to show; ok is false before
// the first Report.
func (r *Reporter) wanted() (stateMsg, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.want, r.hasWant
}

// SetResumeArgv sets the command Herdr may restore the agent with after a
// restart (resume_argv, landscape.md §9). It goes with every report to a
// Herdr that speaks [ProtocolResume]; a change goes out with the current
// state at once.
func (r *Reporter) SetResumeArgv(argv []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.resumeLocked()
	r.resume = slices.Clone(argv)
	if !slices.Equal(before, r.resumeLocked()) {
		r.resyncLocked()
	}
}

// SetProtocol records the protocol Herdr answered ping with. A Herdr that
// starts speaking [ProtocolResume] (an upgrade across a restart) gets the
// resume command with the current state at once.
func (r *Reporter) SetProtocol(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.resumeLocked()
	r.protocol = n
	if !slices.Equal(before, r.resumeLocked()) && r.resumeLocked() != nil {
		r.resyncLocked()
	}
}

// resumeLocked is the resume_argv the next report carries, nil for none.
func (r *Reporter) resumeLocked() []string {
	if r.protocol < ProtocolResume || len(r.resume) == 0 {
		return nil
	}
	return r.resume
}

// Resync sends the current state again even if Herdr acknowledged it, for
// when Herdr answers again and may have lost it (its event stream came
// back after a restart or a live handoff, say). It goes out at the next
// pacing slot, cutting short any back-off after failed reports: however
// long Herdr was away, it gets the state as soon as it is back.
func (r *Reporter) Resync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resyncLocked()
}

func (r *Reporter) resyncLocked() {
	if r.stopped || !r.hasWant {
		return
	}
	r.dirty, r.force = true, true
	r.reqGen++
	r.retryNowLocked()
	r.kickLocked()
}

// answered tells the Reporter that Herdr answered another request: a state
// waiting out a back-off after failed reports goes now, not seconds later.
func (r *Reporter) answered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || !r.failing {
		return
	}
	r.retryNowLocked()
	r.kickLocked()
}

// retryNowLocked ends the back-off; should Herdr fail again, the back-off
// starts over from RetryMin, as for a fresh failure.
func (r *Reporter) retryNowLocked() {
	r.retryAt, r.retryDelay = time.Time{}, 0
}

// Reported returns once every state handed to Report before the call (and
// every Resync) has been delivered to Herdr or given up — replaced by a
// newer state that was delivered, refused by Herdr, or dropped because the
// Reporter stopped — or when ctx ends, with ctx's cause. Any other return
// is nil. It never holds up Report: whoever must not show something before
// Herdr shows the state (a toast saying the agent needs input, say) waits
// here, not the caller of Report. While Herdr does not answer, the state
// stays pending and only ctx bounds the wait.
func (r *Reporter) Reported(ctx context.Context) error {
	r.mu.Lock()
	if r.doneGen >= r.reqGen {
		r.mu.Unlock()
		return nil
	}
	w := &waiter{gen: r.reqGen, done: make(chan struct{})}
	r.waiters = append(r.waiters, w)
	r.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		r.mu.Lock()
		r.waiters = slices.DeleteFunc(r.waiters, func(o *waiter) bool { return o == w })
		r.mu.Unlock()
		return context.Cause(ctx)
	}
}

// settledLocked records that every generation up to gen is settled and
// wakes the Reported calls waiting for them.
func (r *Reporter) settledLocked(gen uint64) {
	if gen <= r.doneGen {
		return
	}
	r.doneGen = gen
	r.waiters = slices.DeleteFunc(r.waiters, func(w *waiter) bool {
		if w.gen <= gen {
			close(w.done)
			return true
		}
		return false
	})
}

// acknowledged returns the state Herdr last acknowledged; ok is false
// before the first.
func (r *Reporter) acknowledged() (state string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acked.state, r.hasAcked
}

// failure says since when reports have failed to reach Herdr, and the
// last failure (a zero time while they reach it), and Herdr's refusal of
// the last report that reached it (nil when it took it).
func (r *Reporter) failure() (since time.Time, err, rejected error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failingSince, r.failErr, r.rejected
}

// Stats returns what the Reporter has done so far.
func (r *Reporter) Stats() ReporterStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.LastSeq = r.lastSeq.Load()
	return s
}

func (r *Reporter) kickLocked() {
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.run()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Release stops reporting and gives the pane's agent authority back with a
// seq above every report sent, so Herdr does not keep showing a state for a
// wrapper that ended (§11.3). A report in flight gets ReleaseGrace to finish
// first. ctx bounds the whole call. Releasing twice does nothing, and a
// Reporter that was never asked to report releases nothing. One that was
// asked releases even if no report left yet: an earlier run that died
// without releasing may have left its state on the pane.
func (r *Reporter) Release(ctx context.Context) error {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return nil
	}
	r.released = true
	r.stopLocked()
	r.mu.Unlock()

	var cutOff atomic.Bool
	grace := time.AfterFunc(r.cfg.ReleaseGrace, func() {
		cutOff.Store(true)
		r.cancelSend(errStopped)
	})
	stopOnCtx := context.AfterFunc(ctx, func() { r.cancelSend(context.Cause(ctx)) })
	r.wg.Wait()
	grace.Stop()
	stopOnCtx()
	r.cancelSend(errStopped)

	r.mu.Lock()
	claimed := r.claimed
	// A Herdr that let a report time out, or sat on one through the
	// grace, is not answering: one short attempt, so that exiting does
	// not wait the full 2 s for a release that cannot land.
	hung := (r.failing && r.lastKind == FailTimeout) || cutOff.Load()
	r.mu.Unlock()
	if !claimed {
		return nil
	}
	attempts := retryOnce
	if hung {
		attempts = retryOnce[:1]
	}
	seq := r.nextSeq()
	err := r.client.call(ctx, "pane.release_agent",
		AgentRelease{PaneID: r.cfg.PaneID, Source: r.cfg.Source, Agent: r.cfg.Agent, Seq: seq}, "ok", nil, attempts)
	if err != nil {
		// Logged once per kind like report failures: a Herdr that is away
		// has been reported already.
		r.logOnce(KindOf(err), "herdr: cannot release pane %s: %v", r.cfg.PaneID, err)
		return fmt.Errorf("release pane %s: %w", r.cfg.PaneID, err)
	}
	return nil
}

// Close stops reporting without releasing and waits for the sender.
func (r *Reporter) Close() {
	r.mu.Lock()
	r.stopLocked()
	r.mu.Unlock()
	r.cancelSend(errStopped)
	r.wg.Wait()
}

func (r *Reporter) stopLocked() {
	if !r.stopped {
		r.stopped = true
		close(r.stopCh)
		r.settledLocked(r.reqGen) // nothing more will be delivered
	}
}

func (r *Reporter) nextSeq() uint64 {
	r.seqMu.Lock()
	defer r.seqMu.Unlock()
	seq := r.seq.next()
	r.lastSeq.Store(seq)
	return seq
}

// logf logs through the configured function. A log function that panics
// loses its line but never the Reporter.
func (r *Reporter) logf(format string, args ...any) {
	if r.cfg.Logf == nil {
		return
	}
	defer func() { _ = recover() }()
	r.cfg.Logf(format, args...)
}

// run is the sender. It is started by kickLocked and owned by the Reporter;
// it ends when caught up or stopped, and Release/Close wait for it. A panic
// here (in a log function, say) is recovered so the process can still
// release the pane on its way out.
func (r *Reporter) run() {
	defer r.wg.Done()
	defer func() {
		if p := recover(); p != nil {
			r.mu.Lock()
			r.running = false
			r.dirty = true // whatever was being sent may not have arrived
			// Sent again only with the next change: until then it is
			// given up, and no Reported call waits for it.
			r.settledLocked(r.reqGen)
			r.mu.Unlock()
			r.logOnce("panic", "herdr: reporter panic, recovered (the next change is sent again): %v\n%s", p, debug.Stack())
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		job, wait, ok := r.next()
		if !ok {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-r.wake:
			case <-r.stopCh:
			}
			continue
		}
		if r.cfg.Yield != nil && r.cfg.Yield() {
			if r.yielded() {
				return
			}
			continue
		}
		r.send(job)
	}
}

// next decides what the sender does: send job now, wait, or end (ok false;
// the sender is then marked gone under the same lock a Report would use to
// start a new one).
func (r *Reporter) next() (job stateMsg, wait time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		r.running = false
		return job, 0, false
	}
	if r.dirty && !r.force && !r.failing && r.hasAcked && r.want == r.acked {
		r.dirty = false // the pending changes ended where Herdr already is
	}
	if !r.dirty {
		// Everything asked for was delivered, undone or given up.
		r.settledLocked(r.reqGen)
		r.running = false
		return job, 0, false
	}
	now := time.Now()
	at := r.lastStart.Add(r.cfg.MinInterval)
	if r.failing && r.want == r.lastFailed && r.retryAt.After(at) {
		at = r.retryAt // the same state again: back off; a new one goes now
	}
	if d := at.Sub(now); d > 0 {
		return job, d, true
	}
	r.dirty, r.force = false, false
	r.sendGen = r.reqGen
	r.lastStart = now
	return r.want, 0, true
}

// yielded records that the state due to go out was held back (Yield): it
// stays wanted, sent again with the next change or Resync, and nobody
// waits for it meanwhile (the pane shows another's state). done says
// the sender ends; it goes on when a change came in the meantime.
func (r *Reporter) yielded() (done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settledLocked(r.sendGen)
	if r.reqGen > r.sendGen && !r.stopped {
		return false // asked again since: ask Yield again
	}
	r.dirty, r.force = true, true
	r.running = false
	return true
}

func (r *Reporter) send(job stateMsg) {
	r.mu.Lock()
	resume := slices.Clone(r.resumeLocked())
	r.mu.Unlock()
	seq := r.nextSeq()
	err := r.client.ReportAgent(r.sendCtx, AgentReport{
		PaneID: r.cfg.PaneID, Source: r.cfg.Source, Agent: r.cfg.Agent,
		State: job.state, Message: job.message, Seq: seq, ResumeArgv: resume,
	})
	// Log after unlocking: a slow log file must not hold up Report.
	if line := r.settle(job, err); line != "" {
		r.logf("%s", line)
	}
}

// settle records the outcome of one report and returns the line to log, if
// this outcome deserves one.
func (r *Reporter) settle(job stateMsg, err error) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.rejected = nil
		r.stats.Sent++
		r.settledLocked(r.sendGen)
		r.acked, r.hasAcked = job, true
		if r.failing {
			r.failing, r.retryDelay = false, 0
			r.failingSince, r.failErr = time.Time{}, nil
			if !r.recovered {
				r.recovered = true
				return "herdr: reports reach Herdr again"
			}
		}
		return ""
	}
	r.stats.Failed++
	if r.stopped {
		return ""
	}
	var he *Error
	if errors.As(err, &he) {
		r.rejected = err
		r.settledLocked(r.sendGen) // given up: sending it again cannot help
		// Herdr answered: whatever kept it from answering before is over,
		// and Health says it rejects the reports, not that it is away.
		r.failing, r.retryDelay = false, 0
		r.failingSince, r.failErr = time.Time{}, nil
		// Herdr answered and said no: sending the same again cannot help.
		return r.onceLocked(KindOf(err), fmt.Sprintf("herdr: Herdr rejected a report: %v (not retried; further failures of this kind are not logged)", err))
	}
	if !r.failing {
		r.failingSince = r.lastStart // when the unanswered report went out
	}
	r.failErr = err
	r.failing, r.lastFailed, r.dirty, r.lastKind = true, job, true, KindOf(err)
	r.retryDelay = min(max(2*r.retryDelay, r.cfg.RetryMin), r.cfg.RetryMax)
	r.retryAt = time.Now().Add(r.retryDelay)
	return r.onceLocked(KindOf(err), fmt.Sprintf("herdr: cannot report to Herdr: %v (retrying in the background; further failures of this kind are not logged)", err))
}

func (r *Reporter) logOnce(kind FailureKind, format string, args ...any) {
	r.mu.Lock()
	line := r.onceLocked(kind, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	if line != "" {
		r.logf("%s", line)
	}
}

// onceLocked returns line the first time kind is seen, "" after.
func (r *Reporter) onceLocked(kind FailureKind, line string) string {
	if r.logged[kind] {
		return ""
	}
	r.logged[kind] = true
	return line
}
