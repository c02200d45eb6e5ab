// Package guard keeps a panic in one of the wrapper's own goroutines from
// killing herdr-pi. Only the goroutine that runs wrap has the way out that
// gives the terminal its mode back, removes the run's socket and files and
// releases the pane in Herdr; a panic that escapes any other goroutine ends
// the process at once and skips all of it. Guarded work logs its panic with
// the stack and what it cost, and the rest of the wrapper goes on.
//
// It does not decide what a panic leaves behind: where a recovered panic
// would leave a lock held or a channel nobody reads, the caller repairs it
// (Run says whether f panicked). Nor does it belong on the pty copy loop's
// per-chunk path, which pane/pty guards once around the whole loop.
package guard

import (
	"runtime/debug"
	"sync"
)

// Logf is where a recovered panic is told: the run's log, never the
// agent's terminal.
type Logf = func(format string, args ...any)

// Run runs f and reports whether it panicked. A panic is recovered and
// logged as "<what> panicked (<cost>): <value>" with the stack, so the log
// names the part that failed and what the run lost with it (what carries
// the package's prefix, "herdr: the presence watcher"; cost is a clause,
// "reports go on, a dropped claim is not re-asserted").
func Run(logf Logf, what, cost string, f func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			tell(logf, what, cost, r)
		}
	}()
	f()
	return false
}

// Go runs f under Run on a goroutine wg owns: whoever waits on wg waits
// for it, and a panic in f still counts it done.
func Go(wg *sync.WaitGroup, logf Logf, what, cost string, f func()) {
	wg.Go(func() { Run(logf, what, cost, f) })
}

// Func is f under Run, for callbacks the runtime starts a goroutine for
// (time.AfterFunc, context.AfterFunc), where nothing of ours could catch
// the panic.
func Func(logf Logf, what, cost string, f func()) func() {
	return func() { Run(logf, what, cost, f) }
}

// Recovered logs a panic the caller recovered itself, as Run would: for a
// hot path where Run's closure would cost an allocation a call. Call it
// from the deferred function that recovered, so the stack logged is the
// panic's.
func Recovered(logf Logf, what, cost string, r any) { tell(logf, what, cost, r) }

// tell logs the panic. A log function that panics itself loses the line,
// never the process: it is called inside a deferred recover, where its
// panic would escape.
func tell(logf Logf, what, cost string, r any) {
	if logf == nil {
		return
	}
	defer func() { _ = recover() }()
	logf("%s panicked (%s): %v\n%s", what, cost, r, debug.Stack())
}
