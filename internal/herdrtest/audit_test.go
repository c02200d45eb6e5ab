package herdrtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A restarted Herdr (or the new process of a live handoff) starts with an
// empty event hub: the ring is in memory and is not handed over
// (herdr-socket-api.md §5.4, §9.1). A protocol-20 subscription after
// Restart replays nothing from before it; events after it still come.
func TestRestartForgetsRetainedEvents(t *testing.T) {
	s := Start(t, Options{NoEventPacing: true})
	call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}`)
	s.ExitPane("w1:p2")
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	st := subscribeRaw(t, s, `[{"type":"pane.exited"},{"type":"pane.created"}]`)
	if l := st.next(t, time.Second); !strings.Contains(l, "subscription_started") {
		t.Fatalf("ack %q", l)
	}
	if l := st.next(t, 300*time.Millisecond); l != "" {
		t.Errorf("an event from before the restart was replayed: %q", l)
	}
	call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}`)
	if l := st.next(t, time.Second); !strings.Contains(l, `"pane_id":"w1:p3"`) {
		t.Errorf("live event after the restart %q", l)
	}
}

// The notification rate limit is the running Herdr's memory of its last
// shown toast (§4.6): a restarted Herdr shows the next one.
func TestRestartForgetsTheLastShownToast(t *testing.T) {
	now := time.Unix(1000, 0)
	s := Start(t, Options{Delivery: "herdr", Now: func() time.Time { return now }})
	show := func() string {
		m := call(t, s, `{"id":"n","method":"notification.show","params":{"title":"t"}}`)
		return m["result"].(map[string]any)["reason"].(string)
	}
	if r := show(); r != "shown" {
		t.Fatalf("first: %s", r)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(100 * time.Millisecond)
	if r := show(); r != "shown" {
		t.Errorf("first toast after a restart: %s, want shown", r)
	}
}

// An empty workspace_id is an id like any other, and names no workspace:
// Herdr resolves every id it is given (workspace_not_found, §2.3) and
// lists everything only when the key is absent or null.
func TestListsWithAnEmptyWorkspaceID(t *testing.T) {
	s := Start(t)
	for _, m := range []string{"pane.list", "tab.list"} {
		id, code, msg := errCode(call(t, s, `{"id":"l","method":"`+m+`","params":{"workspace_id":""}}`))
		if code != "workspace_not_found" || id != "l" || msg != "workspace  not found" {
			t.Errorf("%s with workspace_id \"\": id=%q code=%q msg=%q, want workspace_not_found", m, id, code, msg)
		}
		if r := call(t, s, `{"id":"l","method":"`+m+`","params":{"workspace_id":null}}`); r["result"] == nil {
			t.Errorf("%s with a null workspace_id: %v", m, r)
		}
	}
}

// A subscriber so slow that Herdr's 512-event ring moves past what it has
// not been sent yet loses those events. Herdr 0.9 (protocol 22) tells it
// with events_lost before it goes on with what the ring still holds
// (landscape.md §9); protocol 20 says nothing (§5.4).
func TestRingOverrunPerProtocol(t *testing.T) {
	for _, protocol := range []int{20, Protocol22} {
		s := Start(t, Options{Protocol: protocol}) // paced: one event per tick
		st := subscribeRaw(t, s, `[{"type":"pane.created"},{"type":"tab.created"}]`)
		if l := st.next(t, time.Second); !strings.Contains(l, "subscription_started") {
			t.Fatalf("ack %q", l)
		}
		s.mu.Lock()
		info := s.paneInfo(s.panes["w1:p1"])
		for i := 0; i < ringSize+88; i++ {
			s.emit("pane.created", map[string]any{"pane": info})
		}
		s.mu.Unlock()
		l := st.next(t, time.Second)
		switch {
		case protocol == Protocol22 && l != `{"data":{"dropped":88,"type":"events_lost"},"event":"events_lost"}`:
			t.Errorf("protocol 22: first line after the overrun %q, want events_lost for 88", l)
		case protocol == 20 && !strings.Contains(l, `"event":"pane_created"`):
			t.Errorf("protocol 20: first line after the overrun %q, want a retained pane_created", l)
		}
		if l := st.next(t, time.Second); !strings.Contains(l, `"event":"pane_created"`) {
			t.Errorf("protocol %d: then %q, want the retained events", protocol, l)
		}
		s.Close()
	}
}

// pane.agent_status_changed carries the pane's title when it has one, and
// fires when only that presentation changes (herdr-socket-api.md §5.2,
// §5.4): a display-only pane.report_metadata is seen by status
// subscribers too.
func TestStatusEventsCarryThePresentation(t *testing.T) {
	s := Start(t, Options{NoEventPacing: true})
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working","seq":1}}`)
	st := subscribeRaw(t, s, `[{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]`)
	if l := st.next(t, time.Second); !strings.Contains(l, "subscription_started") {
		t.Fatalf("ack %q", l)
	}
	meta := func(params string) {
		t.Helper()
		if m := call(t, s, `{"id":"m","method":"pane.report_metadata","params":{"pane_id":"w1:p1","source":"custom:d",`+params+`}}`); m["result"] == nil {
			t.Fatalf("report_metadata: %v", m)
		}
	}
	meta(`"agent":"pi","title":"fx #1 fixer"`)
	if l := st.next(t, time.Second); l != `{"data":{"agent":"pi","agent_status":"working","pane_id":"w1:p1","title":"fx #1 fixer","workspace_id":"w1"},"event":"pane.agent_status_changed"}` {
		t.Errorf("after a new title: %q", l)
	}
	meta(`"title":"fx #1 fixer"`)
	if l := st.next(t, 200*time.Millisecond); l != "" {
		t.Errorf("the same title again sent %q", l)
	}
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"idle","seq":2}}`)
	if l := st.next(t, time.Second); !strings.Contains(l, `"agent_status":"idle"`) || !strings.Contains(l, `"title":"fx #1 fixer"`) {
		t.Errorf("status change with a title: %q", l)
	}
	meta(`"clear_title":true`)
	if l := st.next(t, time.Second); l != `{"data":{"agent":"pi","agent_status":"idle","pane_id":"w1:p1","workspace_id":"w1"},"event":"pane.agent_status_changed"}` {
		t.Errorf("after clearing the title: %q", l)
	}
}

// pane.clear_agent_authority clears only the authority of the source it
// names, when it names one (herdr-socket-api.md §4.2): an explicit empty
// source is a name no authority has, not an absent one.
func TestClearWithAnEmptySourceClearsNothing(t *testing.T) {
	s := Start(t)
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working"}}`)
	call(t, s, `{"id":"c","method":"pane.clear_agent_authority","params":{"pane_id":"w1:p1","source":""}}`)
	if st := s.Pane("w1:p1"); st.Source != "custom:t" || st.Status != "working" {
		t.Errorf("after a clear for source \"\": %+v, want custom:t still working", st)
	}
	call(t, s, `{"id":"c","method":"pane.clear_agent_authority","params":{"pane_id":"w1:p1"}}`)
	if st := s.Pane("w1:p1"); st.Source != "" || st.Status != "unknown" {
		t.Errorf("after a clear without a source: %+v, want no authority", st)
	}
}

