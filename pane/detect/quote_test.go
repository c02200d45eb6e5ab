package detect

import (
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// An explanation quotes a manifest's string as the manifest writes it: a
// pattern's backslashes once, in a literal string, so it can be pasted
// back; a string a literal cannot hold, or with characters that cannot be
// shown, as a basic string with TOML's escapes. Either reads back, as TOML,
// as the string itself.
func TestTOMLQuoteWritesWhatTheManifestHolds(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`^─+ [\x{2801}-\x{28FF}] \S`, `'^─+ [\x{2801}-\x{28FF}] \S'`},
		{`Working...`, `'Working...'`},
		{``, `''`},
		{`don't \d`, `"don't \\d"`},
		{"a\x1b[31mb", `"a\u001B[31mb"`},
		{"x\u202Ey", `"x\u202Ey"`},
		{"tab\there\nline\r", `"tab\there\nline\r"`},
		{`say "hi"` + "\x7f", `"say \"hi\"\u007F"`},
		{"\U000E0001", `"\U000E0001"`},
	} {
		got := tomlQuote(tc.in)
		if got != tc.want {
			t.Errorf("tomlQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		var back struct{ S string }
		if _, err := toml.Decode("s = "+got, &back); err != nil || back.S != tc.in {
			t.Errorf("%s reads back as %q (%v), want %q", got, back.S, err, tc.in)
		}
	}
	// Bytes that are not UTF-8 cannot be in a manifest (TOML is UTF-8); they
	// show as U+FFFD rather than reach the terminal.
	if got := tomlQuote("a\xffb"); got != `"a\uFFFDb"` {
		t.Errorf("invalid UTF-8: %s", got)
	}
}

// Whatever a manifest's string holds, its quote reads back as it and
// carries no character that cannot be shown.
func FuzzTOMLQuote(f *testing.F) {
	for _, s := range []string{`^ [\x{2801}-\x{28FF}] \S`, "don't", "a\x1b[2Jb", "x\u202Ey", "\t\n\r\"\\", "\U000E0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := tomlQuote(s)
		for _, r := range q {
			if !strconv.IsPrint(r) {
				t.Fatalf("tomlQuote(%q) = %q holds %U", s, q, r)
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		var back struct{ S string }
		if _, err := toml.Decode("s = "+q, &back); err != nil || back.S != s {
			t.Fatalf("%q reads back as %q (%v), want %q", q, back.S, err, s)
		}
	})
}
