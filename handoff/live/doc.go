// Package live runs the live handoffs of a workflow owner's wrapper. The
// owner is a Pi running the workflow engine under `herdr-pi wrap`; its
// probe describes each launch as data over the owner link
// (bridge/control). Given that description, live writes the launch's
// files into the wrapper's private directory, serves the attempt's custom
// tools over a tool bridge (bridge/tools) that runs them in the owner,
// opens a Herdr pane and starts the attempt there under `herdr-pi wrap`,
// follows the pane through Herdr's events, and hands the attempt back
// when the pane's Pi exits, the pane closes, or the Pi goes idle after
// working — cleaning up on every path and telling the owner why.
//
// [Service] is the wrapper's end: it hears the owner link (menu requests,
// cancellations, the owner's going away) and carries out `herdr-pi open`'s
// handoff requests, streaming their progress. What it opens is written to
// the ledger (handoff.Ledger) so `herdr-pi close` can close it.
//
// It decides nothing about the session itself: the owner's probe cuts the
// turn, suspends and resumes the local session, and decides whether to
// continue it.
package live
