package herdrtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// envelopeKeys are the fields of Herdr's Request type (herdr-socket-api.md
// §2.1); any other top-level key is ignored.
var envelopeKeys = map[string]bool{"id": true, "method": true, "params": true}

// wireCheck finds what makes Herdr's typed decoding refuse a line although
// Go's encoding/json and the schema take it: bytes that are not UTF-8
// (messages are UTF-8 JSON, §1.3; Go would read them as U+FFFD), and a
// field given twice (a duplicated method fails to parse, §2.1; serde's
// derived decoding refuses any field it knows twice, in params too, where
// Go keeps the last). paramKeys says which params keys the method knows;
// nil means all. "" means the line passes.
func wireCheck(line []byte, paramKeys func(method string) map[string]bool) string {
	if !utf8.Valid(line) {
		return "the line is not valid UTF-8"
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(line, &env) != nil {
		return "" // not an object: handle says so
	}
	if k := duplicateKey(line, func(k string) bool { return envelopeKeys[k] }); k != "" {
		return fmt.Sprintf("duplicate field `%s`", k)
	}
	var method string
	_ = json.Unmarshal(env["method"], &method)
	known := paramKeys(method)
	if k := duplicateKey(env["params"], func(k string) bool { return known == nil || known[k] }); k != "" {
		return fmt.Sprintf("duplicate field `%s` in params", k)
	}
	return ""
}

// duplicateKey returns the first key of the JSON object raw that appears
// twice and that known accepts, "" when none does or raw is no object.
func duplicateKey(raw []byte, known func(string) bool) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if seen[k] && known(k) {
			return k
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}
