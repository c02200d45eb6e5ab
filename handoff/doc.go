// Package handoff will hold workflow runs and attempts on disk, the owner
// lease, pane placement and the handback monitor behind `herdr-pi open`.
// It is empty in this release.
package handoff
