package control

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
	"testing"
)

// FuzzParseHandoffAsk: no parameters make the decoder panic; what it
// accepts survives a round trip and holds its limits.
func FuzzParseHandoffAsk(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"run_id":"r","session_id":"s","owner_pid":3}`,
		`{"version":1,"run_id":"r","session_id":"s","owner_pid":3,"hold":true,"place":"workspace","caller_pane":"w1:p1","herdr_socket":"/tmp/h.sock","label":"open"}`,
		`{"version":1,"run_id":"r","session_id":"s","owner_pid":-1}`,
		`{"version":1,"run_id":"\u0007","session_id":"s","owner_pid":3}`,
		`{"version":1,"run_id":"r","session_id":"s","owner_pid":3}{}`,
		`null`, `[]`, `{"version":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		a, err := ParseHandoffAsk(params)
		if err != nil {
			return
		}
		if a.OwnerPID <= 0 || a.RunID == "" || a.SessionID == "" || !Printable(a.CallerPane) {
			t.Fatalf("accepted %+v", a)
		}
		b, err := jsonData(a)
		if err != nil {
			t.Fatal(err)
		}
		a2, err := ParseHandoffAsk(b)
		if err != nil || a2 != a {
			t.Fatalf("round trip: %+v → %s → %+v (%v)", a, b, a2, err)
		}
	})
}

// FuzzParseProgress: no payload makes the client's decoder panic; what it
// accepts survives a round trip.
func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{
		`{"event":"ordered","run":"r","label":"finder","handoff":"h1","needs_continue":false}`,
		`{"event":"launched","pane_id":"w1:p2","command":["a","b"],"env":["A=b"],"cwd":"/p","agent_pid":7,"needs_continue":false}`,
		`{"event":"handback","reason":"idle","transferred":true,"last_stop_reason":"stop","needs_continue":true,"continued":true,"error":"x"}`,
		`{"event":"working","pane_id":"w1:p2","joined":true,"since":"2026-12-05T14:06:02.123+01:00","asked_by":"herdr-pi open (pid 42)","needs_continue":false}`,
		`{"event":"working","since":"yesterday"}`, `{"event":"working","asked_by":"a\u001b[2Jb"}`,
		`{"event":"launched","cwd":"relative"}`, `{"event":"nope"}`, `{"event":"idle","agent_pid":-1}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProgress(data)
		if err != nil {
			return
		}
		if !progressEvents[p.Event] || p.AgentPID < 0 || !Printable(p.Label) || !Printable(p.AskedBy) {
			t.Fatalf("accepted %+v", p)
		}
		b, err := jsonData(p)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := ParseProgress(b)
		if err != nil || !reflect.DeepEqual(normalizeProgress(p), normalizeProgress(p2)) {
			t.Fatalf("round trip: %+v → %s → %+v (%v)", p, b, p2, err)
		}
	})
}

// normalizeProgress: an empty list and none encode alike.
func normalizeProgress(p Progress) Progress {
	if len(p.Command) == 0 {
		p.Command = nil
	}
	if len(p.Env) == 0 {
		p.Env = nil
	}
	return p
}

// FuzzClipText: whatever the text and the limit, the result fits it, is
// valid UTF-8 with nothing harmful on a terminal, and is the text itself
// when that fit and was harmless.
func FuzzClipText(f *testing.F) {
	for _, s := range []string{"", "boom", strings.Repeat("é", 700), "a\x1b[2Jb", "\xff\xfe", strings.Repeat("x", 2000),
		// C1 controls as code points and as raw bytes, a bidi override, an OSC with BEL.
		"\u009b2J\x9b\u202eexe.txt", "\x1b]0;title\x07" + strings.Repeat("é", 60)} {
		f.Add(s, MaxErrorText)
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 3 || n > 1<<16 {
			return // the limits it is used with; "…" alone is 3 bytes
		}
		got := ClipText(s, n)
		if len(got) > n || !utf8.ValidString(got) || strings.ContainsFunc(got, termtext.Harmful) {
			t.Fatalf("ClipText(%x, %d) = %x", s, n, got)
		}
		if len(s) <= n && utf8.ValidString(s) && !strings.ContainsFunc(s, termtext.Harmful) && got != s {
			t.Fatalf("ClipText(%x, %d) changed a text that fit: %x", s, n, got)
		}
	})
}
