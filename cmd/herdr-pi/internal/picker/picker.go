// Package picker asks a person on a terminal to choose one item of a
// grouped list (a heading per group, items under it), full screen, with a
// filter. It owns the keys and the drawing only: what the items mean, and
// what happens to the choice, belong to the caller. It reads and writes the
// streams it is given, never the process's own.
package picker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker/quietinit"
)

// Bubble Tea's own init has run by now (this package imports it), without
// querying the terminal: quietinit saw to it. Put the environment back.
func init() { quietinit.Restore() }

// ErrCancelled is the person leaving without a choice (Esc, q, Ctrl-C).
var ErrCancelled = errors.New("cancelled")

// Item is one line that can be chosen.
type Item struct {
	// Text is the line as shown, laid out by the caller; control
	// characters must already be gone from it.
	Text string
	// Hint replaces the key help at the bottom while the cursor is on the
	// item: what choosing it would do.
	Hint string
	// Disabled items are shown (faint) but the cursor skips them.
	Disabled bool
}

// Group is a heading and the items under it. A group without items shows
// its heading alone.
type Group struct {
	Title string
	Items []Item
}

// Options are what Run shows and where.
type Options struct {
	// In and Out are the terminal. In should be a terminal *os.File: it
	// is put in raw mode while the picker runs. Out must be one too for
	// the picker to learn the screen size (it assumes 80×24 otherwise).
	In  io.Reader
	Out io.Writer
	// Env is the environment the terminal's capabilities are read from.
	Env []string
	// Title is the first line.
	Title string
	// Color allows colour and reverse video; without it the cursor is
	// shown by a "> " mark only (it always is).
	Color  bool
	Groups []Group
}

// Choice is the chosen item: its group's and its own index.
type Choice struct{ Group, Item int }

// Run shows the picker until the person chooses (Enter) or cancels.
// It returns ErrCancelled on Esc, q or Ctrl-C, and when ctx ends.
func Run(ctx context.Context, o Options) (Choice, error) {
	m := newModel(o)
	if m.cursor < 0 {
		return Choice{}, errors.New("nothing to choose from")
	}
	p := tea.NewProgram(m, tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithEnvironment(o.Env), tea.WithAltScreen())
	// The end of ctx quits the program the way a key does. (Bubble Tea's
	// own WithContext kills it instead, which closes the terminal under
	// its input reader without waiting for it.)
	stop := context.AfterFunc(ctx, p.Quit)
	defer stop()
	final, err := p.Run()
	if errors.Is(err, tea.ErrInterrupted) {
		return Choice{}, ErrCancelled
	}
	if err != nil {
		return Choice{}, fmt.Errorf("the picker: %w", err)
	}
	fm := final.(*model)
	if fm.chosen == nil {
		return Choice{}, ErrCancelled
	}
	return *fm.chosen, nil
}

// entry is a line of the list: a group heading (item -1) or an item.
type entry struct{ group, item int }

type model struct {
	o      Options
	styles styles

	// filter narrows the entries to items (or groups) whose text holds
	// it; typing is true while the person types it.
	filter string
	typing bool

	entries []entry // what the filter lets through, in order
	cursor  int     // index into entries of a selectable item, -1 if none
	offset  int     // first entry on screen
	width   int
	height  int

	chosen *Choice
}

type styles struct {
	title, heading, faint, cursor lipgloss.Style
}

func newModel(o Options) *model {
	profile := termenv.Ascii
	if o.Color {
		profile = termenv.ANSI
	}
	// A fixed profile: lipgloss must neither inspect the process's own
	// stdout nor query the terminal, whose answer the picker would read
	// as keys.
	r := lipgloss.NewRenderer(io.Discard, termenv.WithProfile(profile))
	r.SetColorProfile(profile)
	r.SetHasDarkBackground(true)
	s := r.NewStyle()
	m := &model{o: o, width: 80, height: 24, styles: styles{
		title: s.Bold(true), heading: s.Bold(true), faint: s.Faint(true), cursor: s.Reverse(true),
	}}
	// The first frame already fits the terminal; Bubble Tea tells its
	// size only after drawing it.
	if f, ok := o.Out.(interface{ Fd() uintptr }); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
			m.width, m.height = int(ws.Col), int(ws.Row)
		}
	}
	m.refilter()
	return m
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.scroll()
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key handles a key press; a non-nil command ends the program.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyCtrlC:
		return tea.Quit
	case tea.KeyUp, tea.KeyCtrlP:
		m.move(-1)
		return nil
	case tea.KeyDown, tea.KeyCtrlN:
		m.move(1)
		return nil
	case tea.KeyPgUp:
		m.move(-m.listHeight())
		return nil
	case tea.KeyPgDown:
		m.move(m.listHeight())
		return nil
	case tea.KeyHome:
		m.move(-len(m.entries))
		return nil
	case tea.KeyEnd:
		m.move(len(m.entries))
		return nil
	}
	if m.typing {
		switch k.Type {
		case tea.KeyEsc:
			m.typing, m.filter = false, ""
			m.refilter()
		case tea.KeyEnter:
			m.typing = false
		case tea.KeyBackspace:
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
				m.refilter()
			}
		case tea.KeyRunes, tea.KeySpace:
			m.filter += string(k.Runes)
			m.refilter()
		}
		return nil
	}
	switch k.Type {
	case tea.KeyEsc:
		return tea.Quit
	case tea.KeyEnter:
		if m.cursor >= 0 {
			e := m.entries[m.cursor]
			m.chosen = &Choice{Group: e.group, Item: e.item}
			return tea.Quit
		}
	case tea.KeyRunes:
		if k.Paste {
			return nil
		}
		// Keys typed faster than they are read arrive together.
		for i, r := range k.Runes {
			if m.typing {
				m.filter += string(k.Runes[i:])
				m.refilter()
				return nil
			}
			if cmd := m.letter(r); cmd != nil {
				return cmd
			}
		}
	}
	return nil
}

