package herdrtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// One fake per protocol: ping says which, and answers capabilities the
// way that Herdr does (a number among them on 0.9).
func TestPingPerProtocol(t *testing.T) {
	for _, tc := range []struct {
		protocol int
		want     string
	}{
		{20, `{"id":"p","result":{"capabilities":{"detached_server_daemon":false,"live_handoff":false},"protocol":20,"type":"pong","version":"0.8.0"}}`},
		{22, `{"id":"p","result":{"capabilities":{"detached_server_daemon":false,"endpoint_protocol_generation":2,"live_handoff":false},"protocol":22,"type":"pong","version":"0.9.3"}}`},
	} {
		s := Start(t, Options{Protocol: tc.protocol})
		if l, _ := send(t, s, `{"id":"p","method":"ping","params":{}}`); l != tc.want {
			t.Errorf("protocol %d: ping answered\n  %s\nwant\n  %s", tc.protocol, l, tc.want)
		}
	}
	s := Start(t, Options{Protocol: 22, Capabilities: map[string]any{"live_handoff": 1}})
	if l, _ := send(t, s, `{"id":"p","method":"ping","params":{}}`); !strings.Contains(l, `"capabilities":{"live_handoff":1}`) {
		t.Errorf("scripted capabilities: %s", l)
	}
}

// Protocol 22 keeps the request id on an error for a request it cannot
// read; protocol 20 answers "". Both reject the same requests.
func TestUnreadableRequestKeepsItsIDFromProtocol22(t *testing.T) {
	for _, protocol := range []int{20, 22} {
		s := Start(t, Options{Protocol: protocol})
		s.ExpectInvalidRequests()
		id, code, _ := errCode(call(t, s, `{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"pi","state":"done"}}`))
		want := map[int]string{20: "", 22: "a"}[protocol]
		if code != "invalid_request" || id != want {
			t.Errorf("protocol %d: id=%q code=%q, want invalid_request under id %q", protocol, id, code, want)
		}
		// An id that is not a string cannot be kept by either.
		if id, code, _ := errCode(call(t, s, `{"id":1,"method":"ping","params":{}}`)); code != "invalid_request" || id != "" {
			t.Errorf("protocol %d, numeric id: id=%q code=%q", protocol, id, code)
		}
	}
}

// Protocol 22 reads resume_argv, a list of strings, and rejects anything
// else there; protocol 20 ignores the key like every unknown one.
func TestResumeArgvPerProtocol(t *testing.T) {
	const argv = `["herdr-pi","wrap","pi","--session","/s/a.jsonl"]`
	report := func(seq int, resume string) string {
		return `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"idle","seq":` +
			jsonNum(seq) + `,"resume_argv":` + resume + `}}`
	}
	s20 := Start(t)
	if m := call(t, s20, report(1, argv)); m["result"] == nil {
		t.Fatalf("protocol 20 refused an unknown key: %v", m)
	}
	if m := call(t, s20, report(2, `7`)); m["result"] == nil {
		t.Fatalf("protocol 20 read resume_argv: %v", m)
	}
	if c := s20.Reports("w1:p1"); len(c) != 2 || c[0].ResumeArgv != nil || !c[0].Applied {
		t.Errorf("protocol 20 calls %+v", c)
	}

	s22 := Start(t, Options{Protocol: 22})
	s22.ExpectInvalidRequests()
	if m := call(t, s22, report(1, argv)); m["result"] == nil {
		t.Fatalf("protocol 22 refused resume_argv: %v", m)
	}
	for _, bad := range []string{`7`, `"herdr-pi wrap pi"`, `[1,2]`, `{"a":"b"}`} {
		if id, code, _ := errCode(call(t, s22, report(5, bad))); code != "invalid_request" || id != "r" {
			t.Errorf("resume_argv %s: id=%q code=%q, want invalid_request", bad, id, code)
		}
	}
	c := s22.Reports("w1:p1")
	if len(c) != 1 || strings.Join(c[0].ResumeArgv, " ") != "herdr-pi wrap pi --session /s/a.jsonl" {
		t.Errorf("protocol 22 calls %+v", c)
	}
}

