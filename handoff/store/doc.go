// Package store reads the workflow engine's run store (pi-extensible-workflows
// 5.7.0, $HOME/.pi/workflows/projects/*/sessions/*/runs/<id>): it finds a run
// by id or unique prefix, decodes its state.json tolerantly, picks an agent
// attempt, and tells whether that attempt is settled or still owned by a
// live Pi (the owner.json lease).
//
// It only reads. The engine owns the store and rewrites it atomically while
// a run is live; this package never creates, renames or deletes anything in
// it (unlike the engine's own listing, which sweeps stale temp directories).
// Facts about the layout and the records come from
// ../shared/reference/workflows-handoff.md (§1, §2 and its "Measured on a
// real store" section).
package store
