package herdr

import (
	"encoding/json"
	"strconv"
	"strings"
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
		`{"event":"events_lost","data":{"type":"events_lost","dropped":3}}`,
		`{"event":"events_lost"}`, `{"event":"events_lost","data":7}`, `{"event":"events.lost","data":{"count":-1,"lost":2}}`,
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
		if ev.Dropped < 0 || ev.Dropped != 0 && ev.Name != EventsLost {
			t.Fatalf("dropped count %d on %s", ev.Dropped, ev.Name)
		}
		// Canonical form is stable: canonicalizing twice changes nothing.
		c := canonical(ev.Data)
		if canonical([]byte(c)) != c {
			t.Fatalf("canonical form not stable: %s", c)
		}
	})
}

// FuzzCapabilities checks that ping's capabilities never fail to decode,
// whatever Herdr puts there, and that a capability reads on exactly when
// it is true or a number other than zero.
func FuzzCapabilities(f *testing.F) {
	for _, s := range []string{
		`{"live_handoff":true,"detached_server_daemon":false}`,
		`{"live_handoff":false,"detached_server_daemon":true,"endpoint_protocol_generation":2}`,
		`{"live_handoff":1,"detached_server_daemon":0}`,
		`{"live_handoff":"yes","x":[1],"y":{"z":null}}`,
		`{"live_handoff":-0.0,"detached_server_daemon":1e400}`,
		`null`, `7`, `[]`, `"x"`, `{}`, `{"live_handoff":nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Capabilities
		if err := c.UnmarshalJSON(b); err != nil {
			t.Fatalf("capabilities %q failed: %v", b, err)
		}
		for name, raw := range c.Values {
			if !json.Valid(raw) {
				t.Fatalf("kept a value that is not JSON: %s=%q", name, raw)
			}
			want := false
			switch v := strings.TrimSpace(string(raw)); {
			case v == "true":
				want = true
			case len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9'):
				n, err := strconv.ParseFloat(v, 64)
				want = err == nil && n != 0 // out of float64's range: not a number it reads
			}
			if c.On(name) != want {
				t.Fatalf("%s=%s reads %v, want %v", name, raw, c.On(name), want)
			}
		}
		if c.LiveHandoff != c.On("live_handoff") || c.DetachedServerDaemon != c.On("detached_server_daemon") {
			t.Fatalf("fields disagree with the values: %+v", c)
		}
		// Written back and read again, the values stay the same.
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var again Capabilities
		_ = json.Unmarshal(out, &again)
		if c.Values != nil && len(again.Values) != len(c.Values) {
			t.Fatalf("round trip %s → %s", b, out)
		}
	})
}
