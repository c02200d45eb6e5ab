package control

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeOwner: no owner-link line makes the decoder or the payload
// parser panic; an accepted frame survives an encode/decode round trip;
// an accepted launch keeps the invariants the wrapper relies on when it
// writes files and builds the command, and its payload round-trips too.
func FuzzDecodeOwner(f *testing.F) {
	for _, s := range []string{
		`{"type":"launch","id":"h1","data":` + okLaunch + `}`,
		`{"type":"engine","data":{"registered":false,"error":"frozen","upstream":true,"fullyInspectable":true}}`,
		`{"type":"attempt","data":{"runId":"r","sessionId":"s","sessionFile":"/f","live":true}}`,
		`{"type":"handoff_request","id":"r1","data":{"runId":"r","agentId":"r:1","attempt":1,"sessionId":"s","label":"l"}}`,
		`{"type":"handoff_request","id":"r3","data":{"runId":"r","attempt":2,"sessionId":"s","label":"l","turn":true}}`,
		`{"type":"run_ended","data":{"runId":"r","state":"completed"}}`,
		`{"type":"inspect_request","id":"r2","data":{"sessionId":"s","sessionFile":"/f","cwd":"/p","standalone":true}}`,
		`{"type":"handoff_error","id":"h1","data":{"code":"busy","error":"x"}}`,
		`{"type":"handoff_cancel","id":"h1","data":{"reason":"stopped"}}`,
		`{"type":"resumed","id":"h1","data":{"transferred":true,"continued":true}}`,
		`{"type":"tool_update","id":"c1","data":{"value":{"a":[1,2]}}}`,
		`{"type":"tool_result","id":"c1","data":{"value":null}}`,
		`{"type":"tool_error","id":"c1","data":{"error":"e"}}`,
		`{"type":"tool_abort","id":"c1"}`,
		`{"type":"handback","id":"h1","data":{"reason":"idle","transferred":true,"needsContinue":false}}`,
		`{"type":"launch","id":"h1","data":{"argv":[{"file":"a"},{"toolBridge":true}]}}`,
		`{"type":"launch","id":"h\u0000","data":{}}`,
		`{"type":"tool_call","id":"c1","data":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := DecodeOwner(line)
		if err != nil {
			return
		}
		b, err := EncodeOwner(m)
		if err != nil {
			t.Fatalf("accepted frame does not encode: %v", err)
		}
		m2, err := DecodeOwner(b)
		if err != nil {
			t.Fatalf("re-encoded frame %q rejected: %v", b, err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(m2)) {
			t.Fatalf("round trip changed the frame:\n%+v\n%+v", m, m2)
		}
		if !ownerTypes[m.Type].fromOwner {
			return
		}
		msg, err := ParseOwnerMessage(m)
		if err != nil {
			return
		}
		l, ok := msg.(Launch)
		if !ok {
			return
		}
		if len(l.Argv) == 0 || l.Argv[0].Text != l.Executable || !strings.HasPrefix(l.Cwd, "/") {
			t.Fatalf("accepted launch breaks its invariants: %+v", l)
		}
		files := map[string]bool{}
		for _, f := range l.Files {
			if strings.ContainsAny(f.Name, "/\x00") || f.Name == "." || f.Name == ".." {
				t.Fatalf("accepted file name %q", f.Name)
			}
			files[f.Name] = true
		}
		for _, a := range l.Argv {
			if a.File != "" && !files[a.File] {
				t.Fatalf("accepted argv naming file %q the launch lacks", a.File)
			}
		}
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("accepted launch does not marshal: %v", err)
		}
		again, err := ParseOwnerMessage(Message{Type: TypeLaunch, ID: m.ID, Data: data})
		if err != nil || !reflect.DeepEqual(normalizeLaunch(again.(Launch)), normalizeLaunch(l)) {
			t.Fatalf("launch round trip: %v\n%+v\n%+v", err, l, again)
		}
	})
}

// normalizeLaunch compacts the raw JSON inside a launch.
func normalizeLaunch(l Launch) Launch {
	for i := range l.Tools {
		l.Tools[i].Parameters = sameJSON(l.Tools[i].Parameters)
	}
	if len(l.Env) == 0 {
		l.Env = nil
	}
	if len(l.Files) == 0 {
		l.Files = nil
	}
	if len(l.Tools) == 0 {
		l.Tools = nil
	}
	if len(l.ToolNames) == 0 {
		l.ToolNames = nil
	}
	return l
}
