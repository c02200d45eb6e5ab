// Package session reads Pi's session files (JSONL, pi-agent.md §5): it
// finds the file Pi is writing, tails it as Pi appends, keeps the entry
// tree, walks the current branch and applies the :input_needed: rule of the
// sentinel integration: the pane is blocked when the latest assistant text
// ends with the marker on a line of its own and no user message came after
// it (notifications-and-sentinel.md §16, §20). It also says whether the
// branch ends in a retry Pi left pending (see [Tree.RetryPending]), which
// tells a retry the person cancelled from a run that failed when the probe
// is not there to say it.
//
// It reports what the file says through a small interface ([Sink]); it
// knows nothing of the state machine, Herdr or the probe.
package session
