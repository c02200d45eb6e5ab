package commands

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/settings"
)

// releaseBudget bounds how long wrap's exit waits to give the pane back: a
// report in flight gets its grace, then the release its two attempts
// (500 ms and 1500 ms, herdr-socket-api.md §1.4). Only a Herdr that does
// not answer makes the exit wait that long.
const releaseBudget = 2500 * time.Millisecond

// startHerdrReporting connects wrap to Herdr. Inside a complete Herdr
// environment (settings.HerdrEnv) it claims the pane for the agent with
// state "unknown" and returns report, which hands a new state to the
// Reporter without ever waiting, and stop, which releases the pane (bounded
// by releaseBudget) and may be called more than once. Outside Herdr both do
// nothing and nothing is sent.
//
// The caller defers stop right away, so the release runs on every way out
// of wrap that runs code: the child exiting or being killed, our own
// SIGTERM/SIGHUP/SIGINT (pane/pty forwards them and returns once the child
// is gone), and panics unwinding through wrap. The Reporter's goroutine is
// owned by it and ends in stop.
//
// health says in a sentence how Herdr takes the reports ("" outside
// Herdr), for `herdr-pi status`.
func startHerdrReporting(env settings.Env, cfg settings.Config, agent string, logf func(string, ...any)) (report func(state, message string), stop func(), health func() string) {
	h, ok := settings.HerdrEnv(env)
	if !ok {
		if missing := settings.MissingHerdr(env); env.Get("HERDR_ENV") != "" || env.Get("HERDR_SOCKET_PATH") != "" || env.Get("HERDR_PANE_ID") != "" {
			logf("herdr: incomplete Herdr environment (missing %s): not reporting", strings.Join(missing, ", "))
		}
		return func(string, string) {}, func() {}, func() string { return "" }
	}
	if agent == "" {
		agent = cfg.Herdr.Agent
	}
	client := herdr.NewClient(h.SocketPath)
	r := herdr.NewReporter(herdr.ReporterConfig{
		Client: client,
		PaneID: h.PaneID, Source: cfg.Herdr.Source, Agent: agent,
		Logf: logf,
	})
	logf("herdr: reporting pane %s to %s as %s (agent %q)", h.PaneID, h.SocketPath, cfg.Herdr.Source, agent)
	r.Report(herdr.StateUnknown, "")

	// Herdr keeps a custom source's state only in memory: after a restart or
	// a live handoff the pane reads unknown until the next change, which may
	// be long in coming. The event stream ends on both, so when it comes
	// back the current state is sent again. The watcher's goroutine is
	// owned here and ends in stop, before the release.
	watchCtx, cancelWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	w := &herdr.Watcher{
		Client:        client,
		Subscriptions: []herdr.Subscription{{Type: "pane.agent_status_changed", PaneID: h.PaneID}},
		// No Logf: a Herdr that cannot be reached is already logged by the
		// reporter, once per kind of failure.
		OnConnect: func(reconnect bool) {
			if reconnect {
				logf("herdr: the event stream is back (Herdr restarted or handed off): reporting the state again")
				r.Resync()
			}
		},
	}
	go func() {
		defer close(watchDone)
		if err := w.Run(watchCtx, func(herdr.Event) {}); err != nil && watchCtx.Err() == nil {
			logf("herdr: stopped watching pane %s: %v", h.PaneID, err)
		}
	}()

	// Herdr answers ok even when it ignores a report (another source owns
	// the pane, or a plain pi exited in it: herdr-socket-api.md §6.2), so
	// the claim is read back once. The goroutine is owned here too.
	var healthNote atomic.Value
	healthNote.Store(fmt.Sprintf("reporting to pane %s as %s (agent %q)", h.PaneID, cfg.Herdr.Source, agent))
	checkDone := make(chan struct{})
	go func() {
		defer close(checkDone)
		if note := checkClaim(watchCtx, client, r, h.PaneID, agent); note != "" {
			logf("herdr: %s", note)
			healthNote.Store(note)
		}
	}()
	health = func() string { return healthNote.Load().(string) }

	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancelWatch()
			<-watchDone
			<-checkDone
			ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
			defer cancel()
			start := time.Now()
			if err := r.Release(ctx); err == nil {
				st := r.Stats()
				logf("herdr: released pane %s after %d reports (%d failed) in %v", h.PaneID, st.Sent, st.Failed, time.Since(start).Round(time.Millisecond))
			}
		})
	}
	return r.Report, stop, health
}

// checkClaim waits for Herdr's first answer to a report, then reads the
// pane back: when Herdr shows another agent (or none) for it, the reports
// are being dropped silently, and the returned sentence says so and why
// that happens.
func checkClaim(ctx context.Context, c *herdr.Client, r *herdr.Reporter, paneID, agent string) string {
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for r.Stats().Sent == 0 {
		select {
		case <-ctx.Done():
			return ""
		case <-deadline.C:
			return "" // Herdr does not answer: the reporter logs that
		case <-poll.C:
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	p, err := c.PaneGet(pctx, paneID)
	if err != nil || strings.EqualFold(strings.TrimSpace(p.Agent), strings.TrimSpace(agent)) {
		return ""
	}
	shown := "no agent"
	if p.Agent != "" {
		shown = fmt.Sprintf("agent %q", p.Agent)
	}
	return fmt.Sprintf("Herdr ignores herdr-pi's reports for pane %s: it shows %s (status %s), not %q. "+
		"Another integration may own the pane, or a plain %s exited in it earlier (Herdr then drops reports "+
		"labelled %q until it sees a new one); open a new pane, or see docs/herdr-setup.md §5",
		paneID, shown, p.AgentStatus, agent, agent, agent)
}
