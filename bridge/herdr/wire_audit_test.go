package herdr

import (
	"context"
	"slices"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// These pin promises of the wire layer that no other test could fail on
// (found by hand mutation).

// A line carrying both a result and an error is not a Herdr response
// (herdr-socket-api.md §2.3: exactly one of them); reading it as an error
// would refuse a report Herdr may have taken.
func TestReplyWithResultAndErrorIsGarbage(t *testing.T) {
	_, err := parseReply([]byte(`{"id":"1","result":{"type":"ok"},"error":{"code":"x","message":"y"}}`))
	if err == nil {
		t.Fatal("a reply with both result and error was accepted")
	}
}

// An error carries a code and a message (§2.3); one without either is not
// Herdr's, and would show the person an empty reason.
func TestErrorWithoutCodeOrMessageIsGarbage(t *testing.T) {
	for _, line := range []string{
		`{"id":"1","error":{"code":"pane_not_found"}}`,
		`{"id":"1","error":{"message":"pane w9:p9 not found"}}`,
	} {
		if r, err := parseReply([]byte(line)); err == nil {
			t.Errorf("%s: accepted as %+v", line, r.Err)
		}
	}
}

// Herdr echoes the request's id (§2.3); an answer under another id is not
// the answer to this request, and a report is not delivered by it.
func TestReplyUnderAnotherIDIsNotTheAnswer(t *testing.T) {
	s := herdrtest.Start(t)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.report_agent"},
		Reply: map[string]any{"id": "herdr-pi:0:other", "result": map[string]any{"type": "ok"}}})
	err := NewClient(s.SocketPath()).ReportAgent(context.Background(),
		AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: StateWorking, Seq: 1})
	if KindOf(err) != FailGarbage {
		t.Fatalf("reply under another id: err %v (kind %q), want %q", err, KindOf(err), FailGarbage)
	}
}

// The subscription's acknowledgement must carry the request's id (§5.1):
// only an error may come back under another (a derived probe id).
func TestSubscriptionAckUnderAnotherIDIsGarbage(t *testing.T) {
	s := herdrtest.Start(t)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"events.subscribe"},
		Reply: map[string]any{"id": "herdr-pi:0:other", "result": map[string]any{"type": "subscription_started"}}})
	w := &Watcher{Client: NewClient(s.SocketPath()), Subscriptions: []Subscription{{Type: "pane.agent_status_changed", PaneID: s.PaneID()}}}
	acked := false
	err := w.stream(context.Background(), func() { acked = true }, func(Event) {})
	if acked || KindOf(err) != FailGarbage {
		t.Fatalf("ack under another id: acked %v, err %v (kind %q), want no ack and %q", acked, err, KindOf(err), FailGarbage)
	}
}

// events_lost is taken under both spellings, with its count when the data
// gives one (the log says "1 event", "3 events").
func TestEventsLostNamesAndCounts(t *testing.T) {
	for line, want := range map[string]int{
		`{"event":"events_lost","data":{"type":"events_lost","dropped":1}}`: 1,
		`{"event":"events.lost","data":{"lost":3}}`:                         3,
		`{"event":"events_lost"}`:                                           0,
	} {
		ev, err := parseEvent([]byte(line))
		if err != nil || ev.Name != EventsLost || ev.Dropped != want {
			t.Errorf("%s: %+v, %v; want %s with %d dropped", line, ev, err, EventsLost, want)
		}
	}
}

// A status event equal to the last one delivered for its pane is dropped
// (Run's promise): after a reconnect Herdr may repeat the pane's status,
// and each delivery costs the presence a read-back. A change, and the
// same status again after it, are delivered.
func TestRepeatedStatusEventIsDeliveredOnce(t *testing.T) {
	d := newDeduper()
	ev := func(status string) Event {
		e, err := parseEvent([]byte(`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","agent_status":"` + status + `","agent":"pi"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var got []bool
	for _, s := range []string{"working", "working", "idle", "working"} {
		got = append(got, d.fresh(ev(s)))
	}
	if want := []bool{true, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("delivered %v for working, working, idle, working; want %v", got, want)
	}
}