// letter handles a letter key outside the filter.
func (m *model) letter(r rune) tea.Cmd {
	switch r {
	case 'q':
		return tea.Quit
	case 'k':
		m.move(-1)
	case 'j':
		m.move(1)
	case 'g':
		m.move(-len(m.entries))
	case 'G':
		m.move(len(m.entries))
	case '/':
		m.typing = true
	}
	return nil
}

func (m *model) selectable(i int) bool {
	e := m.entries[i]
	return e.item >= 0 && !m.o.Groups[e.group].Items[e.item].Disabled
}

// move goes n selectable items down (up when negative), stopping at the
// ends.
func (m *model) move(n int) {
	if m.cursor < 0 {
		return
	}
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for i := m.cursor + step; n > 0 && i >= 0 && i < len(m.entries); i += step {
		if m.selectable(i) {
			m.cursor = i
			n--
		}
	}
	m.scroll()
}

// refilter recomputes the entries the filter lets through and puts the
// cursor on the first selectable one.
func (m *model) refilter() {
	needle := strings.ToLower(m.filter)
	m.entries = m.entries[:0]
	for g, grp := range m.o.Groups {
		titleMatches := strings.Contains(strings.ToLower(ansi.Strip(grp.Title)), needle)
		head := len(m.entries)
		m.entries = append(m.entries, entry{g, -1})
		for i, it := range grp.Items {
			if titleMatches || strings.Contains(strings.ToLower(ansi.Strip(it.Text)), needle) {
				m.entries = append(m.entries, entry{g, i})
			}
		}
		if !titleMatches && len(m.entries) == head+1 {
			m.entries = m.entries[:head]
		}
	}
	m.cursor, m.offset = -1, 0
	for i := range m.entries {
		if m.selectable(i) {
			m.cursor = i
			break
		}
	}
	m.scroll()
}

// listHeight is the number of list lines: the screen less the title,
// the filter line when there is one, and the footer.
func (m *model) listHeight() int {
	h := m.height - 2
	if m.typing || m.filter != "" {
		h--
	}
	return max(h, 1)
}

// scroll keeps the cursor on screen, with its group's heading when the
// cursor is on the group's first item.
func (m *model) scroll() {
	if m.cursor < 0 {
		return
	}
	h := m.listHeight()
	top := m.cursor
	if top > 0 && m.entries[top-1].item < 0 {
		top--
	}
	if top < m.offset {
		m.offset = top
	}
	if m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
}

func (m *model) View() string {
	var lines []string
	line := func(s string) { lines = append(lines, ansi.Truncate(s, m.width, "…")) }
	line(m.styles.title.Render(m.o.Title))
	if m.typing || m.filter != "" {
		f := "filter: " + m.filter
		if m.typing {
			f += "▏"
		}
		line(f)
	}
	h := m.listHeight()
	for i := m.offset; i < len(m.entries) && i < m.offset+h; i++ {
		e := m.entries[i]
		grp := m.o.Groups[e.group]
		switch {
		case e.item < 0:
			line(m.styles.heading.Render(grp.Title))
		case i == m.cursor:
			line(m.styles.cursor.Render("> " + ansi.Strip(grp.Items[e.item].Text)))
		case grp.Items[e.item].Disabled:
			line("  " + m.styles.faint.Render(ansi.Strip(grp.Items[e.item].Text)))
		default:
			line("  " + grp.Items[e.item].Text)
		}
	}
	if len(m.entries) == 0 {
		line(m.styles.faint.Render("  nothing matches " + fmt.Sprintf("%q", m.filter)))
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	line(m.styles.faint.Render(m.footer()))
	return strings.Join(lines, "\n")
}

// footer is the cursor item's hint and the keys.
func (m *model) footer() string {
	keys := "↑/↓ move · enter open · / filter · esc quit"
	if m.typing {
		keys = "type to filter · enter done · esc clear"
	}
	if m.cursor >= 0 {
		e := m.entries[m.cursor]
		if hint := m.o.Groups[e.group].Items[e.item].Hint; hint != "" {
			return hint + "  ·  " + keys
		}
	}
	return keys
}
