package herdr_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr 0.9.1 answers ping with a number among the capabilities; a value
// of any kind must not cost the ping.
func TestPingReadsCapabilitiesTolerantly(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	p, err := herdr.NewClient(s.SocketPath()).Ping(context.Background())
	if err != nil || p.Protocol != 22 || p.Capabilities == nil {
		t.Fatalf("ping: %+v, %v", p, err)
	}
	if n, ok := p.Capabilities.Number("endpoint_protocol_generation"); !ok || n != 2 {
		t.Errorf("endpoint_protocol_generation %v %v", n, ok)
	}
	if p.Capabilities.LiveHandoff || p.Capabilities.On("endpoint_protocol_generation") != true {
		t.Errorf("capabilities %+v", p.Capabilities)
	}

	odd := herdrtest.Start(t, herdrtest.Options{Protocol: 22, Capabilities: map[string]any{
		"live_handoff": 1, "detached_server_daemon": "yes", "future": map[string]any{"x": []int{1}},
	}})
	p, err = herdr.NewClient(odd.SocketPath()).Ping(context.Background())
	if err != nil || !p.Capabilities.LiveHandoff || p.Capabilities.DetachedServerDaemon || len(p.Capabilities.Values) != 3 {
		t.Fatalf("odd capabilities: %+v, %v", p.Capabilities, err)
	}
}

// Protocol 22 keeps the request id on an error for a request it cannot
// read, protocol 20 answers ""; both are Herdr's refusal, not garbage.
func TestErrorRepliesUnderEitherID(t *testing.T) {
	for _, protocol := range []int{20, 22} {
		s := herdrtest.Start(t, herdrtest.Options{Protocol: protocol})
		s.ExpectInvalidRequests()
		c := herdr.NewClient(s.SocketPath())
		err := c.ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: "done"})
		var he *herdr.Error
		if !errors.As(err, &he) || he.Code != "invalid_request" {
			t.Errorf("protocol %d: %v, want Herdr's invalid_request", protocol, err)
		}
		if reqs := s.Requests(); !strings.Contains(reqs[0].Reply, `"id":"`+map[int]string{20: "", 22: reqs[0].ID}[protocol]+`"`) {
			t.Errorf("protocol %d: reply %s", protocol, reqs[0].Reply)
		}
		if _, err := c.PaneGet(context.Background(), "w1:p9"); !isCode(err, "pane_not_found") {
			t.Errorf("protocol %d: PaneGet: %v", protocol, err)
		}
	}
}

// A slow reader gets events_lost in place of what it missed: the watcher
// keeps the stream, hands nothing of it to the handler, and tells the
// caller to re-read.
func TestWatcherTakesEventsLost(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	c := herdr.NewClient(s.SocketPath())
	var mu sync.Mutex
	var connects []bool
	var events []string
	w := &herdr.Watcher{
		Client:        c,
		Subscriptions: []herdr.Subscription{{Type: "pane.agent_status_changed", PaneID: s.PaneID()}},
		OnConnect: func(again bool) {
			mu.Lock()
			connects = append(connects, again)
			mu.Unlock()
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(ev herdr.Event) { mu.Lock(); events = append(events, ev.Name+":"+ev.AgentStatus); mu.Unlock() })
	}()
	defer func() { cancel(); <-done }()
	seen := func(want ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Equal(events, want)
		}
	}
	s.WaitFor(t, 10*time.Second, "the subscription", func() bool { mu.Lock(); defer mu.Unlock(); return len(connects) == 1 })
	report := func(seq uint64, state string) {
		if err := c.ReportAgent(ctx, herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: state, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	report(1, "working")
	s.WaitFor(t, 10*time.Second, "working", seen("pane.agent_status_changed:working"))
	s.StallEvents()
	report(2, "idle")
	s.LoseEvents()
	s.WaitFor(t, 10*time.Second, "a re-read after the loss", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(connects, []bool{false, true})
	})
	report(3, "blocked")
	s.WaitFor(t, 10*time.Second, "blocked on the same stream", seen("pane.agent_status_changed:working", "pane.agent_status_changed:blocked"))
	if n := strings.Count(strings.Join(s.Methods(), " "), "events.subscribe"); n != 1 {
		t.Errorf("%d subscriptions, want the one stream throughout", n)
	}
}

