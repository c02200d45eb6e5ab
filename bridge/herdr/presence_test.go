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

func presenceConfig(s *herdrtest.Server, log *logSink) herdr.PresenceConfig {
	cfg := herdr.PresenceConfig{
		Client: herdr.NewClient(s.SocketPath()),
		PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi",
	}
	if log != nil {
		cfg.Logf = log.Logf
	}
	return cfg
}

// inMemory points cfg at the fake through in-memory pipes, for tests in a
// testing/synctest bubble.
func inMemory(cfg herdr.PresenceConfig, s *herdrtest.Server) herdr.PresenceConfig {
	cfg.Client = &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}
	return cfg
}

func states(calls []herdrtest.AgentCall) []string {
	var out []string
	for _, c := range calls {
		if c.Method == "pane.release_agent" {
			out = append(out, "release")
			continue
		}
		out = append(out, c.State)
	}
	return out
}

func TestPresenceClaimsReportsAndReleases(t *testing.T) {
	s := herdrtest.Start(t)
	log := &logSink{}
	p := herdr.StartPresence(presenceConfig(s, log))
	s.WaitFor(t, 10*time.Second, "the claim", func() bool { return s.Pane(s.PaneID()).Status == "unknown" && len(s.Reports(s.PaneID())) == 1 })
	p.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if st := s.Pane(s.PaneID()); st.Source != "custom:herdr-pi" || st.Agent != "pi" {
		t.Errorf("pane %+v", st)
	}
	if h := p.Health(); !strings.Contains(h, "reporting to pane w1:p1 as custom:herdr-pi") {
		t.Errorf("health %q", h)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil { // twice is fine
		t.Fatal(err)
	}
	calls := s.AgentCalls(s.PaneID())
	if got := strings.Join(states(calls), " "); got != "unknown blocked release" || !calls[2].Applied {
		t.Errorf("calls %q (release applied %v), want the claim, blocked and one release", got, calls[len(calls)-1].Applied)
	}
	checkSeqs(t, calls)
	if !p.Delivered() {
		t.Error("Delivered false after Herdr took the reports")
	}
	if len(log.matching("released pane w1:p1 after 2 reports")) != 1 {
		t.Errorf("log %q", log.all())
	}
}

// A caller defers Close right after StartPresence, so a panic unwinding
// through it still gives the pane back.
func TestPresenceReleasesWhenTheCallerPanics(t *testing.T) {
	s := herdrtest.Start(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		p := herdr.StartPresence(presenceConfig(s, nil))
		defer p.Close(context.Background())
		p.Report("blocked", "approve")
		s.WaitFor(t, 10*time.Second, "blocked", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
		panic("wrap broke")
	}()
	if rel := s.Releases(s.PaneID()); len(rel) != 1 || !rel[0].Applied {
		t.Errorf("releases %+v", rel)
	}
	if st := s.Pane(s.PaneID()); st.Status != "unknown" {
		t.Errorf("pane left %q", st.Status)
	}
}

// A nil Presence is a pane outside Herdr: everything is a no-op.
func TestNilPresenceDoesNothing(t *testing.T) {
	var p *herdr.Presence
	p.Report("working", "")
	p.Resync()
	if h := p.Health(); h != "" {
		t.Errorf("health %q", h)
	}
	if err := p.Reported(context.Background()); err != nil {
		t.Error(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if p.Delivered() {
		t.Error("a nil Presence delivered")
	}
}

// A Herdr that never took a report — nobody at the socket, or a pane it
// does not know — leaves Delivered false, and Close says why: wrap prints
// that once the agent is gone.
func TestPresenceNothingDelivered(t *testing.T) {
	s := herdrtest.Start(t)
	for _, tc := range []struct {
		name string
		cfg  func(herdr.PresenceConfig) herdr.PresenceConfig
		want string
	}{
		{"no socket", func(c herdr.PresenceConfig) herdr.PresenceConfig {
			c.Client = herdr.NewClient(t.TempDir() + "/nope.sock")
			return c
		}, "does not exist"},
		{"unknown pane", func(c herdr.PresenceConfig) herdr.PresenceConfig {
			c.PaneID = "w9:p9"
			return c
		}, "w9:p9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := herdr.StartPresence(tc.cfg(presenceConfig(s, nil)))
			p.Report("working", "")
			err := p.Close(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Close: %v, want an error naming %q", err, tc.want)
			}
			if p.Delivered() {
				t.Error("Delivered true though Herdr took nothing")
			}
		})
	}
}

// Herdr forgets a custom source's state on a live handoff; the event
// stream ends with it, and the state is sent again once the stream is back,
// without waiting for a change.
func TestPresenceReportsAgainWhenTheStreamComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		p.Report("idle", "")
		time.Sleep(time.Second)
		synctest.Wait()
		n := len(s.Reports(s.PaneID()))
		s.DropSubscriptions()
		dropped := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		reps := s.Reports(s.PaneID())
		if got := strings.Join(states(reps[n:]), " "); got != "idle" {
			t.Fatalf("reports %q after the stream ended, want idle sent again", got)
		}
		if d := reps[n].At.Sub(dropped); d > 500*time.Millisecond {
			t.Errorf("idle sent again %v after the stream ended", d)
		}
		checkSeqs(t, reps)
	})
}

// Herdr answers ok to reports it ignores; after a plain pi exited in the
// pane it drops custom reports labelled pi. The claim is read back, and
// Health and the log say why.
func TestPresenceSaysWhenHerdrIgnoresTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SimulateAgentProcessExit(s.PaneID(), "pi")
		log := &logSink{}
		p := herdr.StartPresence(inMemory(presenceConfig(s, log), s))
		defer p.Close(context.Background())
		time.Sleep(time.Second)
		synctest.Wait()
		want := "Herdr ignores herdr-pi's reports for pane w1:p1: it shows no agent"
		if h := p.Health(); !strings.HasPrefix(h, want) {
			t.Errorf("health %q", h)
		}
		if len(log.matching(want)) != 1 {
			t.Errorf("log %q", log.all())
		}
	})
}

// A state reported while Start claims the pane (a hook's `herdr-pi
// waiting start` reaches the wrapper as soon as it is in the pane's
// registry, which is before Start) is the pane's state afterwards: the
// claim's "unknown" never replaces it. The report is made from Start's
// own log line, the one moment between Start taking the Presence as
// started and its claim, so the interleaving is the same every run.
func TestAStateReportedWhileThePaneIsClaimedIsKept(t *testing.T) {
	s := herdrtest.Start(t)
	var p *herdr.Presence
	cfg := presenceConfig(s, nil)
	cfg.Logf = func(format string, args ...any) {
		if strings.HasPrefix(format, "herdr: reporting pane") {
			p.Report("blocked", "approve the deploy")
		}
	}
	p = herdr.NewPresence(cfg)
	defer p.Close(context.Background())
	p.Start()
	if err := p.Reported(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Pane(s.PaneID()); st.Status != "blocked" {
		t.Errorf("pane %+v after the claim, want the state reported meanwhile (blocked); reports %q", st, states(s.AgentCalls(s.PaneID())))
	}
}