// A pane.report_metadata refused for the pane's token limit changes
// nothing: Herdr checks before it applies (herdr-socket-api.md §4.2).
func TestRefusedMetadataChangesNothing(t *testing.T) {
	s := Start(t)
	tokens := func(prefix string, n int) string {
		var kv []string
		for i := 0; i < n; i++ {
			kv = append(kv, fmt.Sprintf(`"%s%d":"v"`, prefix, i))
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
	for _, src := range []string{"a", "b"} {
		if m := call(t, s, `{"id":"m","method":"pane.report_metadata","params":{"pane_id":"w1:p1","source":"`+src+`","tokens":`+tokens(src, 16)+`}}`); m["result"] == nil {
			t.Fatalf("16 tokens from %s: %v", src, m)
		}
	}
	m := call(t, s, `{"id":"m","method":"pane.report_metadata","params":{"pane_id":"w1:p1","source":"b","title":"new","tokens":{"extra":"v"}}}`)
	if _, code, _ := errCode(m); code != "metadata_token_limit" {
		t.Fatalf("a 33rd token: %v, want metadata_token_limit", m)
	}
	p := call(t, s, `{"id":"g","method":"pane.get","params":{"pane_id":"w1:p1"}}`)["result"].(map[string]any)["pane"].(map[string]any)
	if tok, _ := p["tokens"].(map[string]any); p["title"] != nil || tok["extra"] != nil || len(tok) != 32 {
		t.Errorf("the refused request was applied: title %v, %d tokens, extra %v", p["title"], len(tok), tok["extra"])
	}
}
