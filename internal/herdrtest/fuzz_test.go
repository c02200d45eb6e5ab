package herdrtest

import (
	"encoding/json"
	"testing"
)

// FuzzHandle feeds arbitrary request lines to the fake's dispatcher: it must
// never panic, and must always answer one well-formed line.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","method":"ping","params":{}}`,
		`{"id":"1","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.agent_status_changed","pane_id":"w1:p1","agent_status":"idle"}]}}`,
		`{"id":"1","method":"events.subscribe","params":{"subscriptions":[7,{"type":null}]}}`,
		`{"id":"1","method":"pane.split","params":{"direction":"right","env":{"":"x"}}}`,
		`{"id":"1","method":"pane.report_agent","params":{"pane_id":"w1:p1","source":"s","agent":"pi","state":"idle","seq":18446744073709551615}}`,
		`{"id":"1","method":"notification.show","params":{"title":"\u0007é"}}`,
		`{"id":"1","method":"tab.close","params":{"tab_id":"w1:t1"}}`,
		`[]`, `{"id":{}}`, `null`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(Options{NoEventPacing: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Close)
	f.Fuzz(func(t *testing.T, line []byte) {
		out, kind, sub := s.handle(0, line, "")
		if sub != nil {
			s.unsubscribe(sub)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil || (kind != "success" && kind != "error") {
			t.Fatalf("reply %q (%s) to %q", out, kind, line)
		}
	})
}
