package state

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// boomClock is the real clock (synctest's, in a bubble) whose Now panics
// once when armed: the machine reads it under its lock in every step, so
// the panic lands where a bug in the machine's own logic would.
type boomClock struct{ armed atomic.Bool }

func (c *boomClock) Now() time.Time {
	if c.armed.CompareAndSwap(true, false) {
		panic("clock boom")
	}
	return time.Now()
}

func (c *boomClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// A panic in the step a debounce timer fires — in the machine itself, its
// lock held, or in the Sink — runs on the timer's goroutine, where nothing
// of the wrapper's can catch it; escaping, it killed the wrapper with the
// terminal raw (the test binary dies instead of failing here). It is
// logged with what it cost, and the machine goes on: not left locked,
// later inputs still move it, Stop still returns.
func TestATimerPanicStaysInTheMachine(t *testing.T) {
	for where, boom := range map[string]string{"machine": "clock boom", "sink": "sink boom"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var logs []string
				var sinkBoom atomic.Bool
				clock := &boomClock{}
				r := &recorder{start: time.Now()}
				m := New(Config{Debounce: 300 * time.Millisecond, Clock: clock,
					Sink: func(e Event) {
						if sinkBoom.CompareAndSwap(true, false) {
							panic("sink boom")
						}
						r.sink(e)
					},
					Logf: func(f string, a ...any) {
						mu.Lock()
						logs = append(logs, fmt.Sprintf(f, a...))
						mu.Unlock()
					}})
				// The first timer (the screen held still for the debounce)
				// is the one that panics.
				if where == "machine" {
					clock.armed.Store(true)
				} else {
					sinkBoom.Store(true)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				// Asked, not waited on: a lock left held would hang the test
				// (a mutex is not a wait synctest sees through).
				// (Stop is not deferred: it too would wait for that lock.)
				if !m.mu.TryLock() {
					t.Fatal("the machine's lock is still held after the panic: every later input would wait for ever")
				}
				m.mu.Unlock()
				m.Open(Reason{Key: "ask", Kind: KindAsk, Label: "asks"})
				synctest.Wait()
				if s := m.Snapshot(); s.State != Blocked {
					t.Errorf("after the panic the machine is %s, want blocked: it no longer moves", s.State)
				}
				m.Stop()
				mu.Lock()
				defer mu.Unlock()
				if all := strings.Join(logs, "\n"); !strings.Contains(all, "state: a debounce timer's step panicked") ||
					!strings.Contains(all, boom) {
					t.Errorf("no log line for the panic; logs:\n%s", all)
				}
			})
		})
	}
}
