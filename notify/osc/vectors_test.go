package osc

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// hexDiff reports a byte mismatch with both sides in hex, so invisible
// bytes (ESC, U+00B7, a stray space) are plain to see.
func hexDiff(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if string(got) != string(want) {
		t.Errorf("%s:\n got  %q\n      % x\n want %q\n      % x", name, got, got, want, want)
	}
}

// Vectors of notifications-and-sentinel.md D1.1 (the seed's
// notifications.test.ts).
func TestSeedEncoderVectors(t *testing.T) {
	n := Notification{Body: "Pi needs your response", ID: "pi-ask", Title: "Pi ask"}
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"D1.1#1 osc9", Encode(OSC9, n), "\x1b]9;Pi needs your response\x1b\\"},
		{"D1.1#2 osc99", Encode(OSC99, n), "\x1b]99;i=pi-ask:p=body;Pi needs your response\x1b\\"},
		{"D1.1#3 osc777", Encode(OSC777, n), "\x1b]777;notify;Pi ask;Pi needs your response\x1b\\"},
		{"D1.1#5 osc777 hostile", Encode(OSC777, Notification{Body: "body;\x07", ID: "id;\x1b", Title: "title;\u009c"}),
			"\x1b]777;notify;title:;body:\x1b\\"},
	}
	for _, c := range cases {
		hexDiff(t, c.name, c.got, []byte(c.want))
	}

	// D1.1 #1 also gives the OSC 9 bytes in hex.
	want := mustHex(t, "1b 5d 39 3b 50 69 20 6e 65 65 64 73 20 79 6f 75 72 20 72 65 73 70 6f 6e 73 65 1b 5c")
	hexDiff(t, "D1.1#1 osc9 (hex)", Encode(OSC9, n), want)

	if got := Sanitize(" one;two\x1b]99;evil\nthree "); got != "one:two ]99:evil three" {
		t.Errorf("D1.1#4 sanitize: got %q", got)
	}
	long := Encode(OSC9, Notification{Body: strings.Repeat("x", 300)})
	if len(long) != 262 {
		t.Errorf("D1.1#6 osc9 of 300 x: length %d, want 262 (4 + 256 + 2)", len(long))
	}
	if err := Emit(failingWriter{}, Encode(OSC99, n)); err == nil {
		t.Error("D1.1#7 emit to a failing writer: want an error, got nil")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("terminal gone") }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

type countingWriter struct {
	calls int
	data  []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	w.data = append(w.data, p...)
	return len(p), nil
}

