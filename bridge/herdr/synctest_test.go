package herdr_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// TestPacingAndBackOffInFakeTime runs the Reporter with its real defaults
// (100 ms between reports, back-off from 1 s doubling to 30 s) in a
// testing/synctest bubble, talking to the fake through in-memory pipes, so
// minutes of back-off take no wall time.
func TestPacingAndBackOffInFakeTime(t *testing.T) {
	s := herdrtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		r := herdr.NewReporter(herdr.ReporterConfig{
			Client: &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial},
			PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi",
		})
		defer r.Close()
		start := time.Now()
		since := func(q herdrtest.Request) time.Duration { return q.At.Sub(start).Round(time.Millisecond) }

		// Pacing: three changes 10 ms apart leave as two reports, 100 ms apart.
		r.Report("working", "")
		time.Sleep(10 * time.Millisecond)
		r.Report("idle", "")
		time.Sleep(10 * time.Millisecond)
		r.Report("blocked", "")
		time.Sleep(time.Second)
		synctest.Wait()
		reqs := s.Requests()
		if len(reqs) != 2 || since(reqs[0]) != 0 || since(reqs[1]) != 100*time.Millisecond {
			t.Fatalf("reports at %v, want at 0s and 100ms", times(reqs, since))
		}

		// Back-off: a Herdr answering garbage gets the current state again
		// after 1 s, 2 s, 4 s, … capped at 30 s, two attempts each.
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage})
		start = time.Now()
		r.Report("working", "")
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		reqs = s.Requests()[2:]
		var got []time.Duration
		for i := 0; i < len(reqs); i += 2 {
			got = append(got, since(reqs[i]))
			if i+1 < len(reqs) && since(reqs[i+1]) != since(reqs[i]) {
				t.Errorf("second attempt at %v, first at %v", since(reqs[i+1]), since(reqs[i]))
			}
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second, 61 * time.Second, 91 * time.Second}
		if len(got) != len(want) {
			t.Fatalf("attempts at %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("attempts at %v, want %v", got, want)
			}
		}
		// Herdr answers again: the next retry delivers, then all is quiet.
		s.SetFault(herdrtest.Fault{})
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if st := s.Pane(s.PaneID()); st.Status != "working" {
			t.Errorf("pane %q after recovery", st.Status)
		}
		n := len(s.Requests())
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if len(s.Requests()) != n {
			t.Errorf("%d requests after delivery", len(s.Requests())-n)
		}
		if err := r.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func times(reqs []herdrtest.Request, since func(herdrtest.Request) time.Duration) []time.Duration {
	var out []time.Duration
	for _, q := range reqs {
		out = append(out, since(q))
	}
	return out
}

// TestResyncCutsTheBackOffShort: after minutes of failures the Reporter
// waits 30 s between attempts; Resync (Herdr is known to answer again)
// sends the state at once instead.
func TestResyncCutsTheBackOffShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		defer r.Close()
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage})
		r.Report("blocked", "")
		// Attempts at 0, 1, 3, 7, 15, 31, 61, 91, 121 and 151 s: the
		// back-off is at its 30 s cap.
		time.Sleep(125 * time.Second)
		synctest.Wait()
		s.SetFault(herdrtest.Fault{})
		time.Sleep(time.Second) // inside the back-off: nothing is sent
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st == "blocked" {
			t.Fatalf("the state went out inside the back-off; the test proves nothing")
		}
		resynced := time.Now()
		r.Resync()
		time.Sleep(time.Second)
		synctest.Wait()
		reps := s.Reports(s.PaneID())
		if len(reps) == 0 {
			t.Fatal("nothing reported in the second after Resync")
		}
		if last := reps[len(reps)-1]; last.State != "blocked" || !last.Accepted || last.At.Sub(resynced) > 100*time.Millisecond {
			t.Errorf("last report %+v at +%v after Resync, want blocked at once (at the next pacing slot)", last, last.At.Sub(resynced))
		}
		// A new failure starts the back-off over from 1 s.
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage})
		r.Report("idle", "")
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		var idle []time.Duration
		for _, q := range s.Requests() {
			if q.At.After(resynced) && strings.Contains(q.Line, `"idle"`) {
				idle = append(idle, q.At.Sub(resynced))
			}
		}
		if len(idle) != 4 { // two attempts at once, two more 1 s later
			t.Errorf("idle attempts at %v, want two at once and two 1s later", idle)
		}
	})
}
