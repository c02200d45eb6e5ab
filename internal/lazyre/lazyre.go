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
	mu.Lock()
	exprs = append(exprs, expr)
	mu.Unlock()
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var (
	mu    sync.Mutex
	exprs []string
)

// Check compiles every expression made with New so far and returns the
// first error. A program's tests call it where every package is linked
// in: an invalid expression that regexp.MustCompile at start would have
// caught is caught there rather than on the rare path that first uses it.
func Check() error {
	mu.Lock()
	defer mu.Unlock()
	for _, e := range exprs {
		if _, err := regexp.Compile(e); err != nil {
			return err
		}
	}
	return nil
}
