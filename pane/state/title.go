package state

import (
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// maxReportedTitle is the longest text, in bytes, Pi's status channel
// reports (pi-agent.md §10).
const maxReportedTitle = 2048

// ReportedTitle is a dialog's title as Pi's status channel reports it
// (pi-agent.md §10): each run of control characters (C0, DEL, C1) one
// space, the ends trimmed, at most 2048 bytes cut between code points. The
// probe hears the title as the extension gave it, the channel this way;
// held alike, the two say one dialog is one question. Text already in
// this form comes back unchanged.
func ReportedTitle(s string) string {
	var b strings.Builder
	ctl := false
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			if !ctl {
				b.WriteByte(' ')
			}
			ctl = true
			continue
		}
		ctl = false
		b.WriteRune(r)
	}
	t := jstext.Trim(b.String())
	if len(t) > maxReportedTitle {
		n := maxReportedTitle
		for n > 0 && !utf8.RuneStart(t[n]) {
			n--
		}
		t = t[:n]
	}
	// herdr-pi's reader trims what the cut left at the end as well.
	return strings.TrimSpace(t)
}
