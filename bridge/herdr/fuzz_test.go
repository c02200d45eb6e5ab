package herdr

import (
	"testing"
)

// FuzzParseReply checks that any reply line either parses into exactly one
// of a typed result or an error, or is rejected, and never panics.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","result":{"type":"pong","version":"0.8.0","protocol":20,"capabilities":null}}`,
		`{"id":"","error":{"code":"invalid_request","message":"invalid request: x"}}`,
		`{"id":"1","result":{"type":"ok"},"error":{"code":"x","message":"y"}}`,
		`{"id":1,"result":{"type":"ok"}}`,
		`{"id":"1","result":null,"error":null}`,
		`<html>`, ``, `{}`, `[]`, `{"id":"1","result":{"type":7}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseReply(line)
		if err != nil {
			return
		}
		if (r.Err == nil) == (r.ResultType == "" && r.Result == nil) {
			t.Fatalf("reply %+v is neither or both of result and error", r)
		}
		if r.Err == nil && len(r.Result) == 0 {
			t.Fatalf("result without body: %+v", r)
		}
	})
}

// FuzzParseEvent checks event lines parse or fail cleanly.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"event":"pane_exited","data":{"type":"pane_exited","pane_id":"w1:p2","workspace_id":"w1"}}`,
		`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","workspace_id":"w1","agent_status":"working","agent":"pi"}}`,
		`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","agent":null}}`,
		`{"event":"","data":{}}`, `{"event":"x","data":[]}`, `{"event":"x"}`, `garbage`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseEvent(line)
		if err != nil {
			return
		}
		if ev.Name == "" || len(ev.Data) == 0 || ev.Data[0] != '{' {
			t.Fatalf("accepted event without a name or object data: %+v", ev)
		}
		// Canonical form is stable: canonicalizing twice changes nothing.
		c := canonical(ev.Data)
		if canonical([]byte(c)) != c {
			t.Fatalf("canonical form not stable: %s", c)
		}
	})
}
