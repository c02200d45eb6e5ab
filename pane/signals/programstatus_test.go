package signals

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// pokeCounter is a real session watcher that counts the looks it is asked
// for.
type pokeCounter struct {
	*session.Watcher
	pokes atomic.Int32
}

func (p *pokeCounter) Poke() {
	p.pokes.Add(1)
	p.Watcher.Poke()
}

// Pi's status reports reach the machine, and a report that may end a run
// asks the session watcher for a look now: the reply is in the file
// already, and the machine holds the run's idle only for the debounce.
func TestProgramStatusAsksForTheSessionFile(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	w := &pokeCounter{Watcher: session.Watch(session.WatchConfig{Sink: r.s, Interval: time.Hour})}
	defer w.Close()
	r.s.SetWatcher(w)
	for _, c := range []struct {
		st    string
		pokes int32
	}{{"idle", 1}, {"working", 1}, {"blocked", 1}, {"working", 1}, {"done", 2}, {"working", 2}, {"error", 3}, {"clear", 3}} {
		r.s.ProgramStatus(state.ProgramStatus{State: c.st, App: "pi"})
		if got := w.pokes.Load(); got != c.pokes {
			t.Fatalf("after %s: %d looks asked for, want %d", c.st, got, c.pokes)
		}
	}
	// Pi's dialog told the person; clear (Pi stopped) leaves the screen to
	// decide, which has seen nothing yet: idle.
	r.expect(t, "idle working blocked(waiting for input) working idle", "input-needed")
}

// Without the probe, what the person hears of a run's end comes from Pi's
// status channel, wired as wrap wires it: a run that ends done is
// "finished", one that ends in an error is "failed" and names it. A reply
// that asks for input also reads done on the channel; the session file
// opens its sentinel within the debounce the run's idle is held, and the
// person hears only that Pi needs input.
func TestNoProbeRunEndsAreTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		r.s.ProgramStatus(state.ProgramStatus{State: "idle", App: "pi"})
		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle", "finished")

		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "error", App: "pi", Message: "429 Too Many Requests"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle working idle", "finished,failed[429 Too Many Requests]")

		r.s.ProgramStatus(state.ProgramStatus{State: "working", App: "pi"})
		time.Sleep(time.Second)
		r.s.ProgramStatus(state.ProgramStatus{State: "done", App: "pi"})
		time.Sleep(100 * time.Millisecond)
		r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1"})
		time.Sleep(time.Second)
		r.expect(t, "idle working idle working idle working blocked(input needed)", "finished,failed[429 Too Many Requests],input-needed")
		if len(r.runs) != 3 {
			t.Fatalf("runs %v: the machine did not tell the third run's end", r.runs)
		}
	})
}
