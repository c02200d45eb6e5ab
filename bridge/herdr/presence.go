package herdr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// ReleaseBudget bounds how long [Presence.Close] waits to give the pane
// back: a report in flight gets its grace, then the release its two
// attempts (500 ms and 1500 ms, herdr-socket-api.md §1.4). Only a Herdr that
// does not answer makes Close wait that long.
const ReleaseBudget = 2500 * time.Millisecond

// reconnectMax bounds the wait between two attempts to reopen the event
// stream. The stream coming back is how a Presence learns that Herdr
// answers again after an outage, and the state that changed meanwhile goes
// out then, so this bounds how late it arrives whatever the outage's
// length (the reporter's own back-off grows to 30 s). An attempt on a dead
// socket is one failed connect; on a hung Herdr one waits 2 s anyway.
const reconnectMax = 500 * time.Millisecond

// PresenceConfig says which pane a [Presence] speaks for.
type PresenceConfig struct {
	Client *Client
	PaneID string
	// Source is the reporting source, e.g. "custom:herdr-pi".
	Source string
	// Agent is the agent label Herdr shows for the pane, e.g. "pi".
	Agent string
	// Logf receives diagnostics; it must not write to the agent's
	// terminal. Nil discards.
	Logf func(format string, args ...any)
	// Others says which other herdr-pi wrappers run in the pane, as the
	// pane's registry has them. Nil, or an answer that does not know
	// this wrapper (one without its control socket is not registered),
	// leaves every wrapper of the pane reporting.
	Others func() PaneWrappers
	// AwaitEnd returns once the process pid has ended, or ctx has (at
	// once when it cannot follow pid). Nil: a wrapper that stands aside
	// hears that the one holding the pane ended only from the pane's
	// next change or its own.
	AwaitEnd func(ctx context.Context, pid int)
}

// Presence is one pane's presence in Herdr for the life of a wrapper: it
// claims the pane (state "unknown"), keeps Herdr showing the state it is
// handed (a [Reporter]), sends that state again when Herdr may have lost it
// (the event stream ends on a restart or a live handoff, §9.1) and, after
// an outage of any length, within a second of Herdr answering again (the
// stream is retried at least every reconnectMax). It asks Herdr's protocol
// each time the stream starts, and from protocol 22 on sends the resume
// command with every report. It reads the pane back whenever what Herdr
// shows disagrees with what it acknowledged, and at each start of the
// stream (events may have been missed): when Herdr ignores the claim
// (§6.2) Health says so, and when Herdr's own detection dropped or cleared
// the report (herdr#4020) the state is reported again once the pane shows
// no other agent, and Health and Reasserts say so. While a newer herdr-pi
// wrapper of the pane holds it (PresenceConfig.Others) it stands aside: it
// sends nothing, Health names that wrapper, and its state goes again once
// that one has ended (sharing.go). It releases the pane at the end, unless
// another wrapper holds it then.
//
// Every method may be called from any goroutine and none of them waits for
// Herdr, except Close (bounded by ReleaseBudget) and Reported (bounded by
// its ctx). A nil *Presence stands for a pane outside Herdr: its methods do
// nothing.
type Presence struct {
	cfg  PresenceConfig
	r    *Reporter
	note atomic.Value // string: what Health says

	// ctx ends with stop, when Close begins; wg waits for the watcher and
	// for a delayed re-assert, both owned by the Presence.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// reviewMu makes reviews of the pane one at a time (the watcher's, a
	// delayed re-assert's, and the return from standing aside).
	reviewMu sync.Mutex
	mu       sync.Mutex
	claim    claimState
	closed   bool
	// away is since when Herdr's event stream has been down, and why; a
	// zero since means the stream is up. Health leads with it: while
	// Herdr cannot be reached, "reporting to pane …" would not be true.
	away struct {
		since time.Time
		err   error
	}

	closeOnce sync.Once
	closeErr  error
	// started is set by Start; early is the newest state reported before
	// it, which Start sends after the claim.
	started bool
	early   *stateMsg
	// held is the state the agent is in while the wrapper is stopped by
	// job control (see Suspend); nil while it runs.
	held *stateMsg
}

// StartPresence claims the pane and starts following Herdr: NewPresence
// and Start in one. The caller owns the returned Presence and must Close
// it on every way out (defer it right away: a panic unwinding through the
// caller then still releases).
func StartPresence(cfg PresenceConfig) *Presence {
	p := NewPresence(cfg)
	p.Start()
	return p
}

