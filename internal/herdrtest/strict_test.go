package herdrtest

import (
	"strings"
	"testing"
)

// The fake must refuse what Herdr refuses of the requests bridge/herdr
// sends, under both protocols, else a broken request passes every test
// and fails only against the real Herdr. Each line breaks the contract
// (herdr-socket-api.md, herdr-api.schema.json) in one place.
func TestRefusesBrokenBridgeRequests(t *testing.T) {
	const pane = `"pane_id":"w1:p1"`
	for _, tc := range []struct{ name, line string }{
		{"release_agent without agent", `{"id":"a","method":"pane.release_agent","params":{` + pane + `,"source":"custom:t","seq":5}}`},
		{"report_agent seq as a string", `{"id":"a","method":"pane.report_agent","params":{` + pane + `,"source":"custom:t","agent":"pi","state":"idle","seq":"5"}}`},
		{"report_agent message as a number", `{"id":"a","method":"pane.report_agent","params":{` + pane + `,"source":"custom:t","agent":"pi","state":"idle","message":7}}`},
		{"report_agent state padded", `{"id":"a","method":"pane.report_agent","params":{` + pane + `,"source":"custom:t","agent":"pi","state":"idle "}}`},
		{"status subscription without pane_id", `{"id":"a","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.agent_status_changed"}]}}`},
		{"status subscription with an unknown status", `{"id":"a","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.agent_status_changed",` + pane + `,"agent_status":"busy"}]}}`},
		{"subscriptions not a list", `{"id":"a","method":"events.subscribe","params":{"subscriptions":{"type":"pane.exited"}}}`},
		{"unknown method", `{"id":"a","method":"pane.report_agents","params":{}}`},
		{"split to the left", `{"id":"a","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"left"}}`},
		{"notification with an unknown sound", `{"id":"a","method":"notification.show","params":{"title":"t","sound":"beep"}}`},
		{"metadata tokens as a list", `{"id":"a","method":"pane.report_metadata","params":{` + pane + `,"source":"custom:t","tokens":["a"]}}`},
		{"release_agent id as a number", `{"id":3,"method":"pane.release_agent","params":{` + pane + `,"source":"custom:t","agent":"pi"}}`},
	} {
		for _, protocol := range []int{20, Protocol22} {
			s := Start(t, Options{Protocol: protocol})
			s.ExpectInvalidRequests()
			_, code, msg := errCode(call(t, s, tc.line))
			if code != "invalid_request" {
				t.Errorf("%s (protocol %d): code %q (%s), want invalid_request\n  %s", tc.name, protocol, code, msg, tc.line)
			}
			if !strings.HasPrefix(msg, "invalid request: ") {
				t.Errorf("%s (protocol %d): message %q", tc.name, protocol, msg)
			}
			if len(s.Violations()) == 0 {
				t.Errorf("%s (protocol %d): not recorded as a violation", tc.name, protocol)
			}
			s.Close()
		}
	}
}

// Herdr 0.9 knows resume_argv, so like every field its typed decoding
// knows, a second one fails the request (wireCheck); protocol 20 ignores
// the key however often it comes.
func TestDuplicateResumeArgvFromProtocol22(t *testing.T) {
	const line = `{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"idle","resume_argv":["a"],"resume_argv":["b"]}}`
	s20 := Start(t)
	if m := call(t, s20, line); m["result"] == nil {
		t.Errorf("protocol 20 refused a repeated unknown key: %v", m)
	}
	s22 := Start(t, Options{Protocol: Protocol22})
	s22.ExpectInvalidRequests()
	if id, code, msg := errCode(call(t, s22, line)); code != "invalid_request" || id != "a" || !strings.Contains(msg, "duplicate field `resume_argv`") {
		t.Errorf("protocol 22: id=%q code=%q msg=%q, want invalid_request for the duplicate resume_argv", id, code, msg)
	}
	if c := s22.Reports("w1:p1"); len(c) != 0 {
		t.Errorf("protocol 22 applied the broken report: %+v", c)
	}
}