// From protocol 22 on, every report carries the resume command; protocol
// 20 never gets it. A Herdr upgraded across a restart gets it with the
// state sent again, and a new command goes out at once.
func TestPresenceSendsResumeArgvFromProtocol22(t *testing.T) {
	resume := []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}
	lastResume := func(s *herdrtest.Server) string {
		r := s.Reports(s.PaneID())
		if len(r) == 0 {
			return "-"
		}
		return strings.Join(r[len(r)-1].ResumeArgv, " ")
	}

	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	p := herdr.StartPresence(presenceConfig(s, nil))
	defer p.Close(context.Background())
	p.SetResumeArgv(resume)
	s.WaitFor(t, 10*time.Second, "the resume command", func() bool { return lastResume(s) == strings.Join(resume, " ") })
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working with it", func() bool {
		r := s.Reports(s.PaneID())
		return r[len(r)-1].State == "working" && lastResume(s) == strings.Join(resume, " ")
	})
	p.SetResumeArgv([]string{"herdr-pi", "wrap", "pi", "--session", "/s/b.jsonl"})
	s.WaitFor(t, 10*time.Second, "the new command, at once", func() bool {
		r := s.Reports(s.PaneID())
		return r[len(r)-1].State == "working" && strings.HasSuffix(lastResume(s), "/s/b.jsonl")
	})

	old := herdrtest.Start(t)
	q := herdr.StartPresence(presenceConfig(old, nil))
	defer q.Close(context.Background())
	q.SetResumeArgv(resume)
	q.Report("idle", "")
	old.WaitFor(t, 10*time.Second, "idle", func() bool { return old.Pane(old.PaneID()).Status == "idle" })
	old.WaitFor(t, 10*time.Second, "the protocol asked", func() bool { return slices.Contains(old.Methods(), "ping") })
	for _, r := range old.Requests() {
		if strings.Contains(string(r.Params), "resume_argv") {
			t.Fatalf("protocol 20 got resume_argv: %s", r.Line)
		}
	}
	old.SetProtocol(22)
	if err := old.Restart(); err != nil {
		t.Fatal(err)
	}
	old.WaitFor(t, 10*time.Second, "idle with the resume command after the upgrade", func() bool {
		return old.Pane(old.PaneID()).Status == "idle" && lastResume(old) == strings.Join(resume, " ")
	})
}

// herdr#4020: Herdr's own detection clears a custom report labelled pi.
// Once the pane shows no agent the state is reported again, and Health
// and Reasserts say so.
func TestPresenceReassertsWhenHerdrClearsTheReport(t *testing.T) {
	for _, protocol := range []int{20, 22} {
		s := herdrtest.Start(t, herdrtest.Options{Protocol: protocol})
		log := &logSink{}
		p := herdr.StartPresence(presenceConfig(s, log))
		p.Report("working", "")
		s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
		eventually(t, "the claim read back", func() bool { return slices.Contains(s.Methods(), "pane.get") })
		s.LocalDetection(s.PaneID(), "pi", "")
		s.WaitFor(t, 10*time.Second, "working again", func() bool {
			st := s.Pane(s.PaneID())
			return st.Status == "working" && st.Source == "custom:herdr-pi"
		})
		eventually(t, "the re-assert counted", func() bool { n, _ := p.Reasserts(); return n == 1 })
		if h := p.Health(); !strings.Contains(h, "re-asserted it at") || !strings.HasPrefix(h, "reporting to pane w1:p1") {
			t.Errorf("protocol %d: health %q", protocol, h)
		}
		// The count goes up before the line is logged: wait for the line.
		eventually(t, "the re-assert logged", func() bool { return len(log.matching("shows herdr-pi's report again")) > 0 })
		if len(log.matching("Herdr dropped or cleared herdr-pi's report")) != 1 || len(log.matching("shows herdr-pi's report again")) != 1 {
			t.Errorf("protocol %d: log %q", protocol, log.all())
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rel := s.Releases(s.PaneID()); len(rel) != 1 || !rel[0].Applied {
			t.Errorf("protocol %d: releases %+v", protocol, rel)
		}
	}
}

// While Herdr's detection holds the pane, reports are dropped and the
// wrapper does not fight it; Health says who holds the pane. When it lets
// go, the current state is reported again.
func TestPresenceWaitsWhileHerdrHoldsThePane(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	p := herdr.StartPresence(presenceConfig(s, nil))
	defer p.Close(context.Background())
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	s.LocalDetection(s.PaneID(), "pi", "idle")
	eventually(t, "health saying who holds the pane", func() bool {
		return strings.HasPrefix(p.Health(), `Herdr shows pane w1:p1 as agent "pi" (status idle), not herdr-pi's report`)
	})
	p.Report("blocked", "approve")
	s.WaitFor(t, 10*time.Second, "blocked, dropped", func() bool {
		r := s.Reports(s.PaneID())
		return r[len(r)-1].State == "blocked" && !r[len(r)-1].Applied
	})
	n := len(s.Reports(s.PaneID()))
	s.EndLocalDetection(s.PaneID())
	s.WaitFor(t, 10*time.Second, "blocked again", func() bool { return s.Pane(s.PaneID()).Status == "blocked" })
	if r := s.Reports(s.PaneID()); len(r) != n+1 {
		t.Errorf("%d reports after detection let go, want one", len(r)-n)
	}
	eventually(t, "the re-assert counted", func() bool { n, _ := p.Reasserts(); return n == 1 && strings.Contains(p.Health(), "re-asserted") })
}

// The status event of a clear can be lost with others (events_lost on a
// slow stream): the wrapper re-reads the pane then, and does not wait for
// an event that will not come.
func TestPresenceRereadsAfterEventsLost(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: 22})
	p := herdr.StartPresence(presenceConfig(s, nil))
	defer p.Close(context.Background())
	p.Report("working", "")
	s.WaitFor(t, 10*time.Second, "working", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	eventually(t, "the claim read back", func() bool { return slices.Contains(s.Methods(), "pane.get") })
	s.StallEvents()
	s.LocalDetection(s.PaneID(), "pi", "")
	s.LoseEvents()
	s.WaitFor(t, 10*time.Second, "working again", func() bool { return s.Pane(s.PaneID()).Status == "working" })
	eventually(t, "the re-assert counted", func() bool { n, _ := p.Reasserts(); return n == 1 })
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}
