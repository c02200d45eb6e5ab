package herdrtest

import (
	"strings"
	"testing"
)

// Lines Go's encoding/json and the schema both take, but Herdr's typed
// decoding refuses: they must not reach a handler.
func TestWireRulesBeyondTheSchema(t *testing.T) {
	s := Start(t)
	s.ExpectInvalidRequests()
	report := `"pane_id":"w1:p1","source":"custom:t","agent":"pi","state":"working","seq":1`
	for _, line := range []string{
		// §2.1: a duplicated method does not parse; Go would take the last.
		`{"id":"a","method":"pane.foo","method":"ping","params":{}}`,
		`{"id":"a","id":"b","method":"ping","params":{}}`,
		`{"id":"a","method":"ping","params":{},"params":{}}`,
		`{"id":"a","method":"pane.report_agent","params":{` + report + `,"state":"idle"}}`,
		// §1.3: UTF-8 only; Go would read the byte as U+FFFD.
		`{"id":"a","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"custom:t","agent":"p` + "\xff" + `i","state":"working"}}`,
	} {
		id, code, msg := errCode(call(t, s, line))
		if code != "invalid_request" || id != "" || !strings.HasPrefix(msg, "invalid request: ") {
			t.Errorf("%q\n  got id=%q code=%q msg=%q, want invalid_request with an empty id", line, id, code, msg)
		}
	}
	if got := len(s.Reports("w1:p1")); got != 0 {
		t.Errorf("%d refused reports reached the handler", got)
	}
	if got := len(s.Violations()); got != 5 {
		t.Errorf("%d violations recorded, want 5: %q", got, s.Violations())
	}
	// Keys Herdr does not know are ignored, even twice (§2.1).
	if m := call(t, s, `{"id":"x","method":"pane.report_agent","params":{`+report+`,"extra":1,"extra":2},"more":1,"more":2}`); m["result"] == nil {
		t.Errorf("duplicated unknown keys: %v", m)
	}
}
