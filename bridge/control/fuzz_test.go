package control

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode: no input makes Decode panic; whatever it accepts survives an
// encode/decode round trip unchanged, and every accepted event line parses
// into an event or a clean error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","token":"abc","role":"probe","pid":1,"version":1}`,
		`{"type":"event","name":"session_start","data":{"reason":"startup","sessionFile":"/x"}}`,
		`{"type":"event","name":"pi:waiting-for-user-input","data":{"source":"s","id":"i","waiting":true}}`,
		`{"type":"event","name":"herdr:blocked","data":{"active":[],"label":"x"}}`,
		`{"type":"event","name":"permissions:forwarded_decision","data":{"forwarding":{},"requestId":"r","responderSessionId":"p","respondedAt":1e308,"resolution":"x","result":"allow"}}`,
		`{"type":"request","id":"1","method":"waiting","params":{"action":"start","source":"s","id":"i"}}`,
		`{"type":"response","id":"1","ok":true,"result":{"state":"idle"}}`,
		`{"type":"progress","id":"1","data":{"event":"launched","pane_id":"w1:p2"}}`,
		`{"type":"cancel","id":"1"}`, `{"type":"cancel","id":"1","data":{}}`, `{"type":"progress","id":"","data":{}}`,
		`{"type":"hello","token":"\u0000"}`,
		`{"type":"event"}{"type":"event"}`,
		`null`, `[]`, `{"type":7}`, "\xff\xfe", `{"type":"hello","token":"t","role":"root"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			return
		}
		b, err := Encode(m)
		if err != nil {
			if len(line) < MaxLine/2 {
				t.Fatalf("accepted line does not encode: %v", err)
			}
			return
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoded line %q rejected: %v", b, err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(m2)) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
		if m.Type == TypeEvent {
			_, _ = ParseEvent(m.Name, m.Data)
		}
	})
}

// normalize compacts raw JSON fields so formatting differences do not
// count as changes.
func normalize(m Message) Message {
	for _, p := range []*json.RawMessage{&m.Data, &m.Params, &m.Result} {
		if len(*p) == 0 {
			continue
		}
		*p = sameJSON(*p)
	}
	return m
}

// sameJSON writes raw JSON one way for whatever means the same: through a
// value when it decodes into one, else (a number beyond float64, say) as
// json.Marshal writes a RawMessage — compacted, with <, >, & and the line
// separators in strings escaped.
func sameJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) == nil {
		b, _ := json.Marshal(v)
		return b
	}
	var c, h bytes.Buffer
	_ = json.Compact(&c, raw)
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes()
}

// FuzzParseEvent: payloads of any shape never panic the event decoder.
func FuzzParseEvent(f *testing.F) {
	names := []string{EvSessionStart, EvSessionShutdown, EvAgentStart, EvAgentEnd, EvAgentSettled, EvCompactionStart, EvCompactionEnd, EvUIPromptStart, EvUIPromptEnd,
		EvWaitingForInput, EvHerdrBlocked, EvAskStarted, EvAskCompleted, EvPermissionPrompt, EvPermissionDecided, EvPermissionForward, EvChannelEventsLost}
	for i, n := range names {
		f.Add(uint8(i), []byte(`{"source":"s","id":"i","waiting":true,"requestId":"r","forwarding":{},"flowId":"f","active":1}`))
		f.Add(uint8(i), []byte(`null`))
		_ = n
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := names[int(which)%len(names)]
		ev, err := ParseEvent(name, data)
		if err == nil && ev.EventName() != name {
			t.Fatalf("%s decoded as %s", name, ev.EventName())
		}
	})
}
