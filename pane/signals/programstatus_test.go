package signals

import (
	"sync/atomic"
	"testing"
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
