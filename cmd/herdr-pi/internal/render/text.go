package render

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Age says a duration the way people read it: 45s, 2m13s, 1h02m, 3d4h.
func Age(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Clock is the wall time of t in now's zone, with the date once it is not
// today.
func Clock(t, now time.Time) string {
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// Clean makes text from elsewhere (Herdr's replies, the workflow store,
// files, the environment) harmless on a terminal: control characters (ESC,
// BEL, C1 such as CSI U+009B, newlines) and invalid bytes
// become spaces, so none can start an escape sequence, retitle the window
// or clear the screen; the bidi controls become spaces too, so no name can
// make the rest of its line read backwards (a "Trojan Source" override).
func Clean(s string) string {
	return strings.Map(cleanRune, s)
}

// CleanLines is [Clean] for a message of several lines: it keeps the
// newlines (nothing else), so a list of problems stays a list.
func CleanLines(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return cleanRune(r)
	}, s)
}

func cleanRune(r rune) rune {
	if unicode.IsControl(r) || r == unicode.ReplacementChar || bidiControl(r) {
		return ' '
	}
	return r
}

// bidiControl reports the characters that change the direction of the
// text after them: the marks, embeddings, overrides and isolates of
// Unicode's bidirectional algorithm (UAX #9).
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
