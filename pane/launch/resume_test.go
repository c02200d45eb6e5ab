package launch

import (
	"slices"
	"strings"
	"testing"
)

const id = "019a6f3c-2b1d-7e55-9c0a-4f1e2d3c4b5a"

// lastFrame stands for the end of Pi's TUI before it prints the hint: the
// footer row, then the cursor shown again and modes reset.
const lastFrame = "\x1b[39;1H~/proj\x1b[K\r\n0.0%/32k (auto)     fake-model\x1b[?25h\x1b[?2004l\r\n"

func TestResumeHint(t *testing.T) {
	tests := []struct {
		name string
		out  string
		args []string // nil: no hint
	}{
		{"pi 1.6.0", lastFrame + "\x1b[2mTo resume this session:\x1b[22m\r\npi --session " + id + "\r\n",
			[]string{"--session", id}},
		{"escapes after it", "\x1b[2mTo resume this session:\x1b[22m\r\npi --session " + id + "\r\n\x1b[?1l\x1b>\x1b]0;\x07\r\n\r\n",
			[]string{"--session", id}},
		{"a session dir", "To resume this session:\npi --session-dir /tmp/s --session " + id + "\n",
			[]string{"--session-dir", "/tmp/s", "--session", id}},
		{"a quoted session dir", "To resume this session:\r\npi --session-dir '/tmp/my sessions/it'\\''s' --session " + id + "\r\n",
			[]string{"--session-dir", "/tmp/my sessions/it's", "--session", id}},
		{"npx's spinner drawn and erased after it", "\x1b[2mTo resume this session:\x1b[22m\r\npi --session " + id + "\r\n\u2819\x1b[1G\x1b[0K",
			[]string{"--session", id}},
		{"another program name", "To resume this session:\npi-dev --session abc\n", []string{"--session", "abc"}},

		{"nothing", "", nil},
		{"a spinner left standing", "To resume this session:\r\npi --session " + id + "\r\n\u2819", nil},
		{"no hint", lastFrame, nil},
		{"the label only", "To resume this session:\r\n", nil},
		{"output after the hint", "To resume this session:\r\npi --session " + id + "\r\nnpm notice New major version\r\n", nil},
		{"mentioned in a reply", " To resume this session: pi --session " + id + "\r\n" + lastFrame, nil},
		{"label on the same line", "To resume this session: pi --session " + id + "\r\n", nil},
		{"extra words", "To resume this session:\npi --session " + id + " --model m\n", nil},
		{"no session", "To resume this session:\npi --session-dir /tmp/s\n", nil},
		{"an id a shell would read", "To resume this session:\npi --session $(reboot)\n", nil},
		{"an id with a semicolon", "To resume this session:\npi --session a;b\n", nil},
		{"a quoted id", "To resume this session:\npi --session 'a b'\n", nil}, // Pi prints ids bare
		{"an open quote", "To resume this session:\npi --session-dir '/tmp --session " + id + "\n", nil},
		{"two spaces", "To resume this session:\npi  --session " + id + "\n", nil},
		{"a control character in the dir", "To resume this session:\npi --session-dir '/tmp/\u0085x' --session " + id + "\n", nil},
		{"a bidi override in the dir", "To resume this session:\npi --session-dir '/tmp/\u202ex' --session " + id + "\n", nil},
		// The Arabic letter mark is a bidi control as well (termtext's rule).
		{"an Arabic letter mark in the dir", "To resume this session:\npi --session-dir '/tmp/\u061cx' --session " + id + "\n", nil},
		// The hint is quoted as Pi quotes it, in single quotes, inside
		// which fish reads \' as an escaped quote: '/tmp/x\' would run
		// what follows it when pasted into fish.
		{"a backslash in the dir", "To resume this session:\npi --session-dir '/tmp/x\\' --session " + id + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := ResumeHint([]byte(tt.out))
			if ok != (tt.args != nil) || !slices.Equal(r.Args, tt.args) {
				t.Fatalf("ResumeHint(%q) = %+v, %v; want args %q", tt.out, r, ok, tt.args)
			}
		})
	}
}

