package herdr_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
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

// A pane that finished out of sight reads done until its tab is focused
// (§9.3): for an idle report that is Herdr showing the claim, not another
// agent's state holding the pane. Nor is the flip back to idle when the
// person focuses the tab news: nothing is reported again (herdr#4480 and
// herdr#4473 are about what Herdr makes of that flip).
func TestIdleShownAsDoneIsTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		c := &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}
		ws, err := c.WorkspaceCreate(context.Background(), herdr.NewPlace{}) // not focused
		if err != nil {
			t.Fatal(err)
		}
		cfg := inMemory(presenceConfig(s, nil), s)
		cfg.PaneID = ws.RootPane.PaneID
		p := herdr.StartPresence(cfg)
		defer p.Close(context.Background())
		p.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		p.Report("idle", "")
		time.Sleep(time.Second)
		synctest.Wait()
		if st := s.Pane(cfg.PaneID).Status; st != "done" {
			t.Fatalf("pane reads %q; the fake did not derive done, the test proves nothing", st)
		}
		if h := p.Health(); !strings.HasPrefix(h, "reporting to pane "+cfg.PaneID) {
			t.Errorf("health %q, want the claim shown", h)
		}
		calls := len(s.AgentCalls(cfg.PaneID))
		if _, err := c.TabFocus(context.Background(), ws.Tab.TabID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := s.Pane(cfg.PaneID).Status; st != "idle" {
			t.Fatalf("pane reads %q after its tab was focused; the fake did not flip it, the test proves nothing", st)
		}
		if got := s.AgentCalls(cfg.PaneID); len(got) != calls {
			t.Errorf("the flip to idle was answered with %d more agent calls: %+v", len(got)-calls, got[calls:])
		}
		if h := p.Health(); !strings.HasPrefix(h, "reporting to pane "+cfg.PaneID) {
			t.Errorf("health %q after the flip, want the claim shown", h)
		}
	})
}

// Herdr's detection may clear the report each time it looks (herdr#4020):
// re-asserts are at least reassertGap (5 s) apart, the one inside the gap
// waiting it out rather than being dropped.
func TestReassertsAreFiveSecondsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		p.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		var at []time.Duration
		start := time.Now()
		for range 2 {
			s.LocalDetection(s.PaneID(), "pi", "")
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		for _, r := range s.Reports(s.PaneID()) {
			if !r.At.Before(start) {
				at = append(at, r.At.Sub(start).Round(100*time.Millisecond))
			}
		}
		if len(at) != 2 || at[0] > 100*time.Millisecond || at[1] < 5*time.Second || at[1] > 5200*time.Millisecond {
			t.Fatalf("re-asserts at %v after the first clear, want one at once and one 5s later", at)
		}
		if n, _ := p.Reasserts(); n != 2 {
			t.Errorf("%d re-asserts counted, want 2", n)
		}
	})
}

// A claim Herdr ignored (§6.2) is not sent again at every look at the pane
// (here Herdr dropping events for a slow reader): only a change of the
// pane, or of the state, sends it again.
func TestAnIgnoredClaimIsNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t, herdrtest.Options{Protocol: 22})
		s.SimulateAgentProcessExit(s.PaneID(), "pi")
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		time.Sleep(time.Second)
		synctest.Wait()
		if h := p.Health(); !strings.HasPrefix(h, "Herdr ignores herdr-pi's reports") {
			t.Fatalf("health %q; the claim was not found ignored, the test proves nothing", h)
		}
		n := len(s.Reports(s.PaneID()))
		for range 3 {
			time.Sleep(6 * time.Second)
			s.LoseEvents()
			synctest.Wait()
		}
		if got := len(s.Reports(s.PaneID())); got != n {
			t.Errorf("%d more reports to a Herdr that ignores them", got-n)
		}
	})
}

// A Herdr newer than any protocol herdr-pi knows still answers ping with
// its protocol (with a mismatch error): from 22 on it gets the resume
// command, or a restart of that Herdr would restore nothing.
func TestANewerProtocolGetsTheResumeCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t, herdrtest.Options{Protocol: 23})
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		p.SetResumeArgv([]string{"herdr-pi", "wrap", "pi"})
		p.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		reps := s.Reports(s.PaneID())
		if len(reps) == 0 || reps[len(reps)-1].State != "working" || strings.Join(reps[len(reps)-1].ResumeArgv, " ") != "herdr-pi wrap pi" {
			t.Fatalf("reports %+v, want working with the resume command", reps)
		}
	})
}

// A stream that ran longer than BackoffMax and then ended is a fresh
// failure: the reconnect comes after BackoffMin, not after the back-off an
// outage long before grew to.
func TestWatcherBackOffStartsOverAfterALongStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		var down atomic.Bool
		down.Store(true)
		c := &herdr.Client{Socket: s.SocketPath(), Dial: func(ctx context.Context, sock string) (net.Conn, error) {
			if down.Load() {
				return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
			}
			return s.Dial(ctx, sock)
		}}
		var mu sync.Mutex
		var connects []time.Time
		w := &herdr.Watcher{
			Client: c, BackoffMin: 100 * time.Millisecond, BackoffMax: 5 * time.Second,
			Subscriptions: []herdr.Subscription{{Type: "pane.agent_status_changed", PaneID: s.PaneID()}},
			OnConnect: func(bool) {
				mu.Lock()
				connects = append(connects, time.Now())
				mu.Unlock()
			},
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx, func(herdr.Event) {}) }()
		defer func() { cancel(); <-done }()
		time.Sleep(4 * time.Second) // attempts at 0, .1, .3, .7, 1.5, 3.1 s: the back-off is 3.2 s
		down.Store(false)
		time.Sleep(20 * time.Second) // connected at 6.3 s, and streaming since
		s.DropSubscriptions()
		dropped := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(connects) != 2 || connects[1].Sub(dropped) > 150*time.Millisecond {
			t.Fatalf("connects at %v, the stream dropped at %v: want a reconnect within BackoffMin", connects, dropped)
		}
	})
}

// Herdr canonicalises a known agent's label ("Pi" shows as "pi"): a
// Presence configured with another case still sees its claim.
func TestTheClaimIsSeenWhateverTheLabelsCase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		cfg := inMemory(presenceConfig(s, nil), s)
		cfg.Agent = " Pi"
		p := herdr.StartPresence(cfg)
		defer p.Close(context.Background())
		p.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		if st := s.Pane(s.PaneID()); st.Status != "working" {
			t.Fatalf("pane %+v", st)
		}
		if h := p.Health(); !strings.HasPrefix(h, "reporting to pane") {
			t.Errorf("health %q, want the claim shown", h)
		}
	})
}

// An error reply is Herdr's answer, not a failure to reach it: the call
// ends with it, and the request is not sent a second time.
func TestAnErrorReplyIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.get"},
			Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "no"}}})
		c := &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}
		_, err := c.PaneGet(context.Background(), s.PaneID())
		if !isCode(err, "internal_error") {
			t.Fatalf("PaneGet: %v, want Herdr's internal_error", err)
		}
		if n := len(s.Requests()); n != 1 {
			t.Errorf("%d requests for one call answered with an error, want 1", n)
		}
	})
}
