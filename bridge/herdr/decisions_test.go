package herdr_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// These pin decisions of the Reporter that no other test could fail on
// (found by hand mutation); each says what the person would see.

// A report that failed backs off only itself: a new state goes at the
// next pacing slot. And should the failed report have landed after all
// (Herdr applied it, then the connection broke before the reply), going
// back to the state Herdr acknowledged last is sent too: Herdr may show
// the failed one.
func TestANewStateDoesNotWaitOutTheBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		defer r.Close()
		r.Report("idle", "")
		r.Report("idle", "") // the same again: not a request
		time.Sleep(time.Second)
		synctest.Wait()
		if st := r.Stats(); st.Requested != 1 || st.Sent != 1 {
			t.Fatalf("stats %+v, want one request, sent once", st)
		}

		// Garbage to both attempts: working fails and backs off 1 s.
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage, Methods: []string{"pane.report_agent"}, Count: 2})
		r.Report("working", "")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		r.Report("blocked", "")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "blocked" {
			t.Fatalf("pane %q 200ms after a new state, want blocked (a new state does not wait out the back-off)", st)
		}

		// Herdr applies working and breaks both replies: the Reporter takes
		// it as failed, and Herdr shows working.
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultCloseMidLine, Methods: []string{"pane.report_agent"}, Count: 2})
		r.Report("working", "")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "working" {
			t.Fatalf("pane %q; the fake did not apply the report, the test proves nothing", st)
		}
		r.Report("blocked", "") // what Herdr acknowledged last
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "blocked" {
			t.Fatalf("pane %q, want blocked: a failed report may have landed", st)
		}
	})
}

// Once Herdr answers again the back-off is forgotten: a later failure
// is retried after RetryMin, not after the doubled delay of the outage
// before.
func TestBackOffStartsOverAfterADelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		defer r.Close()
		// Attempts at 0 s and 1 s fail (two tries each); 3 s delivers.
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage, Methods: []string{"pane.report_agent"}, Count: 4})
		r.Report("working", "")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "working" {
			t.Fatalf("pane %q after the outage", st)
		}
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage, Methods: []string{"pane.report_agent"}, Count: 2})
		failed := time.Now()
		r.Report("idle", "")
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "idle" {
			t.Fatalf("pane %q %v after a fresh failure, want idle (retried after 1s)", st, time.Since(failed))
		}
	})
}
