package herdrtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Only the herdr: sources Herdr knows are its own integrations; any other
// source is custom and takes the pane (§6.2).
func TestUnknownHerdrSourceIsCustom(t *testing.T) {
	s := Start(t)
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"herdr:pi","agent":"pi","state":"working","seq":1}}`)
	if st := s.Pane("w1:p1"); st.Agent != "" {
		t.Errorf("herdr:pi without a detected pi process took the pane: %+v", st)
	}
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"herdr:companion","agent":"pi","state":"working","seq":1}}`)
	if st := s.Pane("w1:p1"); st.Source != "herdr:companion" || st.Status != "working" {
		t.Errorf("a custom herdr:companion report was not applied: %+v", st)
	}
}

// A release clears the authority only while the pane shows the released
// agent (§4.2): under a detection of another agent it changes nothing.
func TestReleaseNeedsTheEffectiveLabel(t *testing.T) {
	s := Start(t)
	call(t, s, `{"id":"r","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working","seq":1}}`)
	s.LocalDetection("w1:p1", "claude", "idle")
	call(t, s, `{"id":"x","method":"pane.release_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","seq":2}}`)
	if rs := s.Releases("w1:p1"); len(rs) != 1 || rs[0].Applied {
		t.Errorf("release under claude's detection applied: %+v", rs)
	}
	s.EndLocalDetection("w1:p1")
	if st := s.Pane("w1:p1"); st.Agent != "pi" || st.Status != "working" {
		t.Errorf("custom:t's authority did not outlive the detection: %+v", st)
	}
}

// A pane that goes from working to idle outside the focused tab reads done
// until its tab is focused (§9.3); in the focused tab idle stays idle.
func TestFinishOutOfSightReadsDoneUntilFocused(t *testing.T) {
	s := Start(t, Options{NoEventPacing: true})
	call(t, s, `{"id":"w","method":"workspace.create","params":{}}`) // w2, not focused
	st := subscribeRaw(t, s, `[{"type":"pane.agent_status_changed","pane_id":"w2:p1"}]`)
	st.next(t, time.Second)
	for i, pane := range []string{"w2:p1", "w1:p1"} {
		for j, state := range []string{"working", "idle"} {
			call(t, s, fmt.Sprintf(`{"id":"r","method":"pane.report_agent","params":{"pane_id":%q,"source":"custom:t","agent":"pi","state":%q,"seq":%d}}`, pane, state, 10*i+j+1))
		}
	}
	status := func(pane string) string {
		m := call(t, s, `{"id":"g","method":"pane.get","params":{"pane_id":"`+pane+`"}}`)
		return m["result"].(map[string]any)["pane"].(map[string]any)["agent_status"].(string)
	}
	if got := status("w2:p1"); got != "done" {
		t.Errorf("w2:p1 finished out of sight reads %s, want done", got)
	}
	if got := status("w1:p1"); got != "idle" {
		t.Errorf("w1:p1 finished in the focused tab reads %s, want idle", got)
	}
	for _, want := range []string{"working", "done"} {
		if l := st.next(t, time.Second); !strings.Contains(l, `"agent_status":"`+want+`"`) {
			t.Errorf("status event %q, want %s", l, want)
		}
	}
	call(t, s, `{"id":"f","method":"tab.focus","params":{"tab_id":"w2:t1"}}`)
	if got := status("w2:p1"); got != "idle" {
		t.Errorf("w2:p1 after tab.focus reads %s, want idle", got)
	}
	if l := st.next(t, time.Second); !strings.Contains(l, `"agent_status":"idle"`) {
		t.Errorf("status event after tab.focus %q, want idle", l)
	}
}
