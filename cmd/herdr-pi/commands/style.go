package commands

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// look is how human output is drawn: colour or not, and the width to wrap
// at. Colour is decided here, from the injected IO, never by lipgloss
// looking at the process's own stdout (go-toolkit.md §2.1): output going
// to a pipe, a file or a test buffer is plain text.
type look struct {
	color bool
	// width is the terminal's width; 0 means do not wrap (not a terminal).
	width int

	header, faint, bold lipgloss.Style
	ok, warn, fail      lipgloss.Style
	fixLabel            lipgloss.Style

	// r makes further styles with the same fixed profile (the demo's).
	r *lipgloss.Renderer
}

// lookFor decides from the IO: colour as IO.color says, and the width of
// stdout when it is a terminal.
func lookFor(io IO) look {
	_, _, width := io.stdoutTerminal()
	return newLook(io.color(), width)
}

// newLook builds the styles. The renderer gets a fixed profile, so lipgloss
// neither inspects the environment nor queries the terminal (a background
// colour query would write to the terminal and wait for its answer). The
// 16 basic colours follow the person's terminal theme.
func newLook(color bool, width int) look {
	profile := termenv.Ascii
	if color {
		profile = termenv.ANSI
	}
	r := lipgloss.NewRenderer(io.Discard, termenv.WithProfile(profile))
	r.SetColorProfile(profile)
	r.SetHasDarkBackground(true)
	s := r.NewStyle()
	return look{
		r:        r,
		color:    color,
		width:    width,
		header:   s.Bold(true),
		faint:    s.Faint(true),
		bold:     s.Bold(true),
		ok:       s.Foreground(lipgloss.Color("2")),
		warn:     s.Foreground(lipgloss.Color("3")).Bold(true),
		fail:     s.Foreground(lipgloss.Color("1")).Bold(true),
		fixLabel: s.Foreground(lipgloss.Color("6")),
	}
}

// render applies st to text (plain text when there is no colour).
func (l look) render(st lipgloss.Style, text string) string {
	if !l.color || text == "" {
		return text
	}
	return st.Render(text)
}

// pad right-pads text, measured as the terminal shows it, to n columns.
func pad(text string, n int) string {
	if w := ansi.StringWidth(text); w < n {
		return text + strings.Repeat(" ", n-w)
	}
	return text
}

// hang lays text out after a first-line prefix of indent columns: on a
// terminal it wraps at the width, continuing lines indented to the same
// column; elsewhere it stays one line, so grep and scripts see whole rows.
func (l look) hang(text string, indent int) string {
	if l.width <= 0 || l.width-indent < 20 {
		return text
	}
	return strings.Join(wrapWords(text, l.width-indent), "\n"+strings.Repeat(" ", indent))
}

// wrapWords fills lines of at most limit columns with whole words, breaking
// only at spaces: a path or package name is never cut, and one longer than
// the line gets a line of its own.
func wrapWords(text string, limit int) []string {
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