func TestEmitWritesOnceAndReportsShortWrites(t *testing.T) {
	var w countingWriter
	seq := Encode(OSC777, Notification{Title: "a", Body: "b"})
	if err := Emit(&w, seq); err != nil || w.calls != 1 || string(w.data) != string(seq) {
		t.Fatalf("emit: err %v, %d calls, %q", err, w.calls, w.data)
	}
	if err := Emit(shortWriter{}, seq); err == nil {
		t.Fatal("a short write must be an error")
	}
	w = countingWriter{}
	if err := Emit(&w, nil); err != nil || w.calls != 0 {
		t.Fatalf("nothing to emit must write nothing: %v, %d calls", err, w.calls)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeFallsBackAndStaysSilent(t *testing.T) {
	cases := []struct {
		name string
		p    Protocol
		n    Notification
		want string
	}{
		{"body falls back to title", OSC9, Notification{Title: "Only title"}, "\x1b]9;Only title\x1b\\"},
		{"osc777 empty title is Pi", OSC777, Notification{Body: "b"}, "\x1b]777;notify;Pi;b\x1b\\"},
		{"osc777 title only", OSC777, Notification{Title: "t"}, "\x1b]777;notify;t;t\x1b\\"},
		{"osc99 empty id is pi", OSC99, Notification{Body: "b"}, "\x1b]99;i=pi:p=body;b\x1b\\"},
		{"osc99 id 0 is never sent", OSC99, Notification{Body: "b", ID: "0"}, "\x1b]99;i=pi:p=body;b\x1b\\"},
		{"nothing left", OSC9, Notification{Title: " \x1b ", Body: "\t\u0085"}, ""},
	}
	for _, c := range cases {
		hexDiff(t, c.name, Encode(c.p, c.n), []byte(c.want))
	}
}

func TestSanitizeIdentifier(t *testing.T) {
	cases := map[string]string{
		"pi-ask":          "pi-ask",
		"id;\x1b":         "id",
		"--a  b//c--":     "a-b-c",
		"agent.v1_x":      "agent.v1_x",
		"":                "pi",
		"ünïcode":         "n-code",
		"w1:p3 herdr":     "w1-p3-herdr",
		"0":               "pi",
		"\u202e\u200b---": "pi",
	}
	for in, want := range cases {
		if got := SanitizeIdentifier(in); got != want {
			t.Errorf("SanitizeIdentifier(%q) = %q, want %q", in, got, want)
		}
	}
}

// The JavaScript whitespace set of notifications-and-sentinel.md §27 item 1,
// against what Go would do by default.
func TestJSWhitespace(t *testing.T) {
	js := []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2000, 0x2005, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff}
	for _, r := range js {
		if !jstext.IsSpace(r) {
			t.Errorf("U+%04X is JS whitespace", r)
		}
	}
	for _, r := range []rune{0x85, 0x200b, 0x180e, 'x', 0x1f, 0x2001 - 2} {
		if jstext.IsSpace(r) {
			t.Errorf("U+%04X is not JS whitespace", r)
		}
	}
	// U+FEFF and the U+3000 ideographic space are whitespace to the seed:
	// they collapse and trim. U+0085 is a C1 control and becomes a space
	// first.
	if got := Sanitize("\ufeffa\u3000\u3000b\u0085c\u2028"); got != "a b c" {
		t.Errorf("got %q", got)
	}
	// Zero-width characters, kept by the seed's OSC rule (§4.1), are
	// blanked by both of ours, as the label rule (§4.2) does.
	if got := Sanitize("a\u200bb"); got != "a b" {
		t.Errorf("Sanitize drops U+200B: got %q", got)
	}
	if got := CleanLabel("a\u200bb"); got != "a b" {
		t.Errorf("CleanLabel drops U+200B: got %q", got)
	}
}

// Typographic punctuation is text, not a disguise: the apostrophes,
// quotes, dashes, bullets and ellipses models write all the time share the
// U+2000 block with the invisible characters, and a question "What’s next
// — “main.go” or “app.go”?" reached Herdr as "What s next main.go or
// app.go ?". Only the invisible ones go.
func TestTypographicPunctuationIsKept(t *testing.T) {
	text := "What’s next — “main.go” or ‘app.go’? ‐‑‒–―‖‗‚‛„‟†‡•‣․‥…‧‰‱′″‴‵‹›※‼‽‾⁁⁂⁃⁄⁅⁆⁇⁈⁉⁊⁋⁌⁍⁎⁏⁐⁑⁒⁓⁔⁕⁖⁗⁘⁙⁚⁛⁜⁝⁞"
	if got := CleanLabel(text); got != text {
		t.Errorf("CleanLabel(%q) = %q", text, got)
	}
	if got, want := Sanitize(text), strings.ReplaceAll(text, ";", ":"); got != want {
		t.Errorf("Sanitize(%q) = %q", text, got)
	}
	// Every invisible one of that block still goes: zero-width, marks,
	// embeddings and overrides, the word joiner, invisible operators,
	// isolates and the deprecated format characters.
	for _, r := range []rune{0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066, 0x2067, 0x2068, 0x2069, 0x206a, 0x206f} {
		if got := CleanLabel("a" + string(r) + "b"); got != "a b" {
			t.Errorf("U+%04X: CleanLabel gives %q", r, got)
		}
	}
}

// The OSC path blanks what the Herdr-toast path does: a bidi override in a
// title (herdr-pi notify --title $'T\u202eY') reached the terminal as it was,
// free to show the text reversed, while the toast showed it plain.
func TestOSCSequencesCarryNoInvisibleCharacters(t *testing.T) {
	hostile := "T\u202eY\u2066Z\u200bW\u00adV\ufeffU\u061c"
	for _, p := range Protocols {
		seq := Encode(p, Notification{Title: hostile, Body: "body " + hostile, ID: "pi"})
		for _, r := range string(seq) {
			if invisible(r) {
				t.Errorf("%s: U+%04X in % x", p, r, seq)
			}
		}
	}
	if got, want := Sanitize(hostile), CleanLabel(hostile); got != want {
		t.Errorf("Sanitize(%q) = %q, CleanLabel = %q: the two paths differ", hostile, got, want)
	}
}

func TestSanitizeCountsCodePoints(t *testing.T) {
	in := strings.Repeat("é😀", 200)
	got := Sanitize(in)
	if n := utf8.RuneCountInString(got); n != MaxCodePoints {
		t.Fatalf("kept %d code points, want %d", n, MaxCodePoints)
	}
	if !utf8.ValidString(got) {
		t.Fatal("cut inside a code point")
	}
	// D2.1 sanitizeOscText("x"×600) is 512 in the newer package; the seed
	// keeps 256 (§4.1), and that is what herdr-pi promises.
	if n := utf8.RuneCountInString(Sanitize(strings.Repeat("x", 600))); n != 256 {
		t.Fatalf("600 x: kept %d", n)
	}
	// Invalid UTF-8: a raw 0x9c byte is not U+009C (§27 item 3); it decodes
	// as U+FFFD, which is kept, so the 8-bit ST never reaches the terminal.
	if got := Sanitize("a\x9cb\x1b"); got != "a\ufffdb" {
		t.Fatalf("raw bytes: got %q", got)
	}
}

// notifications-and-sentinel.md D2.1 and D2.3: the newer package's sanitiser
// vectors that apply to the rules herdr-pi implements.
func TestNewerPackageSanitiserVectors(t *testing.T) {
	if got := Sanitize(" one;two\x1b]99;evil\nthree "); got != "one:two ]99:evil three" {
		t.Errorf("D2.1 sanitizeOscText: %q", got)
	}
	// All of C1 goes, to its last code point U+009F (APC opens a string a
	// terminal swallows); U+00A0 on is kept (here it is whitespace).
	if got := Sanitize("a\u0080b\u009cc\u009fd\u00a1e"); got != "a b c d\u00a1e" {
		t.Errorf("C1: %q", got)
	}
	labels := []struct{ in, want string }{
		{"a\u0000b\u001bc\u007fd\n e\u0009f", "a b c d e f"},
		{"  \t x \n y  ", "x y"},
		{"a\u200bb\u202ec\u200dd", "a b c d"},
		{"x\u00ady\ufeffz", "x y z"},
		{"\u202aRTL\u202c", "RTL"},
		// Both ends of the invisible range (§4.2): U+200B and U+206F.
		{"a\u206fb\u200bc", "a b c"},
		// D2.2: label "a\0b\nc" and session "s \t x".
		{"a\x00b\nc", "a b c"},
		{"s \t x", "s x"},
		// D2.5: label "a\nb\u0000".
		{"a\nb\u0000", "a b"},
		// D2.3 parsePublishPayload label.
		{"  foo\n  bar  ", "foo bar"},
		// The label rule keeps ';' (§4.2).
		{"a;b", "a;b"},
	}
	for _, c := range labels {
		if got := CleanLabel(c.in); got != c.want {
			t.Errorf("CleanLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// notifications-and-sentinel.md D2.2 truncation vectors.
func TestTruncationVectors(t *testing.T) {
	cases := []struct{ got, want string }{
		{TruncateBytes("hello", 10), "hello"},
		{TruncateBytes("hello😀world", 10), "hello…"},
		{Truncate("abcdef", 10), "abcdef"},
		{Truncate("abcdef", 4), "abc…"},
		{Truncate("😀😀😀", 2), "😀…"},
		// Exactly at the limit: nothing is cut.
		{Truncate("abc", 3), "abc"},
		{TruncateBytes("abcd", 4), "abcd"},
		// A code point that ends exactly at the room left for '…' fits.
		{TruncateBytes("abcdef", 4), "a…"},
		// No room at all (a body squeezed out by "+n more"): nothing.
		{Truncate("abc", 0), ""},
		{Truncate("abc", -2), ""},
		{TruncateBytes("abcdef", 2), ""},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
	for _, in := range []string{strings.Repeat("x", 5000), strings.Repeat("😀", 2000)} {
		got := TruncateBytes(in, 4000)
		if len(got) > 4000 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Errorf("TruncateBytes(%d bytes): %d bytes, valid %v, suffix %q", len(in), len(got), utf8.ValidString(got), got[len(got)-3:])
		}
	}
	if got := Truncate(strings.Repeat("x", 600), 512); utf8.RuneCountInString(got) != 512 || !strings.HasSuffix(got, "…") {
		t.Errorf("Truncate 600 to 512: %d code points", utf8.RuneCountInString(got))
	}
}

func TestParseProtocol(t *testing.T) {
	for _, p := range Protocols {
		if got, ok := ParseProtocol(string(p)); !ok || got != p {
			t.Errorf("%s not parsed", p)
		}
	}
	for _, s := range []string{"", "OSC9", "osc 9", "unsupported"} {
		if _, ok := ParseProtocol(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
}