// NewPresence makes a pane's Presence without telling Herdr anything yet:
// states reported before Start wait for it. A wrapper registers in the
// pane's registry between the two, so that the wrapper it replaces there
// already knows who claims the pane when the claim arrives. The caller
// owns it and must Close it, started or not.
func NewPresence(cfg PresenceConfig) *Presence {
	p := &Presence{cfg: cfg}
	p.r = NewReporter(ReporterConfig{
		Client: cfg.Client, PaneID: cfg.PaneID, Source: cfg.Source, Agent: cfg.Agent, Logf: cfg.Logf,
		Yield: p.yield,
	})
	p.note.Store(p.baseNoteLocked()) // nobody else has p yet
	p.ctx, p.stop = context.WithCancel(context.Background())
	return p
}

// Start claims the pane (state unknown, then whatever was reported
// before) and starts following Herdr's events. Only the first call
// does anything; so does none on a closed Presence.
func (p *Presence) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.started || p.closed {
		p.mu.Unlock()
		return
	}
	p.started = true
	// The claim goes to the Reporter before p.mu lets a state reported
	// from now on through (Report holds it too): a state reported while
	// the pane is claimed (a hook's wait, which reaches this wrapper as
	// soon as it is in the pane's registry) comes after the claim's
	// "unknown", never before it and so replaced by it.
	p.r.Report(StateUnknown, "")
	if p.early != nil {
		p.r.Report(p.early.state, p.early.message)
		p.early = nil
	}
	p.mu.Unlock()
	p.logf("herdr: reporting pane %s to %s as %s (agent %q)", p.cfg.PaneID, p.cfg.Client.Socket, p.cfg.Source, p.cfg.Agent)
	// A panic following Herdr's events (a bug in a review, say) ends the
	// following, not the wrapper: reports go on and Close still releases
	// the pane. wg counts it done either way.
	guard.Go(&p.wg, p.logf, "herdr: the presence watcher", "Herdr's events are no longer followed in this run: reports go on, a dropped claim is not re-asserted", func() { p.watch(p.ctx) })
}

// SetResumeArgv sets the command that restores the agent after Herdr
// restarts, e.g. herdr-pi wrap pi --session <file> (see
// [Reporter.SetResumeArgv]); it never waits.
func (p *Presence) SetResumeArgv(argv []string) {
	if p != nil {
		p.r.SetResumeArgv(argv)
	}
}

// Report hands Herdr a new state (see [Reporter.Report]); it never waits.
func (p *Presence) Report(state, message string) {
	if p == nil {
		return
	}
	// Held across the Reporter's Report (which never waits), so that no
	// state passes Start's claim (see Start).
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		p.early = &stateMsg{state, message}
		return
	}
	if p.held != nil {
		p.held = &stateMsg{state, message}
		return
	}
	p.r.Report(state, message)
}

// Resync sends the current state again (see [Reporter.Resync]).
func (p *Presence) Resync() {
	if p != nil {
		p.r.Resync()
	}
}

// Reported returns once every state handed to Report before the call has
// reached Herdr or been given up, or when ctx ends (see
// [Reporter.Reported]); a nil Presence and one that is closing return nil
// at once. A notifier calls it before a Herdr toast about the agent's
// state, so Herdr never says "needs your input" while it still shows the
// pane idle.
func (p *Presence) Reported(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.r.Reported(ctx)
}

// Health says in a sentence how Herdr takes the reports, for `herdr-pi
// status`: while Herdr cannot be reached (the event stream is down, or
// reports fail), since when and why; while it rejects them, its answer;
// "" for a nil Presence.
func (p *Presence) Health() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	since, err := p.away.since, p.away.err
	p.mu.Unlock()
	// A hung Herdr may keep the event stream it opened while every report
	// times out: the reports' failure counts as well, the older one first.
	fs, ferr, rejected := p.r.failure()
	if !fs.IsZero() && (since.IsZero() || fs.Before(since)) {
		since, err = fs, ferr
	}
	switch {
	case since.IsZero() && rejected != nil:
		return "Herdr rejects the reports: " + rejected.Error()
	case since.IsZero():
		return p.note.Load().(string)
	}
	return fmt.Sprintf("not reaching Herdr since %s: %v; the state goes to pane %s as %s (agent %q) within a second of Herdr answering again",
		since.Format(time.TimeOnly), err, p.cfg.PaneID, p.cfg.Source, p.cfg.Agent)
}

