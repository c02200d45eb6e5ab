package commands

import (
	"context"
	"strings"
	"sync"
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
func startHerdrReporting(env settings.Env, cfg settings.Config, agent string, logf func(string, ...any)) (report func(state, message string), stop func()) {
	h, ok := settings.HerdrEnv(env)
	if !ok {
		if missing := settings.MissingHerdr(env); env.Get("HERDR_ENV") != "" || env.Get("HERDR_SOCKET_PATH") != "" || env.Get("HERDR_PANE_ID") != "" {
			logf("herdr: incomplete Herdr environment (missing %s): not reporting", strings.Join(missing, ", "))
		}
		return func(string, string) {}, func() {}
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

	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancelWatch()
			<-watchDone
			ctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
			defer cancel()
			start := time.Now()
			if err := r.Release(ctx); err == nil {
				st := r.Stats()
				logf("herdr: released pane %s after %d reports (%d failed) in %v", h.PaneID, st.Sent, st.Failed, time.Since(start).Round(time.Millisecond))
			}
		})
	}
	return r.Report, stop
}
