package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
)

// DoctorText prints rows grouped by section, one line each, with the
// fix on the line below: plain text for pipes and files, coloured status
// words and bold section titles on a terminal, where long lines also wrap
// under their own column. A row quotes what checks found (Herdr's version
// and errors, paths, file contents), so its words are cleaned here, for
// every row a check makes now or later.
func DoctorText(w io.Writer, rows []doctor.Row, l Look) error {
	rows = slices.Clone(rows)
	for i, r := range rows {
		rows[i].Name, rows[i].Detail, rows[i].Fix = Clean(r.Name), Clean(r.Detail), Clean(r.Fix)
	}
	var b strings.Builder
	for i, sec := range groupBySection(rows) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l.Render(l.Header, doctor.Title(sec[0].Section)) + "\n")
		width := 0
		for _, r := range sec {
			width = max(width, ansi.StringWidth(r.Name))
		}
		indent := 2 + 4 + 2 + width + 2
		for _, r := range sec {
			fmt.Fprintf(&b, "  %s  %s  %s\n", Pad(DoctorStatus(l, r.Status), 4), Pad(r.Name, width), l.Hang(r.Detail, indent))
			if r.Fix != "" {
				fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat(" ", indent), l.Render(l.FixLabel, "fix:"), l.Hang(r.Fix, indent+5))
			}
		}
	}
	c := doctor.Count(rows)
	fmt.Fprintf(&b, "\n%s, %s.\n", drawCount(l, c[doctor.Warn], "warning", l.Warn), drawCount(l, c[doctor.Fail], "failure", l.Fail))
	_, err := io.WriteString(w, b.String())
	return err
}

// groupBySection splits rows (already in section order) into runs of one
// section each.
func groupBySection(rows []doctor.Row) [][]doctor.Row {
	var groups [][]doctor.Row
	for i, r := range rows {
		if i == 0 || r.Section != rows[i-1].Section {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	return groups
}

// DoctorStatus colours a row status word.
func DoctorStatus(l Look, s string) string {
	switch s {
	case doctor.OK:
		return l.Render(l.OK, s)
	case doctor.Warn:
		return l.Render(l.Warn, s)
	}
	return l.Render(l.Fail, s)
}

// drawCount says "n words", coloured when there is at least one.
func drawCount(l Look, n int, word string, st lipgloss.Style) string {
	text := doctor.Plural(n, word)
	if n == 0 {
		return text
	}
	return l.Render(st, text)
}
