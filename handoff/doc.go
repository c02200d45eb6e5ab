// Package handoff will hold pane placement, launching and the handback
// monitor behind `herdr-pi open`. Its subpackage handoff/store already
// reads workflow runs, attempts and owner leases from the engine's store
// (read-only); the rest is not built yet.
package handoff
