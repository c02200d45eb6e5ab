package render

import (
	"fmt"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
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

// Clean makes text from elsewhere harmless on a terminal (see
// [termtext.Clean]: controls, invalid bytes and bidi controls become
// spaces).
func Clean(s string) string { return termtext.Clean(s) }

// CleanLines is [Clean] keeping the newlines (see [termtext.CleanLines]).
func CleanLines(s string) string { return termtext.CleanLines(s) }

// bidiControl: the characters that change the direction of the text after
// them (see [termtext.IsBidiControl]); JSON output escapes them.
var bidiControl = termtext.IsBidiControl
