package osc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// unwrapDCS undoes one level of tmux passthrough the way tmux reads it:
// ESC P tmux; … ESC \ around a body where every ESC is doubled.
func unwrapDCS(b []byte) ([]byte, bool) {
	const head, tail = "\x1bPtmux;", "\x1b\\"
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) || len(b) < len(head)+len(tail) {
		return nil, false
	}
	body := b[len(head) : len(b)-len(tail)]
	var out []byte
	for i := 0; i < len(body); i++ {
		if body[i] == 0x1b {
			// A lone ESC would end the DCS early (ESC \) or start
			// something else: every ESC inside must be doubled.
			if i+1 >= len(body) || body[i+1] != 0x1b {
				return nil, false
			}
			i++
		}
		out = append(out, body[i])
	}
	return out, true
}

// parseOSC checks that seq is exactly one OSC of protocol p, terminated by
// ST, whose payload no terminal could read as anything else, and returns its
// ';'-separated fields.
func parseOSC(p Protocol, seq []byte) ([]string, error) {
	if !bytes.HasPrefix(seq, []byte("\x1b]")) || !bytes.HasSuffix(seq, []byte("\x1b\\")) || len(seq) < 4 {
		return nil, fmt.Errorf("not framed as OSC … ST")
	}
	payload := seq[2 : len(seq)-2]
	if !utf8.Valid(payload) {
		return nil, fmt.Errorf("payload is not valid UTF-8")
	}
	for _, r := range string(payload) {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return nil, fmt.Errorf("control character U+%04X in the payload", r)
		}
		if invisible(r) {
			return nil, fmt.Errorf("invisible character U+%04X in the payload", r)
		}
	}
	fields := strings.Split(string(payload), ";")
	want := map[Protocol]int{OSC9: 2, OSC99: 3, OSC777: 4}[p]
	if len(fields) != want {
		return nil, fmt.Errorf("%d fields, want %d: %q", len(fields), want, fields)
	}
	switch p {
	case OSC9:
		if fields[0] != "9" {
			return nil, fmt.Errorf("command %q", fields[0])
		}
	case OSC99:
		id, ok := strings.CutPrefix(fields[1], "i=")
		id, ok2 := strings.CutSuffix(id, ":p=body")
		if fields[0] != "99" || !ok || !ok2 || id == "" || id == "0" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			return nil, fmt.Errorf("metadata %q", fields[:2])
		}
	case OSC777:
		if fields[0] != "777" || fields[1] != "notify" || fields[2] == "" {
			return nil, fmt.Errorf("header %q", fields[:3])
		}
	}
	if fields[len(fields)-1] == "" {
		return nil, fmt.Errorf("empty body")
	}
	return fields, nil
}

// FuzzEncode: for any title, body and id, every protocol gives either
// nothing or exactly one OSC (inside exactly one DCS per tmux level) with no
// C0, C1, DEL, ESC or BEL in what the application wrote and no ';' inside a
// field. Interesting inputs live in testdata/fuzz/FuzzEncode.
func FuzzEncode(f *testing.F) {
	f.Add("Pi ask", "Pi needs your response", "pi-ask", uint8(2), uint8(0))
	f.Add("title;\u009c", "body;\x07", "id;\x1b", uint8(2), uint8(1))
	f.Add("\x1b]9;evil\x07", "\x1b\\\x1bPtmux;\x1b\x1b]52;c;AAAA\x07", "0", uint8(1), uint8(2))
	f.Add("", "\xff\x9c\x9d", ";;", uint8(0), uint8(3))
	f.Add("\u202etxt.exe", "\u2028\u2029\ufeff", "\u200b", uint8(1), uint8(1))
	// An ST, 8-bit ST and BEL inside the text, under three tmux levels:
	// none may end a level early.
	f.Add("a\x1b\\b", "c\u009cd\x07e\x9c", "i\x1b\\", uint8(2), uint8(3))
	// A cut at 256 code points that lands inside two-byte runes, with an
	// escape right after it.
	f.Add(strings.Repeat("é", 300)+"\x1b\\", strings.Repeat("é", 255)+"\x1b]52;c;AAAA\x07", "x", uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, title, body, id string, proto, levels uint8) {
		p := Protocols[int(proto)%len(Protocols)]
		lv := int(levels % 4)
		raw := Encode(p, Notification{Title: title, Body: body, ID: id})
		seq := WrapTmux(raw, lv)
		if raw == nil {
			if Sanitize(title) != "" || Sanitize(body) != "" {
				t.Fatalf("nothing encoded for title %q body %q", title, body)
			}
			if seq != nil {
				t.Fatalf("wrapped nothing into %q", seq)
			}
			return
		}
		inner := seq
		for i := range lv {
			var ok bool
			if inner, ok = unwrapDCS(inner); !ok {
				t.Fatalf("level %d of %q is not one DCS", i, seq)
			}
		}
		if !bytes.Equal(inner, raw) {
			t.Fatalf("unwrapping gives %q, want %q", inner, raw)
		}
		fields, err := parseOSC(p, raw)
		if err != nil {
			t.Fatalf("%s %q: %v", p, raw, err)
		}
		for _, field := range fields {
			if utf8.RuneCountInString(field) > MaxCodePoints+len("i=:p=body")+MaxCodePoints {
				t.Fatalf("field too long: %d code points", utf8.RuneCountInString(field))
			}
		}
		if got := fields[len(fields)-1]; utf8.RuneCountInString(got) > MaxCodePoints {
			t.Fatalf("body of %d code points", utf8.RuneCountInString(got))
		}
	})
}

// FuzzSanitize: the sanitisers are idempotent, their output is valid UTF-8
// with no control characters, no invisible ones (bidi overrides,
// zero-width), no JavaScript whitespace at either end and no run of two
// spaces; Sanitize also leaves no ';'.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{" one;two\x1b]99;evil\nthree ", "\ufeff\u3000x\u0085", "\xf0\x9f\x98", strings.Repeat("😀", 300),
		"T\u202eY", "\u202etxt.exe", "a\u200b\u2066b\u2069\u00ad;\ufeff", "\u206f\u200b \u202a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for name, fn := range map[string]func(string) string{"Sanitize": Sanitize, "CleanLabel": CleanLabel} {
			out := fn(in)
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: invalid UTF-8", name, in, out)
			}
			for _, r := range out {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r != ' ' && jstext.IsSpace(r)) || invisible(r) {
					t.Fatalf("%s(%q) = %q holds U+%04X", name, in, out, r)
				}
			}
			if strings.Contains(out, "  ") || strings.HasPrefix(out, " ") {
				t.Fatalf("%s(%q) = %q: whitespace not collapsed", name, in, out)
			}
			if fn(out) != out && !(name == "Sanitize" && strings.HasSuffix(out, " ")) {
				t.Fatalf("%s not idempotent on %q: %q then %q", name, in, out, fn(out))
			}
		}
		out := Sanitize(in)
		if strings.Contains(out, ";") || utf8.RuneCountInString(out) > MaxCodePoints {
			t.Fatalf("Sanitize(%q) = %q", in, out)
		}
	})
}
