package herdr_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// logSink collects log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

func (l *logSink) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func newReporter(s *herdrtest.Server, log *logSink, tweak func(*herdr.ReporterConfig)) *herdr.Reporter {
	cfg := herdr.ReporterConfig{
		Client: herdr.NewClient(s.SocketPath()),
		PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi",
	}
	if log != nil {
		cfg.Logf = log.Logf
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return herdr.NewReporter(cfg)
}

// checkSeqs fails when any report or release the fake got for the pane was
// ignored by the seq rules or did not increase. The identical request twice
// in a row is a retry after a lost reply (a loaded machine can let the
// 500 ms first attempt time out) and allowed.
func checkSeqs(t *testing.T, calls []herdrtest.AgentCall) {
	t.Helper()
	var last uint64
	for i, c := range calls {
		retry := i > 0 && c.Seq == calls[i-1].Seq && c.Method == calls[i-1].Method && c.State == calls[i-1].State && c.Message == calls[i-1].Message
		if retry {
			continue
		}
		if !c.HasSeq || c.Seq <= last || !c.Accepted {
			t.Errorf("call %d (%s %s seq %d) after seq %d: accepted=%v", i, c.Method, c.State, c.Seq, last, c.Accepted)
		}
		last = c.Seq
	}
}

// 1,001 changes in 50 ms leave as two reports: the first change at once,
// the newest when the 100 ms pacing allows, and nothing after.
func TestBurstCollapsesToTheNewestState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		defer r.Close()
		states := []string{"working", "idle", "blocked"}
		start := time.Now()
		for i := 0; i < 1000; i++ {
			r.Report(states[i%3], fmt.Sprintf("step %d", i))
			time.Sleep(50 * time.Microsecond)
		}
		r.Report("blocked", "final")
		time.Sleep(time.Minute)
		synctest.Wait()
		rs := s.Reports(s.PaneID())
		if len(rs) != 2 || rs[1].At.Sub(start).Round(time.Millisecond) != 100*time.Millisecond {
			t.Fatalf("%d reports for one burst, want 2 (the second at 100ms)", len(rs))
		}
		if last := rs[1]; last.State != "blocked" || last.Message != "final" {
			t.Errorf("last report %+v", last)
		}
		checkSeqs(t, rs)
		if st := s.Pane(s.PaneID()); st.Status != "blocked" {
			t.Errorf("pane shows %q", st.Status)
		}
	})
}

func TestOnlyChangesAreReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		// A long MinInterval holds changes back, so what happens to a
		// held-back change can be seen.
		r := newReporter(s, nil, func(c *herdr.ReporterConfig) {
			inBubble(s)(c)
			c.MinInterval = 200 * time.Millisecond
		})
		defer r.Close()
		count := func(wait time.Duration) int {
			time.Sleep(wait)
			synctest.Wait()
			return len(s.Reports(s.PaneID()))
		}
		r.Report("working", "")
		if n := count(time.Second); n != 1 {
			t.Fatalf("%d reports, want 1", n)
		}
		for i := 0; i < 50; i++ {
			r.Report("working", "")
		}
		r.Report("working", "reading files") // the message counts as a change
		if n := count(time.Millisecond); n != 2 {
			t.Fatalf("%d reports, want 2", n)
		}
		// Within the 200 ms after that report, a change and its undoing.
		r.Report("idle", "")
		r.Report("working", "reading files") // back where Herdr already is
		if n := count(time.Second); n != 2 {
			t.Errorf("%d reports, want 2: a change undone before it was sent must not be sent", n)
		}
		if st := s.Pane(s.PaneID()); st.Status != "working" {
			t.Errorf("pane %q", st.Status)
		}
		checkSeqs(t, s.Reports(s.PaneID()))
	})
}

// Close cuts off a report stuck in a hung Herdr at once.
func TestCloseDoesNotWaitForAHungHerdr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		r := newReporter(s, nil, inBubble(s))
		r.Report("working", "")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if len(s.Requests()) != 1 {
			t.Fatalf("requests %q, want the report stuck in Herdr", s.Methods())
		}
		start := time.Now()
		r.Close()
		if d := time.Since(start); d != 0 {
			t.Errorf("Close took %v with a report in flight", d)
		}
	})
}

// inBubble points a Reporter at a fake served inside a synctest bubble.
func inBubble(s *herdrtest.Server) func(*herdr.ReporterConfig) {
	return func(c *herdr.ReporterConfig) { c.Client = &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial} }
}

