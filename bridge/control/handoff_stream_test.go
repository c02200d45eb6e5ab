package control

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// handoffs is a Handoffs that plays a script: it reports the asks it got,
// sends progress, then waits for release (or the asker's cancel).
type handoffs struct {
	asks    chan HandoffAsk
	release chan Progress
	ended   chan error // the cause the call ended with (nil: released)
	steps   []Progress
}

func newHandoffs(steps ...Progress) *handoffs {
	return &handoffs{asks: make(chan HandoffAsk, 4), release: make(chan Progress, 1), ended: make(chan error, 4), steps: steps}
}

func (h *handoffs) Handoff(ctx context.Context, ask HandoffAsk, progress func(Progress)) (Progress, error) {
	h.asks <- ask
	switch ask.RunID {
	case "refuse":
		return Progress{}, errors.New("no live attempt of run refuse here")
	case "panic":
		panic("handoff boom")
	}
	for _, p := range h.steps {
		progress(p)
	}
	select {
	case p := <-h.release:
		h.ended <- nil
		return p, nil
	case <-ctx.Done():
		h.ended <- context.Cause(ctx)
		return Progress{Event: ProgressHandback, Reason: HandbackAborted, Error: context.Cause(ctx).Error()}, nil
	}
}

func handoffFixture(t *testing.T, h *handoffs) (*fixture, *Client) {
	t.Helper()
	f := start(t, func(c *Config) { c.Handoffs = h })
	c, _ := f.clientWithin(t, 5*time.Second)
	return f, c
}

var ask = HandoffAsk{RunID: "3f0c9a2e", SessionID: "s-1", OwnerPID: 42, Hold: true, Place: "split", CallerPane: "w1:p3", HerdrSocket: "/tmp/h.sock", Label: "herdr-pi open"}

// The stream carries each change in order, then the handback; the wrapper
// gets the ask as sent (its version set by the client).
func TestHandoffStreamsProgressThenTheHandback(t *testing.T) {
	steps := []Progress{
		{Event: ProgressOrdered, RunID: "3f0c9a2e", Label: "finder", Handoff: "h1"},
		{Event: ProgressLaunched, PaneID: "w1:p2", Command: []string{"/bin/herdr-pi", "wrap", "--", "node"}, Env: []string{"A=b"}, Cwd: "/p", AgentPID: 77},
		{Event: ProgressWorking}, {Event: ProgressBlocked}, {Event: ProgressIdle},
	}
	h := newHandoffs(steps...)
	_, c := handoffFixture(t, h)
	want := Progress{Event: ProgressHandback, Reason: HandbackIdle, Transferred: true, LastStopReason: "stop"}
	h.release <- want
	var got []Progress
	final, err := c.Handoff(context.Background(), ask, func(p Progress) { got = append(got, p) })
	if err != nil {
		t.Fatal(err)
	}
	if a := <-h.asks; a != func() HandoffAsk { x := ask; x.Version = HandoffVersion; return x }() {
		t.Fatalf("the wrapper got %+v", a)
	}
	if dump(got) != dump(steps) || dump(final) != dump(want) {
		t.Fatalf("progress %s\nfinal %s", dump(got), dump(final))
	}
}

// A refusal is the call's error, in the wrapper's words.
func TestHandoffRefusalIsTheError(t *testing.T) {
	h := newHandoffs()
	_, c := handoffFixture(t, h)
	x := ask
	x.RunID = "refuse"
	if _, err := c.Handoff(context.Background(), x, nil); err == nil || err.Error() != "no live attempt of run refuse here" {
		t.Fatalf("err %v", err)
	}
}

// A panic in the wrapper's handoff runs on a connection's goroutine, where
// nothing of the wrapper's would catch it; escaping, it killed the wrapper
// with the terminal raw (the test binary dies instead of failing here).
// The asker is answered with an error that says where it failed, the
// panic is logged with its stack, and the server takes the next handoff.
func TestAPanickingHandoffFailsThatHandoffOnly(t *testing.T) {
	h := newHandoffs()
	f, c := handoffFixture(t, h)
	x := ask
	x.RunID = "panic"
	if _, err := c.Handoff(context.Background(), x, nil); err == nil || !strings.Contains(err.Error(), "failed inside the pane's herdr-pi wrapper") {
		t.Fatalf("err %v, want the wrapper's failure", err)
	}
	f.logs.waitFor(t, "control: a live handoff panicked (this handoff fails; the wrapper goes on): handoff boom")
	c2, _ := f.clientWithin(t, 5*time.Second)
	x.RunID = "refuse"
	if _, err := c2.Handoff(context.Background(), x, nil); err == nil || err.Error() != "no live attempt of run refuse here" {
		t.Fatalf("the next handoff: err %v", err)
	}
}