func TestResumeCommand(t *testing.T) {
	hint := Resume{Program: "pi", Args: []string{"--session", id}}
	self := []string{"herdr-pi", "wrap"}
	tests := []struct {
		name   string
		prefix []string
		argv   []string
		hint   Resume
		want   string
	}{
		{"pi", self, []string{"pi", "--model", "m"}, hint, "herdr-pi wrap pi --session " + id},
		{"pi by path", self, []string{"/opt/pi/bin/pi"}, hint, "herdr-pi wrap /opt/pi/bin/pi --session " + id},
		{"node and its options", append(slices.Clone(self), "--agent", "pi", "--"),
			[]string{"node", "--inspect", "/opt/my pi/pi.js", "-c"}, hint,
			"herdr-pi wrap --agent pi -- node --inspect '/opt/my pi/pi.js' --session " + id},
		{"npx", self, []string{"npx", "-y", "pi", "--verbose"}, hint, "herdr-pi wrap npx -y pi --session " + id},
		{"a session dir", self, []string{"pi"}, Resume{Program: "pi", Args: []string{"--session-dir", "/tmp/it's", "--session", id}},
			"herdr-pi wrap pi --session-dir '/tmp/it'\\''s' --session " + id},
		{"opaque: Pi's own program", self, []string{"sh", "-c", "exec pi"}, hint, "herdr-pi wrap pi --session " + id},
		{"a command starting with a dash", self, []string{"-pi"}, hint, "herdr-pi wrap -- -pi --session " + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.argv, "").ResumeCommand(tt.prefix, tt.hint)
			if !ok || got != tt.want {
				t.Fatalf("got %q %v, want %q", got, ok, tt.want)
			}
		})
	}
	if got, ok := Parse([]string{"pi\x1b]0;x\x07"}, "").ResumeCommand(self, hint); ok {
		t.Fatalf("a program name with escapes was written out: %q", got)
	}
	// A byte order mark is invisible in a terminal: the command shown would
	// not be the command run.
	if got, ok := Parse([]string{"pi"}, "").ResumeCommand(self, Resume{Program: "pi", Args: []string{"--session-dir", "/tmp/\ufeffs", "--session", id}}); ok {
		t.Fatalf("a session dir with a BOM was written out: %q", got)
	}
}

// What ResumeCommand writes for Pi's own hint parses back as the same hint.
func TestResumeRoundTrip(t *testing.T) {
	for _, dir := range []string{"/tmp/s", "/tmp/a b", "it's", "~/x:y@z", "ü/ß"} {
		r := Resume{Program: "pi", Args: []string{"--session-dir", dir, "--session", id}}
		line, ok := Parse([]string{"pi"}, "").ResumeCommand(nil, r)
		if !ok {
			t.Fatalf("%q: not written", dir)
		}
		back, ok := ResumeHint([]byte("To resume this session:\n" + line + "\n"))
		if !ok || !slices.Equal(back.Args, r.Args) {
			t.Fatalf("%q: %q parsed back as %+v %v", dir, line, back, ok)
		}
	}
}

func TestPlainLines(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b[1;31mb\x1b[0m\r\nc\x1b]8;;http://x\x1b\\d\x1b]8;;\x1b\\\x1b(B\x1b7e\x1bP1$r\x1b\\\n\x1b[": "ab|cde|",
		"abc\rX":                "Xbc",
		"abc\rX\x1b[K":          "X",
		"abc\x1b[2G\x1b[0K":     "a",
		"abc\x1b[2K":            "",
		"abc\x1b[2;1Hd":         "abcd", // cursor positions are ignored
		"abc\x1b[1K":            "   ",
		"ab\x1b[5Gc":            "ab  c",
		"a\x1b[99999999999Gb\b": "a" + strings.Repeat(" ", maxColumn-2) + "b",
		"ab\bc":                 "ac",   // backspace steps back over b
		"abcd\x1b[3G\x1b[1K":    "   d", // EL 1 erases up to and including the cursor
		"ab\x1b[?1Gc":           "abc",  // not a plain CSI n G: the cursor stays
		"\x1bPq\x07x\x1b\\done": "done", // BEL ends an OSC, not a DCS
	} {
		if got := strings.Join(plainLines([]byte(in)), "|"); got != want {
			t.Errorf("plainLines(%q) = %q, want %q", in, got, want)
		}
	}
}
