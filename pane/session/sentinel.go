package session

import "github.com/herdr-pi/herdr-pi/internal/jstext"

// Marker is the sentinel line.
const Marker = ":input_needed:"

// HasMarker is the sentinel rule on one text (§16): after JavaScript's
// trimEnd, the last line (split on /\r?\n/), trimmed, equals the marker.
// Trailing blank lines and spaces do not matter, CRLF is fine, and the
// match is exact and case-sensitive. There is no Markdown awareness: a
// closing ``` after the marker is a last line of its own, so a marker
// inside a closed code fence does not count.
func HasMarker(text string) bool {
	lines := jstext.SplitLines(jstext.TrimEnd(text))
	return jstext.Trim(lines[len(lines)-1]) == Marker
}