func TestFailuresAreLoggedOncePerKindAndTheStateIsSentAgain(t *testing.T) {
	s := herdrtest.Start(t)
	log := &logSink{}
	r := newReporter(s, log, func(c *herdr.ReporterConfig) {
		c.RetryMin, c.RetryMax, c.MinInterval = 20*time.Millisecond, 40*time.Millisecond, time.Millisecond
	})
	defer r.Close()
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultGarbage})
	r.Report("working", "")
	s.WaitFor(t, 10*time.Second, "several failed attempts", func() bool { return len(s.Requests()) >= 8 })
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose})
	n := len(s.Requests())
	s.WaitFor(t, 10*time.Second, "more failed attempts", func() bool { return len(s.Requests()) >= n+6 })
	s.SetFault(herdrtest.Fault{})
	s.WaitFor(t, 10*time.Second, "the state after recovery", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	// The recovery is logged once Herdr's answer is back with the sender,
	// which may be a while after Herdr took the state on a busy machine.
	s.WaitFor(t, 10*time.Second, "the recovery logged", func() bool { return len(log.matching("reach Herdr again")) > 0 })

	lines := log.all()
	t.Logf("%d requests, log:\n%s", len(s.Requests()), strings.Join(lines, "\n"))
	if g := log.matching("not Herdr's protocol"); len(g) != 1 {
		t.Errorf("%d garbage lines, want 1", len(g))
	}
	if c := log.matching("without answering"); len(c) != 1 {
		t.Errorf("%d closed lines, want 1", len(c))
	}
	if len(lines) != 3 || !strings.Contains(lines[2], "reach Herdr again") {
		t.Errorf("want exactly two failure lines and one recovery line")
	}
	for _, l := range lines[:2] {
		if !strings.Contains(l, s.SocketPath()) {
			t.Errorf("log line does not name the socket: %q", l)
		}
	}
	// Once delivered, nothing more is sent.
	n = len(s.Requests())
	time.Sleep(150 * time.Millisecond)
	if len(s.Requests()) != n {
		t.Errorf("still sending after recovery")
	}
}

func TestRestartedHerdrGetsTheCurrentState(t *testing.T) {
	s := herdrtest.Start(t)
	log := &logSink{}
	r := newReporter(s, log, func(c *herdr.ReporterConfig) { c.RetryMin, c.MinInterval = 30*time.Millisecond, time.Millisecond })
	defer r.Close()
	r.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })

	// Herdr goes away; the next change fails…
	s.Crash()
	r.Report("blocked", "approve rm")
	s.WaitFor(t, 10*time.Second, "the failure logged", func() bool { return len(log.matching("refuses connections")) > 0 })
	if len(log.matching("refuses connections")) != 1 {
		t.Fatalf("log %q", log.all())
	}
	// …and reaches the new Herdr once it is back, with no new change.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	s.WaitFor(t, 10*time.Second, "the state re-sent after the restart", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })

	// A restart Herdr's clients cannot see (a live handoff between two
	// reports) is healed by Resync.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	r.Resync()
	s.WaitFor(t, 10*time.Second, "the state after Resync", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	checkSeqsWithin(t, s.Reports(s.PaneID()))
}

// checkSeqsWithin checks seqs only increase, without requiring acceptance
// (a Herdr restart forgets what it accepted). The identical request twice
// in a row is a retry after a lost reply, and allowed.
func checkSeqsWithin(t *testing.T, calls []herdrtest.AgentCall) {
	t.Helper()
	for i := 1; i < len(calls); i++ {
		a, b := calls[i-1], calls[i]
		retry := a.Seq == b.Seq && a.State == b.State && a.Message == b.Message
		if b.Seq <= a.Seq && !retry {
			t.Errorf("seq %d after %d", b.Seq, a.Seq)
		}
	}
}

func TestReleaseComesAfterEveryReport(t *testing.T) {
	s := herdrtest.Start(t)
	r := newReporter(s, nil, nil)
	r.Report("unknown", "")
	r.Report("working", "")
	r.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if err := r.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := s.AgentCalls(s.PaneID())
	if last := calls[len(calls)-1]; last.Method != "pane.release_agent" || !last.Applied || last.Source != "custom:herdr-pi" || last.Agent != "pi" {
		t.Errorf("last call %+v", last)
	}
	checkSeqs(t, calls)
	if st := s.Pane(s.PaneID()); st.Status != "unknown" || st.Agent != "" {
		t.Errorf("pane after release %+v", st)
	}
	// Reports after the release are dropped; a second release is a no-op.
	r.Report("working", "")
	if err := r.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(s.AgentCalls(s.PaneID())); n != len(calls) {
		t.Errorf("%d calls after release, want %d", n, len(calls))
	}
}

func TestReleaseWithAReportHungInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"pane.report_agent"}})
		r := newReporter(s, nil, inBubble(s))
		r.Report("working", "")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		start := time.Now()
		if err := r.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The hung report is cut off after the 250 ms grace; the release that
		// follows is answered at once.
		if took := time.Since(start).Round(time.Millisecond); took != 250*time.Millisecond {
			t.Errorf("release took %v, want the 250ms grace", took)
		}
		if n := len(s.Releases(s.PaneID())); n != 1 {
			t.Errorf("%d releases, want 1", n)
		}
		reqs := s.Requests()
		var reportSeq, releaseSeq uint64
		for _, q := range reqs {
			var seq uint64
			fmt.Sscanf(q.Line[strings.Index(q.Line, `"seq":`)+6:], "%d", &seq)
			if q.Method == "pane.report_agent" {
				reportSeq = max(reportSeq, seq)
			} else if q.Method == "pane.release_agent" {
				releaseSeq = seq
			}
		}
		if releaseSeq <= reportSeq {
			t.Errorf("release seq %d is not above the report's %d", releaseSeq, reportSeq)
		}
	})
}

