package herdr_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// outage is a Dial to the fake that, while down, fails the way a killed
// Herdr's socket does (connection refused).
type outage struct {
	s    *herdrtest.Server
	down atomic.Bool
}

func (o *outage) Dial(ctx context.Context, socket string) (net.Conn, error) {
	if o.down.Load() {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return o.s.Dial(ctx, socket)
}

func (o *outage) start() {
	o.down.Store(true)
	o.s.DropSubscriptions() // a killed Herdr's streams end with it
}

// A state that changed while Herdr was away reaches it within a second of
// Herdr answering again, however long it was away: the reporter's back-off
// (up to 30 s after a long outage) is cut short once Herdr is back.
func TestPresenceReportsWithinASecondOfHerdrComingBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upFirst  bool // Herdr answers before the outage
		duration time.Duration
	}{
		{"5s", true, 5 * time.Second},
		{"35s", true, 35 * time.Second},
		{"10min", true, 10 * time.Minute},
		{"down at start, 35s", false, 35 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := herdrtest.StartInBubble(t)
				o := &outage{s: s}
				cfg := presenceConfig(s, nil)
				cfg.Client = &herdr.Client{Socket: s.SocketPath(), Dial: o.Dial}
				if !tc.upFirst {
					o.start()
				}
				p := herdr.StartPresence(cfg)
				defer p.Close(context.Background())
				p.Report("working", "")
				time.Sleep(time.Second)
				if tc.upFirst {
					synctest.Wait()
					if st := s.Pane(s.PaneID()).Status; st != "working" {
						t.Fatalf("pane %q before the outage", st)
					}
					o.start()
					time.Sleep(time.Second)
				}
				p.Report("blocked", "approve rm")
				time.Sleep(tc.duration - time.Second)
				o.down.Store(false)
				back := time.Now()
				time.Sleep(time.Minute)
				synctest.Wait()

				var arrived time.Duration = -1
				for _, r := range s.Reports(s.PaneID()) {
					if r.State == "blocked" && r.Accepted {
						arrived = r.At.Sub(back)
						break
					}
				}
				t.Logf("after a %v outage blocked reached Herdr %v after it came back", tc.duration, arrived)
				if arrived < 0 || arrived > time.Second {
					t.Errorf("after a %v outage blocked reached Herdr %v after it came back (-1: never), want within 1s", tc.duration, arrived)
				}
				if st := s.Pane(s.PaneID()).Status; st != "blocked" {
					t.Errorf("pane %q", st)
				}
				checkSeqsWithin(t, s.Reports(s.PaneID()))
			})
		})
	}
}

// While Herdr cannot be reached, `status` must not say "reporting to pane
// …" as if Herdr had the state: Health says since when Herdr is away and
// why, from the start (Herdr started after the wrapper) and after an
// outage mid-run, and goes back to the claim once Herdr answers.
func TestHealthSaysWhileHerdrCannotBeReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		o := &outage{s: s}
		cfg := presenceConfig(s, nil)
		cfg.Client = &herdr.Client{Socket: s.SocketPath(), Dial: o.Dial}
		const claim = `reporting to pane w1:p1 as custom:herdr-pi (agent "pi")`
		o.start()
		down := time.Now()
		p := herdr.StartPresence(cfg)
		defer p.Close(context.Background())
		p.Report("blocked", "approve deploy")

		away := func(when string, since time.Time) {
			t.Helper()
			time.Sleep(10 * time.Second)
			synctest.Wait()
			want := "not reaching Herdr since " + since.Format(time.TimeOnly) + ": herdr socket " + s.SocketPath() + " refuses connections"
			if h := p.Health(); !strings.HasPrefix(h, want) || !strings.HasSuffix(h, `the state goes to pane w1:p1 as custom:herdr-pi (agent "pi") within a second of Herdr answering again`) {
				t.Errorf("%s: Health %q, want it to start %q", when, h, want)
			}
		}
		back := func(when string) {
			t.Helper()
			o.down.Store(false)
			time.Sleep(time.Second)
			synctest.Wait()
			if h := p.Health(); h != claim {
				t.Errorf("%s: Health %q, want %q", when, h, claim)
			}
			if st := s.Pane(s.PaneID()).Status; st != "blocked" {
				t.Errorf("%s: pane %q", when, st)
			}
		}
		away("Herdr not started yet", down)
		back("Herdr started")
		o.start()
		down = time.Now()
		away("Herdr gone mid-run", down)
		back("Herdr back")
	})
}

// A hung Herdr can keep the event stream it opened while every report
// times out: Health says so as well, and goes back to the claim once a
// report gets through.
func TestHealthSaysWhileHerdrHangsOnReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		const claim = `reporting to pane w1:p1 as custom:herdr-pi (agent "pi")`
		time.Sleep(time.Second)
		synctest.Wait()
		if h := p.Health(); h != claim {
			t.Fatalf("before the fault: Health %q, want %q", h, claim)
		}

		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"pane.report_agent"}})
		hung := time.Now()
		p.Report("blocked", "approve deploy")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := "not reaching Herdr since " + hung.Format(time.TimeOnly) + ": herdr socket " + s.SocketPath() + ": no reply to pane.report_agent"
		if h := p.Health(); !strings.HasPrefix(h, want) {
			t.Errorf("while reports hang: Health %q, want it to start %q", h, want)
		}

		s.SetFault(herdrtest.Fault{})
		time.Sleep(time.Minute)
		synctest.Wait()
		if h := p.Health(); h != claim {
			t.Errorf("once reports get through: Health %q, want %q", h, claim)
		}
		if st := s.Pane(s.PaneID()).Status; st != "blocked" {
			t.Errorf("pane %q", st)
		}
	})
}

// A pane Herdr does not have (HERDR_PANE_ID left over from another
// session): Herdr answers every report with pane_not_found, and Health
// says that, not "reporting to pane …".
func TestHealthSaysWhenHerdrRejectsTheReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		cfg := inMemory(presenceConfig(s, nil), s)
		cfg.PaneID = "w9:p9"
		p := herdr.StartPresence(cfg)
		defer p.Close(context.Background())
		p.Report("blocked", "approve deploy")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := "Herdr rejects the reports: herdr at " + s.SocketPath() + " refused pane.report_agent: pane w9:p9 not found (pane_not_found)"
		if h := p.Health(); !strings.HasPrefix(h, want) {
			t.Errorf("Health %q, want it to start %q", h, want)
		}
	})
}

// Herdr that stops hanging and answers the retried report with a refusal
// is reached: Health says it rejects the reports, not that it is away.
func TestHealthSaysWhenHerdrComesBackRejecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		time.Sleep(time.Second)
		synctest.Wait()

		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"pane.report_agent"}})
		p.Report("blocked", "approve deploy")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if h := p.Health(); !strings.HasPrefix(h, "not reaching Herdr since ") {
			t.Fatalf("while reports hang: Health %q", h)
		}

		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.report_agent"},
			Reply: map[string]any{"error": map[string]any{"code": "invalid_agent", "message": "agent label must not be empty"}}})
		time.Sleep(time.Minute)
		synctest.Wait()
		want := "Herdr rejects the reports: herdr at " + s.SocketPath() + " refused pane.report_agent: agent label must not be empty (invalid_agent)"
		if h := p.Health(); !strings.HasPrefix(h, want) {
			t.Errorf("once Herdr answers with a refusal: Health %q, want it to start %q", h, want)
		}
	})
}
