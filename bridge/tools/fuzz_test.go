package tools

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// FuzzDecodeRequest: no input makes DecodeRequest panic; whatever it
// accepts has every field the server relies on, and survives an
// encode/decode round trip unchanged.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":{"text":"hi"}}`,
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":{}}` + "\n",
		`{"token":"abc","toolCallId":"call_1","name":"echo","params": {"a":[1,2,{"b":null}]} }`,
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":[]}`,
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":null}`,
		`{"token":"abc","toolCallId":"call_1","name":"echo"}`,
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":{},"extra":1}`,
		`{"token":"abc","toolCallId":"call_1","name":"echo","params":{}}{}`,
		`{"Token":"abc","TOOLCALLID":"call_1","Name":"echo","params":{}}`,
		`{"token":"a\u0000c","toolCallId":"call_1","name":"echo","params":{}}`,
		`{"token":"abc","toolCallId":"call_1","name":"\u2028","params":{}}`,
		`{"token":"abc","toolCallId":"call_1","name":"e","params":{"\ud800":"\udfff"}}`,
		"{\"token\":\"abc\",\"toolCallId\":\"c\",\"name\":\"e\",\"params\":{}}\r\n",
		`null`, `[]`, `""`, `{}`, "\xff\xfe", `{"token":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRequest(line)
		if err != nil {
			return
		}
		if r.Token == "" || r.Name == "" || r.ToolCallID == "" || !control.Printable(r.Token) || !control.Printable(r.Name) || !control.Printable(r.ToolCallID) {
			t.Fatalf("accepted %q with fields %+v", line, r)
		}
		var params map[string]json.RawMessage
		if err := json.Unmarshal(r.Params, &params); err != nil || params == nil {
			t.Fatalf("accepted params %q that are not an object: %v", r.Params, err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("accepted request does not encode: %v", err)
		}
		r2, err := DecodeRequest(b)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", b, err)
		}
		// json.Marshal compacts raw values and escapes <, >, & and the
		// two line separators in their strings (the same text in JSON's
		// eyes): compare params the way it writes them.
		r.Params, r2.Params = asMarshalled(r.Params), asMarshalled(r2.Params)
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the request:\n%+v\n%+v", r, r2)
		}
	})
}

// asMarshalled is raw JSON as json.Marshal writes a json.RawMessage.
func asMarshalled(raw json.RawMessage) []byte {
	var c, h bytes.Buffer
	_ = json.Compact(&c, raw)
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes()
}
