package jstext

import (
	"reflect"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestWhitespaceIsJavaScripts(t *testing.T) {
	for _, r := range []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff} {
		if !IsSpace(r) {
			t.Errorf("U+%04X must be JS whitespace", r)
		}
	}
	// U+0085 is whitespace to Go but not to JavaScript; U+200B is neither.
	for _, r := range []rune{0x85, 0x200b, 'x', 0} {
		if IsSpace(r) {
			t.Errorf("U+%04X must not be JS whitespace", r)
		}
	}
	if got := Trim("\ufeff a \u0085"); got != "a \u0085" {
		t.Errorf("Trim = %q", got)
	}
	if got := TrimEnd(" a \u3000\r\n"); got != " a" {
		t.Errorf("TrimEnd = %q", got)
	}
}

func TestSplitLinesLikeJavaScript(t *testing.T) {
	tests := map[string][]string{
		"":           {""},
		"a\r\nb":     {"a", "b"},
		"a\rb\nc":    {"a\rb", "c"},
		"a\n\r\nb\r": {"a", "", "b\r"},
		"a\n":        {"a", ""},
	}
	for in, want := range tests {
		if got := SplitLines(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitLines(%q) = %q, want %q", in, got, want)
		}
	}
}
