package render

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestTerminalSafeJSONBoundaries pins the edges of what --json escapes:
// DEL and the last C1 control go, the characters beside them stay as they
// are (a script comparing names must see é and a no-break space, not
// \u escapes), and every bidi control goes while its neighbours stay.
func TestTerminalSafeJSONBoundaries(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the JSON string as written, quotes included
	}{
		{"~", `"~"`},
		{"\x7f", `"\u007f"`},
		{"\u0080", `"\u0080"`},
		{"\u009f", `"\u009f"`},
		{"\u00a0é", "\"\u00a0é\""},
		{"\u061b\u061c", "\"\u061b\\u061c\""},
		{"\u200d\u200e\u200f\u2010", "\"\u200d\\u200e\\u200f\u2010\""},
		{"\u2029", `"\u2029"`}, // Go's encoder escapes it already
		{"\u202a\u202e\u202f", "\"\\u202a\\u202e\u202f\""},
		{"\u2065\u2066\u2069\u206a", "\"\u2065\\u2066\\u2069\u206a\""},
	} {
		var out bytes.Buffer
		if err := JSONLine(&out, tc.in); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != tc.want+"\n" {
			t.Errorf("JSONLine(%+q) = %+q, want %+q", tc.in, got, tc.want+"\n")
		}
		var back string
		if err := json.Unmarshal(out.Bytes(), &back); err != nil || back != tc.in {
			t.Errorf("JSONLine(%+q) decodes as %+q (%v)", tc.in, back, err)
		}
	}
}

// TestCleanBidiBoundaries: every bidi control becomes a space, from the
// first of each range to the last, and the characters next to the ranges
// are left alone.
func TestCleanBidiBoundaries(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a\u202ab", "a b"},
		{"a\u202eb", "a b"},
		{"a\u2066b\u2069c", "a b c"},
		{"a\u200eb\u200fc", "a b c"},
		{"a\u061cb", "a b"},
		{"\u2029\u202f\u2065\u206a\u061b\u200d", "\u2029\u202f\u2065\u206a\u061b\u200d"},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

// TestAgeBoundaries: each unit takes over exactly at its boundary, and
// the smaller unit after it is the remainder, not the total.
func TestAgeBoundaries(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{59 * time.Second, "59s"},
		{time.Minute, "1m00s"},
		{time.Hour - time.Second, "59m59s"},
		{time.Hour, "1h00m"},
		{24*time.Hour - time.Minute, "23h59m"},
		{24 * time.Hour, "1d0h"},
		{50 * time.Hour, "2d2h"},
	} {
		if got := Age(tc.d); got != tc.want {
			t.Errorf("Age(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestClockBoundaries: the date is left out only on the same calendar
// day in the reader's zone — not on the same day of another month — and
// the time is shown in that zone, not in the one it was recorded in.
func TestClockBoundaries(t *testing.T) {
	zone := time.FixedZone("UTC+2", 2*3600)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, zone)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 12, 2, 7, 30, 0, 0, time.UTC), "09:30:00"},
		{time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC), "01:30:00"},
		{time.Date(2026, 12, 1, 21, 30, 0, 0, time.UTC), "2026-12-01 23:30:00"},
		{time.Date(2026, 11, 2, 9, 0, 0, 0, zone), "2026-11-02 09:00:00"},
		{time.Date(2025, 12, 2, 9, 0, 0, 0, zone), "2025-12-02 09:00:00"},
	} {
		if got := Clock(tc.t, now); got != tc.want {
			t.Errorf("Clock(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}
