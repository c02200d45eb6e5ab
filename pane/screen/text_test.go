package screen

import (
	"testing"
)

// The screen's own rendering of its text is x/vt's String(), byte for
// byte, whatever was drawn: wide and combined characters, styled blanks,
// the alternate screen, a resize in between.
func TestTextIsTheEmulatorsString(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"plain rows", "one\r\ntwo  \r\n   three"},
		{"wide characters", "状态 漢字\r\n\x1b[3;5H表"},
		{"wide character cut by the margin", "\x1b[1;10H状"},
		{"combining marks and emoji", "e\u0301 👍🏽 🇫🇷"},
		{"styled blanks at the end of a row", "x\x1b[41m     \x1b[0m\r\n\x1b[44m   "},
		{"alternate screen", "main\x1b[?1049h\x1b[2;3Halt\x1b[?1049l"},
		{"erase and insert", "abcdef\x1b[3D\x1b[K\x1b[2@\x1b[1P"},
		{"scrolled", "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\r\n8\r\n9\r\n10\r\n11\r\n12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(10, 12)
			defer s.Close()
			must(t, s.Write([]byte(tc.in)))
			if got, want := s.Snapshot().Text, s.emu.String(); got != want {
				t.Fatalf("text %q, x/vt's String() %q", got, want)
			}
		})
	}
}

// FuzzTextIsTheEmulatorsString: for any output, cut anywhere, with resizes
// between the pieces, the text detection reads is what x/vt's String()
// would have given.
func FuzzTextIsTheEmulatorsString(f *testing.F) {
	f.Add([]byte("ab状\x1b[31mX\x1b[0m  \x1b[41m  "), uint8(4), uint8(9), uint8(3))
	f.Add([]byte("e\u0301👍🏽\r\n\x1b[?1049h\x1b[2;1H漢\x1b[?1049l"), uint8(2), uint8(3), uint8(1))
	f.Add([]byte("abc\r   \r\n\x1b[5@\x1b[2P\x1b[L\x1b[M"), uint8(6), uint8(40), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, split uint8) {
		s := New(1+int(rows)%40, 1+int(cols)%120)
		defer s.Close()
		step := 1 + int(split)
		for i := 0; i < len(data); i += step {
			if s.Write(data[i:min(len(data), i+step)]) != nil {
				return // the emulator panicked: its String() may too
			}
			if i%(3*step) == 0 && s.Resize(1+int(data[i])%30, 1+int(split)%100) != nil {
				return
			}
		}
		if got, want := s.text(), s.emu.String(); got != want {
			t.Fatalf("text %q, x/vt's String() %q", got, want)
		}
	})
}

// BenchmarkSnapshotWhileTyping is a look at a 200x50 screen after a few
// echoed keys: what the screen does up to 500 times a second while someone
// types fast.
func BenchmarkSnapshotWhileTyping(b *testing.B) {
	s := New(50, 200)
	defer s.Close()
	_ = s.Write([]byte("\x1b[2J\x1b[H> some prompt text on the first row\r\n"))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Write([]byte("kkkk"))
		_ = s.Snapshot()
	}
}