// A run that reported anything releases at the end, even when its reports
// never left (an earlier run that died may have left its state on the
// pane); a run that reported nothing sends nothing.
func TestReleaseEvenBeforeTheFirstReportLeft(t *testing.T) {
	s := herdrtest.Start(t)
	// An earlier run died with the pane blocked.
	c := herdr.NewClient(s.SocketPath())
	if err := c.ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi", State: "blocked", Seq: uint64(time.Now().UnixMicro())}); err != nil {
		t.Fatal(err)
	}
	r := newReporter(s, nil, func(c *herdr.ReporterConfig) { c.MinInterval = time.Hour })
	r.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	r.Report("idle", "") // held back by MinInterval
	if err := r.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := s.AgentCalls(s.PaneID())
	if len(calls) != 3 || calls[2].Method != "pane.release_agent" || !calls[2].Applied {
		t.Errorf("calls %+v, want the old report, working and the release, not the held-back idle", calls)
	}
	if err := c.ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi", State: "blocked", Seq: uint64(time.Now().UnixMicro())}); err != nil {
		t.Fatal(err)
	}
	r = newReporter(s, nil, nil)
	r.Report("unknown", "")
	if err := r.Release(context.Background()); err != nil { // at once: nothing left yet
		t.Fatal(err)
	}
	if st := s.Pane(s.PaneID()); st.Status != "unknown" {
		t.Errorf("the dead run's state survived a release: %+v", st)
	}

	s2 := herdrtest.Start(t)
	r = newReporter(s2, nil, nil)
	if err := r.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s2.Requests()); n != 0 {
		t.Errorf("%d requests", n)
	}
}

// A Herdr known not to answer gets one short release attempt (500 ms), not
// the two that take 2 s: exiting must not wait for what cannot land.
func TestReleaseIsShortWhenHerdrIsKnownToHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		r := newReporter(s, nil, inBubble(s))
		r.Report("working", "")
		time.Sleep(2100 * time.Millisecond) // both attempts time out
		start := time.Now()
		err := r.Release(context.Background())
		took := time.Since(start).Round(time.Millisecond)
		if err == nil || took != 500*time.Millisecond {
			t.Errorf("release against a hung Herdr: %v after %v, want a timeout after 500ms", err, took)
		}
		if n := len(s.Releases(s.PaneID())); n != 0 {
			t.Errorf("a hung Herdr applied %d releases", n)
		}
		if reqs := s.Requests(); reqs[len(reqs)-1].Method != "pane.release_agent" || reqs[len(reqs)-2].Method == "pane.release_agent" {
			t.Errorf("want exactly one release attempt, requests %v", s.Methods())
		}
	})
}

func TestReleaseIsBoundedWhenHerdrHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		r.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		if st := s.Pane(s.PaneID()).Status; st != "working" {
			t.Fatalf("pane %q", st)
		}
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := r.Release(ctx)
		if took := time.Since(start).Round(time.Millisecond); err == nil || took != 700*time.Millisecond {
			t.Errorf("release against a hung Herdr: %v after %v, want an error at the 700ms budget", err, took)
		}
		if !strings.Contains(err.Error(), "release pane w1:p1") {
			t.Errorf("error %q does not name the pane", err)
		}
	})
}

func TestPanicInTheSenderIsRecovered(t *testing.T) {
	s := herdrtest.Start(t)
	log := &logSink{}
	var mu sync.Mutex
	calls := 0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 2 { // the first seq of the first report
			panic("clock broke")
		}
		return time.Now()
	}
	r := newReporter(s, log, func(c *herdr.ReporterConfig) { c.Now, c.MinInterval = now, time.Millisecond })
	r.Report("working", "")
	s.WaitFor(t, 10*time.Second, "the panic to be logged", func() bool { return len(log.matching("panic")) == 1 })
	r.Report("blocked", "")
	s.WaitFor(t, 10*time.Second, "the next change", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if err := r.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.matching("panic")[0], "clock broke") {
		t.Errorf("log %q", log.all())
	}
	checkSeqs(t, s.AgentCalls(s.PaneID()))
}

// A report's message is text from elsewhere (an ask's title, a wait's
// label from another extension): what reaches Herdr, which may draw it,
// carries no escape sequence and no bidi override.
func TestReportedMessageIsCleaned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		r := newReporter(s, nil, inBubble(s))
		defer r.Close()
		r.Report("blocked", "deploy\x1b]0;x\x07 now\u202eok")
		time.Sleep(time.Second)
		synctest.Wait()
		rs := s.Reports(s.PaneID())
		if len(rs) != 1 || rs[0].Message != "deploy ]0;x  now ok" {
			t.Fatalf("reports %+v, want one with its message cleaned", rs)
		}
	})
}