// Protocol 20 replays retained generic events to a new subscription;
// protocol 22 starts at the live edge.
func TestReplayOnSubscribeOnlyUnderProtocol20(t *testing.T) {
	for _, protocol := range []int{20, 22} {
		s := Start(t, Options{Protocol: protocol, NoEventPacing: true})
		call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}`)
		s.ExitPane("w1:p2")
		st := subscribeRaw(t, s, `[{"type":"pane.exited"},{"type":"pane.created"}]`)
		if l := st.next(t, time.Second); !strings.Contains(l, "subscription_started") {
			t.Fatalf("ack %q", l)
		}
		got := st.next(t, 300*time.Millisecond)
		if replayed := got != ""; replayed != (protocol == 20) {
			t.Errorf("protocol %d: after subscribing got %q", protocol, got)
		}
		if protocol == 22 {
			call(t, s, `{"id":"s","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}`)
			if l := st.next(t, time.Second); !strings.Contains(l, `"pane_id":"w1:p3"`) {
				t.Errorf("live event %q", l)
			}
		}
	}
}

// A subscriber that falls behind loses what waited for it; protocol 22
// says so with events_lost, protocol 20 says nothing.
func TestLoseEvents(t *testing.T) {
	for _, protocol := range []int{20, 22} {
		s := Start(t, Options{Protocol: protocol}) // paced: events wait in the ring
		st := subscribeRaw(t, s, `[{"type":"pane.created"}]`)
		st.next(t, time.Second)
		s.mu.Lock()
		for i := 0; i < 3; i++ {
			s.emit("pane.created", map[string]any{"pane_id": "w1:p9", "workspace_id": "w1"})
		}
		s.loseEventsLocked()
		s.mu.Unlock()
		l := st.next(t, 500*time.Millisecond)
		switch {
		case protocol == 22 && l != `{"data":{"dropped":3,"type":"events_lost"},"event":"events_lost"}`:
			t.Errorf("protocol 22: %q, want events_lost for 3", l)
		case protocol == 20 && l != "":
			t.Errorf("protocol 20: %q after losing the events", l)
		}
	}
}

// herdr#4020: Herdr's detection clears a custom report labelled pi and,
// while it holds the pane, drops such reports; once it lets go the next
// report applies.
func TestLocalDetectionOverridesACustomPi(t *testing.T) {
	s := Start(t, Options{Protocol: 22, NoEventPacing: true})
	st := subscribeRaw(t, s, `[{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]`)
	st.next(t, time.Second)
	report := func(seq int, state string) {
		call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"`+state+`","seq":`+jsonNum(seq)+`}}`)
	}
	report(1, "working")
	st.next(t, time.Second)
	s.LocalDetection("w1:p1", "pi", "idle")
	if l := st.next(t, time.Second); !strings.Contains(l, `"agent":"pi","agent_status":"idle"`) {
		t.Errorf("detection took the pane: %q", l)
	}
	report(2, "blocked")
	if c := s.Reports("w1:p1"); !c[1].Accepted || c[1].Applied {
		t.Errorf("a report while detection holds: %+v", c[1])
	}
	s.EndLocalDetection("w1:p1")
	if l := st.next(t, time.Second); l != `{"data":{"agent_status":"unknown","pane_id":"w1:p1","workspace_id":"w1"},"event":"pane.agent_status_changed"}` {
		t.Errorf("detection let go: %q", l)
	}
	report(3, "blocked")
	if p := s.Pane("w1:p1"); p.Status != "blocked" || p.Source != "custom:t" {
		t.Errorf("pane after detection %+v", p)
	}
	// The shape of the issue: cleared at once, no agent left.
	s.LocalDetection("w1:p1", "pi", "")
	if p := s.Pane("w1:p1"); p.Status != "unknown" || p.Agent != "" {
		t.Errorf("pane after a clear %+v", p)
	}
}

// Herdr 0.9 sets TERM_PROGRAM=herdr in new panes (landscape.md §9); 0.8
// leaves it unset (TestRealPaneShellHasHerdrsEnvironment).
func TestRealPaneNamesHerdrFromProtocol22(t *testing.T) {
	s := Start(t, Options{Protocol: Protocol22, NoEventPacing: true, RealPanes: &RealPanes{Cols: 120, Rows: 30}})
	c := herdr.NewClient(s.SocketPath())
	if err := c.PaneSendInput(ctxFor(t), "w1:p1", `echo "<${TERM_PROGRAM-unset}>"; echo DO""NE`, "Enter"); err != nil {
		t.Fatal(err)
	}
	if out := s.WaitForText(t, "w1:p1", "DONE", paneWait); !slices.Contains(lines(out), "<herdr>") {
		t.Errorf("TERM_PROGRAM is not herdr in a protocol-22 pane:\n%s", out)
	}
}
