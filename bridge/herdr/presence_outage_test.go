package herdr_test

import (
	"context"
	"net"
	"os"
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
