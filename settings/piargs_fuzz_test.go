package settings

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParsePiArgs: whatever the command line, what ParsePiArgs reads is
// what Pi would: a session, fork or session directory is the argument
// right after its flag; a mode is one Pi knows; a subcommand is Pi's first
// argument and then nothing else is read. args is the input split at NUL.
func FuzzParsePiArgs(f *testing.F) {
	for _, s := range []string{"", "--session\x00a.jsonl", "--fork\x00x\x00--session-dir\x00/d", "--mode\x00json",
		"--mode\x00--session\x00s", "-p\x00---x\x00--session\x00s", "install\x00--session\x00s", "--\x00--session\x00s",
		"--ext-flag\x00--session\x00s", "--session", "--session-id\x00id\x00-c\x00-r", "@f\x00--print\x00@g",
		"--list-models\x00--session-dir\x00d", "--name\x00--session\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args []string
		if s != "" {
			args = strings.Split(s, "\x00")
		}
		p := ParsePiArgs(args)
		if p.Subcommand != "" {
			if args[0] != p.Subcommand || p != (PiArgs{Subcommand: p.Subcommand}) {
				t.Fatalf("%q: %+v", args, p)
			}
			return
		}
		switch p.Mode {
		case "", "text", "json", "rpc":
		default:
			t.Fatalf("%q: mode %q", args, p.Mode)
		}
		for flag, v := range map[string]string{"--session": p.Session, "--session-id": p.SessionID, "--fork": p.Fork, "--session-dir": p.SessionDir} {
			if v == "" {
				continue
			}
			found := false
			for i := 1; i < len(args); i++ {
				found = found || args[i-1] == flag && args[i] == v
			}
			if !found {
				t.Fatalf("%q: %s %q is not the argument after %s", args, flag, v, flag)
			}
		}
	})
}

// FuzzQuoteClipped: a value quoted in a message is one line, valid UTF-8,
// free of control characters, and bounded by the cut, whatever its size.
func FuzzQuoteClipped(f *testing.F) {
	for _, s := range []string{"", "pi", "a\nb", "\x1b]0;t\x07", "\u202e\u009b", "\xff\xfe", strings.Repeat("é", 40), strings.Repeat("x", 200)} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<10 {
			return
		}
		q := QuoteClipped(s, max)
		if !utf8.ValidString(q) {
			t.Fatalf("QuoteClipped(%q, %d) = %q: not UTF-8", s, max, q)
		}
		for _, r := range q {
			if unicode.IsControl(r) || r == 0x202e || r == 0x2066 {
				t.Fatalf("QuoteClipped(%q, %d) = %q keeps %U", s, max, q, r)
			}
		}
		// %q writes at most 10 bytes a byte (\U0010ffff for 4), then the
		// quotes and the length.
		if len(q) > 10*max+40 && len(s) > max {
			t.Fatalf("QuoteClipped(%.80q, %d) is %d bytes", s, max, len(q))
		}
	})
}
