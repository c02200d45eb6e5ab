package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The cases the project's promise names: a raw ESC, a BEL, the one-byte
// C1 CSI, a right-to-left override, an invalid byte. Each becomes one
// space and the text around it stays.
func TestCleanTheNamedCases(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b]0;t\x07b":  "a ]0;t b",
		"a\u009b31mb":     "a 31mb",
		"a\u202eb\u2066c": "a b c",
		"a\xffb":          "a b",
		"line\nnext\r\t.": "line next  .",
		"plain, é and 中文": "plain, é and 中文",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CleanLines("a\nb\x1bc"); got != "a\nb c" {
		t.Errorf("CleanLines kept %q", got)
	}
}

// FuzzClean: nothing Harmful survives Clean (nor CleanLines, but its
// newlines); every code point of the input is one of the output, so a
// name is never cut short or run into the next; both are idempotent.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "x", "\x1b]0;t\x07", "\u009b1m", "\xc2", "\u202e\n\r\t", "é\x9d",
		"\u2066\u061c\u200ex\u2069", "\x1bPtmux;\x1b\x1b]52;c;AAAA\x07\x1b\\", "\x00\x7f\u0085\xc2\x85",
		"\ufffd", "\xed\xa0\x80", strings.Repeat("\u202e", 40)} {
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
				if r == '\n' && name == "CleanLines" {
					continue
				}
				if Harmful(r) || unicode.IsControl(r) || IsBidiControl(r) {
					t.Fatalf("%s(%q) = %q keeps %U", name, s, out, r)
				}
			}
			if again := clean(out); again != out {
				t.Fatalf("%s is not idempotent on %q: %q then %q", name, s, out, again)
			}
		}
	})
}
