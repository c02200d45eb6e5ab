package permissions

import (
	"encoding/json"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// FuzzParse: no payload makes the three parsers panic, and what they accept
// keeps the promises the tracker relies on (ids present and trimmed, a
// forwarded result that is allow or deny, a finite time).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"requestId":"r1","agentName":"a","message":"m","surface":"s","value":"v","forwarding":{"requesterAgentName":"x","requesterSessionId":"y"}}`,
		`{"resolution":"user_approved","surface":"s","value":"v","agentName":"a"}`,
		`{"requestId":" r2 ","result":"deny","resolution":"user_denied","responderSessionId":"z","respondedAt":1.5,"forwarding":{}}`,
		`{"requestId":"\u00a0","respondedAt":1e400}`,
		`[]`, `null`, `{"requestId":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if p, ok := ParsePrompt(json.RawMessage(raw)); ok && (p.RequestID == "" || p.RequestID != jstext.Trim(p.RequestID)) {
			t.Fatalf("prompt accepted with request id %q", p.RequestID)
		}
		if d, ok := ParseDecision(json.RawMessage(raw)); ok && (d.Resolution == "" || d.Surface == "" || d.Value == "") {
			t.Fatalf("decision accepted with an empty field: %+v", d)
		}
		if d, ok := ParseForwardedDecision(json.RawMessage(raw)); ok {
			if d.Result != "allow" && d.Result != "deny" || d.ResponderSessionID == "" || d.RespondedAt != d.RespondedAt {
				t.Fatalf("forwarded decision accepted: %+v", d)
			}
		}
	})
}
