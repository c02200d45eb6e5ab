// Package quietinit keeps Bubble Tea v1's package initialisation from
// querying the terminal. bubbletea's init asks Lip Gloss for the
// terminal's background colour, which makes termenv write an OSC 11 and a
// cursor position request to stdout and wait up to five seconds for the
// answer on it: in herdr-pi, one binary, that would happen on every start
// of every command, `wrap` included, whose passthrough must stay byte for
// byte, and the answer would eat keys typed ahead. termenv asks nothing
// when CI is set, so this package sets it while the packages initialise
// and the picker package, whose init runs after bubbletea's, calls
// Restore. It must import nothing but the standard library: Go
// initialises packages in import-path order among those whose imports are
// done (the spec, since Go 1.21), so with only "os" behind it this package
// is initialised before github.com/muesli/termenv, hence before Lip Gloss
// and Bubble Tea. The picker's tests check, on a real terminal, that a
// binary linking all this writes nothing when it starts.
package quietinit

import "os"

var (
	prev    string
	wasSet  bool
	changed bool
)

func init() {
	prev, wasSet = os.LookupEnv("CI")
	if prev == "" {
		changed = os.Setenv("CI", "herdr-pi-init") == nil
	}
}

// Restore puts CI back as it was. It is for the picker's init only.
func Restore() {
	if !changed {
		return
	}
	changed = false
	if wasSet {
		os.Setenv("CI", prev)
	} else {
		os.Unsetenv("CI")
	}
}
