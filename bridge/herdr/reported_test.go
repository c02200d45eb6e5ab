package herdr_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// startInBubble starts a Presence on a fake served inside the bubble and
// lets a second pass, so its claim has been answered and the tests below
// see only their own reports.
func startInBubble(t *testing.T, s *herdrtest.Server, log *logSink) *herdr.Presence {
	t.Helper()
	p := herdr.StartPresence(inMemory(presenceConfig(s, log), s))
	t.Cleanup(func() { p.Close(context.Background()) })
	time.Sleep(time.Second)
	synctest.Wait()
	return p
}

// lastReport is the newest pane.report_agent the fake got, "" for none.
func lastReport(s *herdrtest.Server) string {
	reps := s.Reports(s.PaneID())
	if len(reps) == 0 {
		return ""
	}
	return reps[len(reps)-1].State
}

// Report first, then toast: Reported returns only after Herdr answered
// the report handed over before it, and Report never waits meanwhile.
func TestReportedReturnsOnceHerdrAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := startInBubble(t, s, nil)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 300 * time.Millisecond, Methods: []string{"pane.report_agent"}})
		start := time.Now()
		p.Report("blocked", "approve rm")
		returned := make(chan error, 1)
		go func() { returned <- p.Reported(context.Background()) }()

		synctest.Wait() // the report is with Herdr, which takes 300 ms
		if st := s.Pane(s.PaneID()).Status; st == "blocked" {
			t.Fatalf("Herdr shows blocked before its delay; the test proves nothing")
		}
		select {
		case err := <-returned:
			t.Fatalf("Reported returned (%v) while Herdr had not answered", err)
		default:
		}
		// Report is not held up by the waiting barrier.
		for i := 0; i < 1000; i++ {
			p.Report("blocked", "approve rm")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Report calls took %v of the fake clock while a report was in flight", d)
		}

		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		if st := s.Pane(s.PaneID()).Status; st != "blocked" {
			t.Errorf("Reported returned with the pane %q", st)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			for _, q := range s.Requests() {
				t.Logf("%v %s", q.At.Sub(start), q.Method)
			}
			t.Errorf("Reported returned after %v, want when Herdr answered (300ms)", d)
		}
		// Nothing pending: it returns at once.
		now := time.Now()
		if err := p.Reported(context.Background()); err != nil || time.Since(now) != 0 {
			t.Errorf("with nothing pending Reported took %v: %v", time.Since(now), err)
		}
	})
}

// A state replaced before it left counts as settled once the newer state
// is delivered: the barrier waits for what Herdr will show.
func TestReportedWaitsForTheNewestState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := startInBubble(t, s, nil)
		p.Report("working", "")
		// Herdr has working before the test goes on: the sender may take a
		// state up at any moment after Report, so reading Herdr's reports
		// while it might be on its way would prove nothing.
		synctest.Wait()
		if got := lastReport(s); got != "working" {
			t.Fatalf("Herdr's last report is %q, want working; the test proves nothing", got)
		}
		before := len(s.Reports(s.PaneID()))
		// The pacing holds both for 100 ms; the first never leaves.
		p.Report("blocked", "reading the plan")
		p.Report("blocked", "approve rm")
		start := time.Now()
		if err := p.Reported(context.Background()); err != nil {
			t.Fatal(err)
		}
		after := s.Reports(s.PaneID())[before:]
		if len(after) != 1 || after[0].State != "blocked" || after[0].Message != "approve rm" || time.Since(start) != 100*time.Millisecond {
			t.Errorf("Reported returned after %v, when Herdr had been sent %+v since working; want blocked \"approve rm\" alone, after the 100 ms pacing", time.Since(start), after)
		}
	})
}

// While Herdr hangs the report stays pending, and ctx bounds the wait.
func TestReportedEndsWithCtxWhileHerdrHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := startInBubble(t, s, nil)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		p.Report("blocked", "approve rm")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := p.Reported(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("Reported: %v after %v, want the ctx's deadline after 5s", err, time.Since(start))
		}
		// Closing gives up what is pending: a barrier returns at once.
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			p.Close(context.Background())
		}()
		synctest.Wait()
		start = time.Now()
		if err := p.Reported(context.Background()); err != nil || time.Since(start) != 0 {
			t.Errorf("Reported while closing: %v after %v", err, time.Since(start))
		}
		<-closed
	})
}

// A report Herdr refuses is not sent again, so the barrier does not wait
// for it.
func TestReportedReturnsWhenHerdrRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		cfg := inMemory(presenceConfig(s, nil), s)
		cfg.PaneID = "w1:p9" // a pane this Herdr does not have
		p := herdr.StartPresence(cfg)
		defer p.Close(context.Background())
		p.Report("blocked", "")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Reported(ctx); err != nil || time.Since(start) > 100*time.Millisecond {
			t.Errorf("Reported: %v after %v, want nil within the pacing interval", err, time.Since(start))
		}
	})
}

// Report never waits for Herdr: with a request stuck in a hung Herdr,
// thousands of Report calls pass no time at all on the fake clock (a call
// that waited on anything Herdr does would let the clock move to the
// request's deadline).
func TestReportNeverWaitsWhileARequestIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		time.Sleep(time.Millisecond) // the claim leaves (its seq waits for the clock to tick)
		synctest.Wait()
		reports := func() (n int, answered bool) {
			for _, q := range s.Requests() {
				if q.Method == "pane.report_agent" {
					n++
					answered = answered || q.Reply != ""
				}
			}
			return n, answered
		}
		if n, answered := reports(); n != 1 || answered {
			t.Fatalf("requests %q, want the claim stuck in Herdr", s.Methods())
		}
		start := time.Now()
		for i := 0; i < 10000; i++ {
			p.Report([]string{"working", "idle", "blocked"}[i%3], "")
			p.Resync()
		}
		synctest.Wait()
		if d := time.Since(start); d != 0 {
			t.Errorf("10,000 Report calls took %v of the fake clock", d)
		}
		if n, answered := reports(); n != 1 || answered {
			t.Errorf("%d reports reached Herdr while the first was stuck (answered: %v), want the one", n, answered)
		}
		// Close cuts the stuck report off and makes its one short release
		// attempt; it is bounded, never waiting on Herdr for good.
		if err := p.Close(context.Background()); err == nil {
			t.Error("a hung Herdr took the release")
		}
		if d := time.Since(start); d > herdr.ReleaseBudget {
			t.Errorf("Close took %v", d)
		}
	})
}

// Close may come first among the wrapper's shutdown steps: the parts still
// running can go on calling the Presence, and what they report once Close
// has begun — their closing reasons — never reaches Herdr, not even a
// change already waiting for its pacing slot.
func TestNothingIsReportedOnceCloseBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		log := &logSink{}
		p := startInBubble(t, s, log)
		p.Report("working", "")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		p.Report("idle", "") // waits for its pacing slot, 100 ms away
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 300 * time.Millisecond, Methods: []string{"pane.release_agent"}})
		closed := make(chan error, 1)
		go func() { closed <- p.Close(context.Background()) }()
		time.Sleep(150 * time.Millisecond) // the release is with Herdr
		p.Report("blocked", "control socket closed")
		p.Resync()
		if err := p.Reported(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		p.Report("blocked", "detection stopped")
		if h := p.Health(); h == "" {
			t.Error("no health after Close")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		calls := s.AgentCalls(s.PaneID())
		if got := strings.Join(states(calls), " "); got != "unknown working release" {
			t.Errorf("Herdr got %q, want the claim, working and the release last", got)
		}
		checkSeqs(t, calls)
	})
}
