// Package owner tests herdr-pi's side of a workflow owner against the real
// workflow engine (pi-extensible-workflows 5.7.0) in a real Pi 1.6.0: the
// probe's registration, its attempt actions in the /workflow menu, and the
// owner link of a live handoff, with a control server standing in for the
// wrapper.
package owner
