package herdr_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// paneOf is a pane registry as two wrappers of one pane see it: which
// one is the newest, and whether it still runs.
type paneOf struct {
	mu      sync.Mutex
	newest  int // the holder's pid, 0 when none but the older runs
	ended   chan struct{}
	endOnce sync.Once
}

func (r *paneOf) others(self int) func() herdr.PaneWrappers {
	return func() herdr.PaneWrappers {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case r.newest == 0:
			return herdr.PaneWrappers{}
		case r.newest == self:
			return herdr.PaneWrappers{Older: &herdr.Wrapper{PID: 1000}}
		}
		return herdr.PaneWrappers{Holder: &herdr.Wrapper{PID: r.newest}}
	}
}

func (r *paneOf) awaitEnd(ctx context.Context, pid int) {
	select {
	case <-r.ended:
	case <-ctx.Done():
	}
}

func (r *paneOf) end() {
	r.mu.Lock()
	r.newest = 0
	r.mu.Unlock()
	r.endOnce.Do(func() { close(r.ended) })
}

// Two wrappers of one pane (pids 1000 and 2000, the second started
// after the first): the second holds the pane. The first's changes stay
// with it, its Health names the holder and never Herdr's detection,
// nothing it does is counted as a re-assert; when the second ends (and
// releases) the first's current state goes to the pane again, and the
// first releasing at its end clears only its own claim.
func TestAnOlderWrapperStandsAsideForTheNewer(t *testing.T) {
	s := herdrtest.Start(t)
	reg := &paneOf{ended: make(chan struct{})}
	olderLog, newerLog := &logSink{}, &logSink{}
	oc := presenceConfig(s, olderLog)
	oc.Others, oc.AwaitEnd = reg.others(1000), reg.awaitEnd
	older := herdr.StartPresence(oc)
	defer older.Close(context.Background())
	older.Report("idle", "")
	s.WaitFor(t, 10*time.Second, "the older one idle", func() bool { return s.Pane(s.PaneID()).Status == "idle" })

	reg.mu.Lock()
	reg.newest = 2000
	reg.mu.Unlock()
	nc := presenceConfig(s, newerLog)
	nc.Others = reg.others(2000)
	newer := herdr.StartPresence(nc)
	newer.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "the newer one blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	s.WaitFor(t, 10*time.Second, "the older one aside", func() bool { return strings.Contains(older.Health(), "held by the herdr-pi wrapper pid 2000") })

	calls := len(s.AgentCalls(s.PaneID()))
	older.Report("working", "")
	older.Report("idle", "")
	older.Report("working", "")
	if err := older.Reported(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.AgentCalls(s.PaneID())[calls:]; len(got) != 0 {
		t.Errorf("the older wrapper reported while the newer held the pane: %+v", got)
	}
	for _, sink := range []*logSink{olderLog, newerLog} {
		if l := sink.matching("herdr#4020"); len(l) != 0 {
			t.Errorf("a wrapper blamed Herdr's detection: %q", l)
		}
	}
	if h := newer.Health(); !strings.Contains(h, "reporting to pane") {
		t.Errorf("the newer one's health %q", h)
	}

	if err := newer.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg.end()
	s.WaitFor(t, 10*time.Second, "the older one's state on the pane again", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	if n, _ := older.Reasserts(); n != 0 || strings.Contains(older.Health(), "held by") || strings.Contains(older.Health(), "herdr#4020") {
		t.Errorf("the older one after the newer ended: %d re-asserts, health %q", n, older.Health())
	}
	if err := older.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Pane(s.PaneID()); st.Agent != "" {
		t.Errorf("pane %+v after both released", st)
	}
}

// The older wrapper ends while the newer holds the pane: it must not
// release it (same source and agent: the release would clear the
// newer's state from the pane).
func TestAWrapperStandingAsideLeavesThePaneToItsHolder(t *testing.T) {
	s := herdrtest.Start(t)
	reg := &paneOf{ended: make(chan struct{})}
	oc := presenceConfig(s, nil)
	oc.Others, oc.AwaitEnd = reg.others(1000), reg.awaitEnd
	older := herdr.StartPresence(oc)
	older.Report("idle", "")
	s.WaitFor(t, 10*time.Second, "the older one idle", func() bool { return s.Pane(s.PaneID()).Status == "idle" })
	reg.mu.Lock()
	reg.newest = 2000
	reg.mu.Unlock()
	nc := presenceConfig(s, nil)
	nc.Others = reg.others(2000)
	newer := herdr.StartPresence(nc)
	defer newer.Close(context.Background())
	newer.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "the newer one blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if err := older.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rel := s.Releases(s.PaneID()); len(rel) != 0 {
		t.Errorf("the older wrapper released the pane its holder shows: %+v", rel)
	}
	if st := s.Pane(s.PaneID()); st.Status != "blocked" {
		t.Errorf("pane %+v, want the newer one's blocked", st)
	}
}

// `herdr-pi wrap bash`, then `herdr-pi wrap pi` in that shell: the inner
// wrapper holds the pane, and the outer runs under it. Herdr's own
// detection takes the pane for the inner Pi (herdr#4020, protocol 22):
// the inner wrapper must not take that for the outer wrapper's last
// report. It waits, as without an outer wrapper: Health says who holds
// the pane, and once the detection lets go the state goes again, a
// re-assert.
func TestAWrapperWithAnOuterOneStillWaitsForHerdrsDetection(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	log := &logSink{}
	cfg := presenceConfig(s, log)
	cfg.Others = func() herdr.PaneWrappers { return herdr.PaneWrappers{Older: &herdr.Wrapper{PID: 1000, Nested: true}} }
	p := herdr.StartPresence(cfg)
	defer p.Close(context.Background())
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	s.LocalDetection(s.PaneID(), "pi", "idle")
	want := `Herdr shows pane w1:p1 as agent "pi" (status idle), not herdr-pi's report`
	for deadline := time.Now().Add(10 * time.Second); !strings.HasPrefix(p.Health(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("health %q, want it to say who holds the pane (%q); log:\n%s", p.Health(), want, strings.Join(log.all(), "\n"))
		}
	}
	if l := log.matching("the last report of the herdr-pi wrapper pid 1000"); len(l) > 1 {
		t.Errorf("Herdr's detection taken for the outer wrapper's report again and again: %q", l)
	}
	s.EndLocalDetection(s.PaneID())
	s.WaitFor(t, 10*time.Second, "working again", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	eventually(t, "the re-assert counted", func() bool { n, _ := p.Reasserts(); return n == 1 })
}

// The older wrapper's report sent as the newer took the pane over (it
// had not heard of the newer yet) gives way to the newer's state: the
// newer sends it again once, is not held, and counts no re-assert.
func TestANewerWrapperTakesThePaneBackFromAnOlderOnesLateReport(t *testing.T) {
	s := herdrtest.Start(t)
	log := &logSink{}
	nc := presenceConfig(s, log)
	nc.Others = func() herdr.PaneWrappers { return herdr.PaneWrappers{Older: &herdr.Wrapper{PID: 1000}} }
	newer := herdr.StartPresence(nc)
	defer newer.Close(context.Background())
	newer.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "the newer one blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	eventually(t, "the claim read back", func() bool { return slices.Contains(s.Methods(), "pane.get") })

	late := herdr.NewReporter(herdr.ReporterConfig{Client: herdr.NewClient(s.SocketPath()), PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "bash"})
	late.Report("idle", "")
	if err := late.Reported(context.Background()); err != nil {
		t.Fatal(err)
	}
	late.Close()
	s.WaitFor(t, 10*time.Second, "the newer one's state again", func() bool {
		st := s.Pane(s.PaneID())
		return st.Status == "blocked" && st.Agent == "pi"
	})
	eventually(t, "the newer one's health", func() bool { return strings.HasPrefix(newer.Health(), "reporting to pane w1:p1") })
	if n, _ := newer.Reasserts(); n != 0 || len(log.matching("herdr-pi wrapper pid 1000")) != 1 {
		t.Errorf("%d re-asserts; log %q", n, log.all())
	}
}
