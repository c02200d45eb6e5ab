package state

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Pi's status channel reports a dialog's title with each run of control
// characters made one space, trimmed, cut to 2048 bytes (pi-agent.md §10).
func TestReportedTitle(t *testing.T) {
	long := strings.Repeat("é", 1500) // 3000 bytes
	for _, c := range []struct{ in, want string }{
		{"Allow git push?", "Allow git push?"},
		{"Allow git push?\n", "Allow git push?"},
		{"Run this command?\n  rm -rf build", "Run this command?   rm -rf build"},
		{"a\r\n\tb", "a b"},
		{"a\x1b]0;x\x07b", "a ]0;x b"},
		{"a\u0085\u009cb", "a b"},
		{"a\x7fb", "a b"},
		{"\ufeff Pick \u00a0", "Pick"},
		{long, strings.Repeat("é", 1024)},
		{"", ""},
	} {
		if got := ReportedTitle(c.in); got != c.want {
			t.Errorf("ReportedTitle(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzReportedTitle(f *testing.F) {
	for _, s := range []string{"Allow?\n", "a\r\n\tb", strings.Repeat("é", 1500), "\ufeff x \u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // titles come from JSON: valid UTF-8
		}
		got := ReportedTitle(s)
		if len(got) > maxReportedTitle || !utf8.ValidString(got) {
			t.Fatalf("ReportedTitle(%q) = %q: over the limit or not UTF-8", s, got)
		}
		if again := ReportedTitle(got); again != got {
			t.Fatalf("not idempotent: %q, then %q", got, again)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) {
			t.Fatalf("ReportedTitle(%q) = %q keeps a control character", s, got)
		}
	})
}
