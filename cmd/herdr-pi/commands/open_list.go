package commands

import (
	"context"

	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// openListRun is `open --list [<run>]`.
func openListRun(f *Factory, st *store.Store, opts *openOptions) error {
	return notBuilt(f.IO, "open --list", "listing is not built yet")
}

// openPick asks the person, on a terminal, which attempt to open.
func openPick(ctx context.Context, f *Factory, st *store.Store) (run, attempt string, err error) {
	return "", "", usagef("open", "name a run and an attempt (herdr-pi open --list shows them)")
}
