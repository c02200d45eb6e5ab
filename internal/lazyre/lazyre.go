// Package lazyre compiles a regular expression the first time it is used
// rather than when the program starts.
//
// Every herdr-pi process pays for its package initialisers, and so does
// the session leader each wrapped command runs under. Compiling the
// package-level expressions at start cost ~3 ms of CPU a process
// (`herdr-pi --version`: 20.3 ms before, 17.5 ms after, perf stat), most
// of them for checks the command at hand never makes.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call (panicking,
// as regexp.MustCompile does, when expr is not valid) and returns the
// same *regexp.Regexp on every call.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
