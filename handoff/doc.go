// Package handoff opens workflow agent attempts in Herdr: where the pane goes
// (a split of the caller's pane, a tab, the run's labelled workspace), what
// it runs (a fork of the attempt's session under `herdr-pi wrap`, written to a
// private command file), and how it ends (Herdr's pane events). It undoes
// exactly what it created when a step fails.
//
// The workflow store itself is handoff/store (read-only). handoff talks to
// Herdr through the small Herdr interface it owns; it never reads settings
// files or flags: the command line decides and hands it plain values.
package handoff
