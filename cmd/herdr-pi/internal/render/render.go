// Package render draws herdr-pi's human output: colour or none (decided
// by the caller from its IO, never by looking at the process's stdout),
// words wrapped at the terminal's width, width-aware tables, and the
// person's view of what commands found (a wrapper's status, the workflow
// runs). Text that came from other programs is made harmless (Clean)
// before it reaches the terminal. It decides nothing and reads nothing.
package render

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// Look is how human output is drawn: colour or not, and the width to wrap
// at. Colour is decided here, from the injected IO, never by lipgloss
// looking at the process's own stdout (go-toolkit.md §2.1): output going
// to a pipe, a file or a test buffer is plain text.
type Look struct {
	Color bool
	// Width is the terminal's width; 0 means do not wrap (not a terminal).
	Width int

	Header, Faint, Bold lipgloss.Style
	OK, Warn, Fail      lipgloss.Style
	FixLabel            lipgloss.Style

	// R makes further styles with the same fixed profile.
	R *lipgloss.Renderer
}

// New builds the styles. The renderer gets a fixed profile, so lipgloss
// neither inspects the environment nor queries the terminal (a background
// colour query would write to the terminal and wait for its answer). The
// 16 basic colours follow the person's terminal theme.
func New(color bool, width int) Look {
	profile := termenv.Ascii
	if color {
		profile = termenv.ANSI
	}
	r := lipgloss.NewRenderer(io.Discard, termenv.WithProfile(profile))
	r.SetColorProfile(profile)
	r.SetHasDarkBackground(true)
	s := r.NewStyle()
	return Look{
		R:        r,
		Color:    color,
		Width:    width,
		Header:   s.Bold(true),
		Faint:    s.Faint(true),
		Bold:     s.Bold(true),
		OK:       s.Foreground(lipgloss.Color("2")),
		Warn:     s.Foreground(lipgloss.Color("3")).Bold(true),
		Fail:     s.Foreground(lipgloss.Color("1")).Bold(true),
		FixLabel: s.Foreground(lipgloss.Color("6")),
	}
}

// Render applies st to text (plain text when there is no colour).
func (l Look) Render(st lipgloss.Style, text string) string {
	if !l.Color || text == "" {
		return text
	}
	return st.Render(text)
}

// Pad right-pads text, measured as the terminal shows it, to n columns.
func Pad(text string, n int) string {
	if w := ansi.StringWidth(text); w < n {
		return text + strings.Repeat(" ", n-w)
	}
	return text
}

// Hang lays text out after a first-line prefix of indent columns: on a
// terminal it wraps at the width, continuing lines indented to the same
// column; elsewhere it stays one line, so grep and scripts see whole rows.
func (l Look) Hang(text string, indent int) string {
	if l.Width <= 0 || l.Width-indent < 20 {
		return text
	}
	return strings.Join(WrapWords(text, l.Width-indent), "\n"+strings.Repeat(" ", indent))
}

// WrapWords fills lines of at most limit columns with whole words, breaking
// only at spaces: a path or package name is never cut, and one longer than
// the line gets a line of its own.
func WrapWords(text string, limit int) []string {
	var lines []string
	var cur strings.Builder
	curWidth := 0
	for _, word := range strings.Fields(text) {
		w := ansi.StringWidth(word)
		if curWidth > 0 && curWidth+1+w > limit {
			lines = append(lines, cur.String())
			cur.Reset()
			curWidth = 0
		}
		if curWidth > 0 {
			cur.WriteByte(' ')
			curWidth++
		}
		cur.WriteString(word)
		curWidth += w
	}
	return append(lines, cur.String())
}

// column is a column of a table.
type Column struct {
	Header string
	// flex columns shrink on a narrow terminal, their cells wrapping;
	// the others keep their width.
	Flex bool
	// spare columns are left out when the terminal is too narrow for
	// the table even with its flexible columns wrapped.
	Spare bool
}

// minFlex is the narrowest a flexible column gets: wrapping into
// narrower columns reads worse than the terminal's own line wrap.
const minFlex = 12

// Table lays rows out under bold headers, two spaces between columns, no
// borders. On a terminal narrower than the table the flexible columns
// shrink and wrap, and spare columns go when that is not enough; it is
// never stretched wider than it needs, and elsewhere (width 0) never
// wrapped, so a row stays one line for grep.
func (l Look) Table(cols []Column, rows [][]string) string {
	keep := func(Column) bool { return true }
	fits, wrap := l.fit(only(cols, rows, keep))
	if !fits && !wrap {
		narrow := func(c Column) bool { return !c.Spare }
		if f, w := l.fit(only(cols, rows, narrow)); f || w {
			keep, wrap = narrow, w
		}
	}
	cols, rows = only(cols, rows, keep)
	headers := make([]string, len(cols))
	for c, col := range cols {
		headers[c] = col.Header
	}
	natural := naturalWidths(cols, rows)
	last := len(cols) - 1
	t := table.New().Border(lipgloss.HiddenBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(false).BorderColumn(false).BorderRow(false).
		BorderStyle(l.R.NewStyle()).
		Headers(headers...).Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			s := l.R.NewStyle()
			if col != last {
				s = s.PaddingRight(2)
			}
			if wrap && !cols[col].Flex {
				s = s.Width(natural[col])
			}
			if row == table.HeaderRow {
				s = s.Inherit(l.Header)
			}
			return s
		})
	if wrap {
		t = t.Width(l.Width)
	}
	lines := strings.Split(t.String(), "\n")
	for i, s := range lines {
		lines[i] = strings.TrimRight(s, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// only is the columns keep keeps, and the rows' cells in them.
func only(cols []Column, rows [][]string, keep func(Column) bool) ([]Column, [][]string) {
	var kept []Column
	var idx []int
	for c, col := range cols {
		if keep(col) {
			kept, idx = append(kept, col), append(idx, c)
		}
	}
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(idx))
		for j, c := range idx {
			out[i][j] = row[c]
		}
	}
	return kept, out
}

// fit says whether the columns fit the terminal as they are, and if not
// whether they would with the flexible ones wrapped.
func (l Look) fit(cols []Column, rows [][]string) (fits, wrap bool) {
	if l.Width <= 0 {
		return true, false
	}
	total, rigid, nflex := 0, 0, 0
	for c, w := range naturalWidths(cols, rows) {
		total += w
		if cols[c].Flex {
			nflex++
		} else {
			rigid += w
		}
	}
	if total <= l.Width {
		return true, false
	}
	return false, nflex > 0 && l.Width-rigid >= minFlex*nflex
}

// naturalWidths is each column's width unwrapped, with the two spaces
// that follow every column but the last.
func naturalWidths(cols []Column, rows [][]string) []int {
	w := make([]int, len(cols))
	for c, col := range cols {
		w[c] = lipgloss.Width(col.Header)
	}
	for _, row := range rows {
		for c, cell := range row {
			w[c] = max(w[c], lipgloss.Width(cell))
		}
	}
	for c := range len(w) - 1 {
		w[c] += 2
	}
	return w
}
