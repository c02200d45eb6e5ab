package render

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanVectors(t *testing.T) {
	for _, tc := range []struct{ in, clean, lines string }{
		{"plain words", "plain words", "plain words"},
		{"\x1b]0;title\x07x", " ]0;title x", " ]0;title x"},
		{"a\x1b[2Jb", "a [2Jb", "a [2Jb"},
		{"c1 \u009b1m csi", "c1  1m csi", "c1  1m csi"},
		{"raw \x9b byte", "raw   byte", "raw   byte"},
		{"one\ntwo\r\n", "one two  ", "one\ntwo \n"},
		{"tab\there", "tab here", "tab here"},
		{"abc\u202edcba", "abc dcba", "abc dcba"},
		{"\u2066iso\u2069 \u200f\u061c", " iso    ", " iso    "},
		{"zero\u200bwidth café ✳", "zero\u200bwidth café ✳", "zero\u200bwidth café ✳"},
	} {
		if got := Clean(tc.in); got != tc.clean {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.clean)
		}
		if got := CleanLines(tc.in); got != tc.lines {
			t.Errorf("CleanLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

// FuzzClean: whatever the input, the output is valid UTF-8 with nothing a
// terminal acts on (a newline only from CleanLines), one code point for
// each the input decodes to, and cleaning it again changes nothing.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "x", "\x1b]0;t\x07", "\u009b1m", "\xc2", "\u202e\n\r\t", "é\x9d",
		// Bidi isolates and marks, a tmux passthrough of a clipboard write, DEL and NEL.
		"\u2066\u061c\u200ex\u2069", "\x1bPtmux;\x1b\x1b]52;c;AAAA\x07\x1b\\", "\x00\x7f\u0085\xc2\x85"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, clean := range map[string]func(string) string{"Clean": Clean, "CleanLines": CleanLines} {
			out := clean(s)
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: not UTF-8", name, s, out)
			}
			if a, b := utf8.RuneCountInString(out), utf8.RuneCountInString(s); a != b {
				t.Fatalf("%s(%q) = %q: %d code points from %d", name, s, out, a, b)
			}
			for _, r := range out {
				if unicode.IsControl(r) && !(r == '\n' && name == "CleanLines") || bidiControl(r) {
					t.Fatalf("%s(%q) = %q keeps %U", name, s, out, r)
				}
			}
			if again := clean(out); again != out {
				t.Fatalf("%s is not idempotent on %q: %q then %q", name, s, out, again)
			}
			if name == "CleanLines" && strings.Count(out, "\n") != strings.Count(s, "\n") {
				t.Fatalf("CleanLines(%q) = %q: lost or made newlines", s, out)
			}
		}
	})
}