// wentAway records that Herdr's event stream could not be opened or
// broke: Herdr is away from the first such failure until the stream is
// back.
func (p *Presence) wentAway(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.away.since.IsZero() {
		p.away.since = time.Now()
	}
	p.away.err = err
}

// cameBack records that Herdr acknowledged the event stream.
func (p *Presence) cameBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.away.since, p.away.err = time.Time{}, nil
}

// Delivered reports whether Herdr took any report of this Presence so far;
// false for a nil Presence. A wrapper that ends with none delivered and
// the release failed too has shown the pane nothing, and says so.
func (p *Presence) Delivered() bool {
	return p != nil && p.r.Stats().Sent > 0
}

// Close releases the pane, bounded by ctx and by ReleaseBudget, and stops
// following Herdr. States reported after Close has begun are dropped. It
// may be called more than once, from any goroutine: every call returns
// once the first has finished, with its result.
func (p *Presence) Close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.closeOnce.Do(func() {
		// The release comes first: from here on the Reporter takes no new
		// state (whatever the other parts say while they close is not the
		// agent's state), and the watcher and any re-assert end meanwhile.
		p.mu.Lock()
		p.closed = true
		if p.claim.retry != nil {
			p.claim.retry.Stop()
		}
		p.mu.Unlock()
		p.stop()
		if h, ok := p.holder(); ok {
			// The pane is that wrapper's: a release (same source, same
			// agent) would clear its state from the pane.
			p.r.Close()
			p.logf("herdr: leaving pane %s to the herdr-pi wrapper pid %d, which holds it: not released", p.cfg.PaneID, h.PID)
			p.wg.Wait()
			return
		}
		ctx, cancel := context.WithTimeout(ctx, ReleaseBudget)
		defer cancel()
		start := time.Now()
		p.closeErr = p.r.Release(ctx)
		if p.closeErr == nil {
			st := p.r.Stats()
			p.logf("herdr: released pane %s after %d reports (%d failed) in %v", p.cfg.PaneID, st.Sent, st.Failed, time.Since(start).Round(time.Millisecond))
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// watch follows the pane's event stream until ctx ends. Herdr keeps a
// custom source's state only in memory: after a restart or a live handoff
// the pane reads unknown until the next change, which may be long in
// coming. The stream ends on both, so when it is back the state is sent
// again. Each start of the stream also asks Herdr's protocol (an upgrade
// may come with a restart) and reads the pane back.
func (p *Presence) watch(ctx context.Context) {
	w := &Watcher{
		Client:        p.cfg.Client,
		Subscriptions: []Subscription{{Type: "pane.agent_status_changed", PaneID: p.cfg.PaneID}},
		// No Logf: a Herdr that cannot be reached is already logged by the
		// reporter, once per kind of failure.
		OnConnect: func(again bool) {
			p.cameBack()
			p.learnProtocol(ctx)
			if again {
				p.logf("herdr: the event stream is back (Herdr restarted or handed off): reporting the state again")
				p.r.Resync()
			} else {
				p.r.answered() // Herdr was away when we started, maybe
			}
			p.review(ctx)
		},
		// Herdr still has the state; only what it showed meanwhile went
		// unseen, so the pane is read back.
		OnLost:     func() { p.review(ctx) },
		OnDown:     p.wentAway,
		BackoffMax: reconnectMax,
	}
	if err := w.Run(ctx, func(ev Event) { p.onEvent(ctx, ev) }); err != nil && ctx.Err() == nil {
		p.logf("herdr: stopped watching pane %s: %v", p.cfg.PaneID, err)
	}
}

// learnProtocol asks Herdr's protocol for the reports' resume command.
func (p *Presence) learnProtocol(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pong, err := p.cfg.Client.Ping(ctx)
	var pm *ProtocolMismatchError
	if err != nil && !errors.As(err, &pm) {
		return
	}
	p.mu.Lock()
	changed := p.claim.protocol != pong.Protocol
	p.claim.protocol = pong.Protocol
	p.mu.Unlock()
	if changed {
		p.logf("herdr: Herdr %s speaks protocol %d", Shown(pong.Version), pong.Protocol)
	}
	p.r.SetProtocol(pong.Protocol)
}

// logf logs through the configured function; one that panics loses its
// line, never the Presence.
func (p *Presence) logf(format string, args ...any) {
	if p.cfg.Logf == nil {
		return
	}
	defer func() { _ = recover() }()
	p.cfg.Logf(format, args...)
}
