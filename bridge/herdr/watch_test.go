package herdr_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

type eventLog struct {
	mu        sync.Mutex
	events    []herdr.Event
	connects  []bool
	connected chan struct{}
}

func (l *eventLog) add(ev herdr.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) onConnect(re bool) {
	l.mu.Lock()
	l.connects = append(l.connects, re)
	l.mu.Unlock()
	select {
	case l.connected <- struct{}{}:
	default:
	}
}

func (l *eventLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		out = append(out, e.Name+":"+e.PaneID+":"+e.AgentStatus)
	}
	return out
}

func TestWatcherReconnectsAndDeliversOnce(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{NoEventPacing: true})
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	np, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{connected: make(chan struct{}, 1)}
	w := &herdr.Watcher{
		Client: c, OnConnect: log.onConnect, BackoffMin: 10 * time.Millisecond,
		Subscriptions: []herdr.Subscription{
			{Type: "pane.agent_status_changed", PaneID: s.PaneID()},
			{Type: "pane.exited"}, {Type: "pane.closed"},
		},
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx, log.add) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	<-log.connected
	report := func(state string) {
		t.Helper()
		// The identical report again until the fake answers: on a loaded
		// machine it may not within the client's 2 s, and a repeat carries
		// the same seq, so it changes the pane once.
		r := herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: state, Seq: uint64(time.Now().UnixMicro())}
		for deadline := time.Now().Add(time.Minute); ; {
			err := c.ReportAgent(ctx, r)
			var te *herdr.TransportError
			if err == nil {
				return
			}
			if !errors.As(err, &te) || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	report("working")
	s.ExitPane(np.PaneID)
	waitFor(t, func() bool { return len(log.names()) == 2 }, "two events", log.names)

	// A live handoff ends the stream; the watcher reconnects, Herdr replays
	// the retained pane_exited, and the watcher drops the replay.
	s.DropSubscriptions()
	<-log.connected
	report("blocked")
	waitFor(t, func() bool { return len(log.names()) >= 3 }, "the blocked event", log.names)
	time.Sleep(100 * time.Millisecond)
	want := []string{"pane.agent_status_changed:w1:p1:working", "pane_exited:" + np.PaneID + ":", "pane.agent_status_changed:w1:p1:blocked"}
	if got := log.names(); !equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	// Herdr restarting (socket gone for a while) is survived the same way.
	s.Crash()
	time.Sleep(50 * time.Millisecond)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	<-log.connected
	report("idle")
	waitFor(t, func() bool { return len(log.names()) == 4 }, "the idle event", log.names)
	log.mu.Lock()
	if len(log.connects) != 3 || log.connects[0] || !log.connects[1] || !log.connects[2] {
		t.Errorf("OnConnect(reconnect) calls %v, want [false true true]", log.connects)
	}
	log.mu.Unlock()
}

func TestWatcherStopsWhenThePaneIsGone(t *testing.T) {
	s := herdrtest.Start(t)
	w := &herdr.Watcher{Client: herdr.NewClient(s.SocketPath()),
		Subscriptions: []herdr.Subscription{{Type: "pane.agent_status_changed", PaneID: "w1:p9"}}}
	err := w.Run(context.Background(), func(herdr.Event) {})
	if !isCode(err, "pane_not_found") {
		t.Fatalf("Run: %v", err)
	}
}

func TestWatcherLogsOnceWhileHerdrIsAway(t *testing.T) {
	s := herdrtest.Start(t)
	s.Crash()
	logs := &logSink{}
	w := &herdr.Watcher{Client: herdr.NewClient(s.SocketPath()), Logf: logs.Logf, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Subscriptions: []herdr.Subscription{{Type: "pane.exited"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, func(herdr.Event) {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v", err)
	}
	if l := logs.all(); len(l) != 1 {
		t.Errorf("%d log lines, want 1: %q", len(l), l)
	}
}

func waitFor(t *testing.T, cond func() bool, what string, show func() []string) {
	t.Helper()
	// A bound for a failure, not a wait: a loaded machine may take seconds.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s; have %q", what, show())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
