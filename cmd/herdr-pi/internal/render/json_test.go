package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestJSONEscapesWhatATerminalWouldAct(t *testing.T) {
	v := map[string]string{
		"c0":   "\x1b]0;title\x07",
		"c1":   "csi \u009b2J osc \u009d0;t\u009c",
		"bidi": "abc\u202edcba \u2066x\u2069 \u200f\u061c",
		"kept": "café ✳ \u200b € ␛",
	}
	var out bytes.Buffer
	if err := JSON(&out, v); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`\u001b]0;title\u0007`, `csi \u009b2J osc \u009d0;t\u009c`,
		`abc\u202edcba \u2066x\u2069 \u200f\u061c`, "café ✳ \u200b € ␛"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, r := range got {
		if r != '\n' && (unicode.IsControl(r) || bidiControl(r)) {
			t.Errorf("output keeps %U raw:\n%s", r, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if back[k] != v[k] {
			t.Errorf("%s decodes as %q, was %q", k, back[k], v[k])
		}
	}
	var line bytes.Buffer
	if err := JSONLine(&line, v); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(line.String(), "\n"); n != 1 || strings.Contains(line.String(), "\u009b") {
		t.Errorf("JSONLine = %q: want one line with nothing raw", line.String())
	}
}

// FuzzTerminalSafeJSON: whatever string is encoded, the output has no
// control or bidi character outside the encoder's own indentation, and it
// decodes to what Go's encoder alone would have decoded to.
func FuzzTerminalSafeJSON(f *testing.F) {
	for _, s := range []string{"", "x", "\u009b1m", "\xc2", "\u202e\n", "é\x9d", "\xe2\x80", "\u2069\u061c\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			t.Fatal(err)
		}
		safe := TerminalSafeJSON(plain)
		if !utf8.Valid(safe) {
			t.Fatalf("%q: output %q is not UTF-8", s, safe)
		}
		for _, r := range string(safe) {
			if unicode.IsControl(r) || bidiControl(r) {
				t.Fatalf("%q: output %q keeps %U", s, safe, r)
			}
		}
		var a, b map[string]string
		if err := json.Unmarshal(plain, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(safe, &b); err != nil {
			t.Fatalf("%q: output %q does not decode: %v", s, safe, err)
		}
		for k, v := range a {
			if b[k] != v {
				t.Fatalf("%q: decodes as %q, want %q", s, b[k], v)
			}
		}
	})
}