// Cancelling the asker's context cancels the wrapper's handoff, and the
// asker still hears the handback that says so.
func TestHandoffCancelReachesTheWrapper(t *testing.T) {
	h := newHandoffs(Progress{Event: ProgressOrdered})
	_, c := handoffFixture(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	final, err := c.Handoff(ctx, ask, func(p Progress) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	if cause := <-h.ended; !errors.Is(cause, ErrAskerGone) {
		t.Fatalf("the wrapper's handoff ended with %v", cause)
	}
	if final.Event != ProgressHandback || final.Reason != HandbackAborted {
		t.Fatalf("final %+v", final)
	}
}

// An asker that goes away (its connection closes) cancels the handoff too.
func TestHandoffAskerGoneCancels(t *testing.T) {
	h := newHandoffs()
	f := start(t, func(c *Config) { c.Handoffs = h })
	r := f.raw(t)
	r.hello(t, f.tok, RoleClient)
	r.line(t, `{"type":"request","id":"7","method":"handoff","params":{"version":1,"run_id":"r","session_id":"s","owner_pid":3}}`)
	<-h.asks
	r.Close()
	if cause := <-h.ended; !errors.Is(cause, ErrAskerGone) {
		t.Fatalf("the wrapper's handoff ended with %v", cause)
	}
}

// Bad asks are refused before the wrapper hears of them; a wrapper without
// the live handoff says so.
func TestHandoffAsksAreChecked(t *testing.T) {
	h := newHandoffs()
	f := start(t, func(c *Config) { c.Handoffs = h })
	for _, c := range []struct{ params, want string }{
		{`{"version":2,"run_id":"r","session_id":"s","owner_pid":3}`, "different builds"},
		{`{"version":1,"run_id":"r","session_id":"s","owner_pid":0}`, "owner_pid"},
		{`{"version":1,"run_id":"","session_id":"s","owner_pid":3}`, "runId is empty"},
		{`{"version":1,"run_id":"r","session_id":"s","owner_pid":3,"place":"moon"}`, "place"},
		{`{"version":1,"run_id":"r","session_id":"s","owner_pid":3,"extra":1}`, "unknown field"},
		{`{"version":1,"run_id":"r","session_id":"s","owner_pid":3,"herdr_socket":"rel"}`, "not absolute"},
	} {
		r := f.raw(t)
		r.hello(t, f.tok, RoleClient)
		r.line(t, `{"type":"request","id":"1","method":"handoff","params":`+c.params+`}`)
		if got := r.read(t); !strings.Contains(got, `"type":"response"`) || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %s, want an error with %q", c.params, got, c.want)
		}
		r.closed(t)
	}
	select {
	case a := <-h.asks:
		t.Fatalf("the wrapper heard %+v", a)
	default:
	}
	g := start(t)
	c, ctx := g.clientWithin(t, 5*time.Second)
	if _, err := c.Handoff(ctx, ask, nil); err == nil || !strings.Contains(err.Error(), "takes no handoff requests") {
		t.Fatalf("err %v", err)
	}
}

// A progress too long for a line loses its command, not the line.
func TestHandoffProgressTooLongDropsTheCommand(t *testing.T) {
	h := newHandoffs(Progress{Event: ProgressLaunched, PaneID: "w1:p2", Command: []string{strings.Repeat("x", MaxLine)}, Cwd: "/p"})
	_, c := handoffFixture(t, h)
	h.release <- Progress{Event: ProgressHandback, Reason: HandbackExited}
	var got []Progress
	if _, err := c.Handoff(context.Background(), ask, func(p Progress) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Command != nil || !got[0].CommandOmitted || got[0].PaneID != "w1:p2" {
		t.Fatalf("progress %s", dump(got))
	}
}

func dump(v any) string {
	b, _ := jsonData(v)
	return string(b)
}

// closingHandoff is a handoff that ends as the wrapper quits: it hands back
// once the server stopped listening, as the live handoffs do when
// wrapShutdown ends them just before it closes the control socket.
type closingHandoff struct {
	path    string
	started chan struct{}
}

func (h *closingHandoff) Handoff(ctx context.Context, ask HandoffAsk, progress func(Progress)) (Progress, error) {
	close(h.started)
	for {
		c, err := net.Dial("unix", h.path)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(time.Millisecond)
	}
	return Progress{Event: ProgressHandback, Reason: HandbackAborted, OwnerGone: true, Error: "the workflow owner's Pi is gone"}, nil
}

// The wrapper quitting (its owner Pi did /quit) ends its handoffs and then
// closes the control socket: a handback the handoff gave just before still
// reaches the asking open, which otherwise read EOF and said the owner's
// wrapper died with the pane still running, neither of which was true.
func TestAHandbackGivenAsTheWrapperQuitsReachesTheAsker(t *testing.T) {
	h := &closingHandoff{started: make(chan struct{})}
	f := start(t, func(c *Config) { c.Handoffs = h })
	h.path = f.path
	c, _ := f.clientWithin(t, 5*time.Second)
	type result struct {
		p   Progress
		err error
	}
	got := make(chan result, 1)
	go func() {
		p, err := c.Handoff(context.Background(), ask, func(Progress) {})
		got <- result{p, err}
	}()
	<-h.started
	closed := make(chan struct{})
	go func() { f.srv.Close(); close(closed) }()
	r := <-got
	<-closed
	if r.err != nil || !r.p.OwnerGone || r.p.Event != ProgressHandback {
		t.Fatalf("the asker got %+v, %v; want the handback given as the wrapper quit", r.p, r.err)
	}
}

// Two handoffs still running as the wrapper quits (two opens asking, the
// live handoff not yet ended): Close waits its one bound for their answers,
// then closes their connections, which ends both. A bound that ran out on
// the first stream must not leave Close waiting on the second for ever.
func TestCloseWithTwoRunningHandoffsEnds(t *testing.T) {
	h := newHandoffs()
	f, c1 := handoffFixture(t, h)
	c2, _ := f.clientWithin(t, 5*time.Second)
	answers := make(chan error, 2)
	for _, c := range []*Client{c1, c2} {
		go func() {
			_, err := c.Handoff(context.Background(), ask, func(Progress) {})
			answers <- err
		}()
	}
	<-h.asks
	<-h.asks
	closed := make(chan struct{})
	go func() { f.srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * streamAnswerWait):
		t.Fatalf("Close never returned with two handoffs running (it waits its bound once, for all streams)")
	}
	<-answers
	<-answers
	if got := len(h.ended); got != 2 {
		t.Fatalf("%d of the 2 handoffs ended", got)
	}
}
