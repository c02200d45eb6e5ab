// Package control is the wrapper's private control socket: a unix socket in
// a per-run 0700 directory, 0600, answering only peers of our own uid that
// present the run's random token. The Pi probe sends what it hears inside
// Pi (lifecycle and bus events) and `herdr-pi waiting|status` send requests;
// both arrive decoded into typed Go values at small interfaces the wrapper
// implements ([EventSink], [Requests]).
//
// In a workflow owner (a Pi running the workflow engine) the probe also
// opens the owner link (owner.go): the live handoff's conversation, both
// ways — orders, the launch description, bridged tool calls, handback —
// with [OwnerLink] the wrapper's end and [OwnerSink] what it hears unasked.
//
// A per-pane registry file lets commands run by Herdr pane hooks, outside
// the wrapped child's environment, find the wrapper of their pane.
//
// It decides nothing about state: it validates, decodes and delivers (a
// channel event the probe numbered, once: see Server.deliverProbeEvent).
package control
