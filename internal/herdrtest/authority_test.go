package herdrtest

import "testing"

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
