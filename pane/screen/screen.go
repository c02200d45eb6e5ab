// Package screen keeps a shadow copy of what the wrapped agent draws: a
// terminal emulator (charmbracelet/x/vt) fed from the pty's observer tap,
// off the copy path. It publishes snapshots for detection — the visible
// screen as text, the OSC 0/2 title and the last OSC 9;4 progress payload.
//
// It never writes to the child or the terminal, and it never slows output:
// under a flood the screen lags and skips, and catches up when output stops.
package screen

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
	"github.com/charmbracelet/x/vt"
)

// Snapshot is what the shadow screen shows at one moment.
type Snapshot struct {
	// Text is the visible screen, rows joined by \n, trailing blanks of
	// each row removed (so it always has Rows lines).
	Text string
	// Title is the last OSC 0/2 title.
	Title string
	// Progress is the last OSC 9;4 payload, without the leading "9;"
	// (e.g. "4;3;"), as Herdr keeps it.
	Progress   string
	Rows, Cols int
	// Lossy reports that output was skipped since the screen was last in
	// step with the terminal (a flood outran it); the next quiet redraw
	// by the agent brings it back.
	Lossy bool
}

// same reports whether two snapshots show the same thing.
func (s Snapshot) same(o Snapshot) bool {
	return s.Text == o.Text && s.Title == o.Title && s.Progress == o.Progress && s.Rows == o.Rows && s.Cols == o.Cols
}

// Screen is one shadow terminal. It is not safe for concurrent use: one
// goroutine (the consumer) feeds and reads it.
type Screen struct {
	emu        *vt.Emulator
	drain      sync.WaitGroup
	rows, cols int
	title      string
	progress   string
	// suspect is set after the emulator panicked and was rebuilt: nothing
	// screen-derived may be published until fresh output has been drawn.
	suspect bool
	panics  int
	// margined records, for the main screen [0] and the alternate one
	// [1], that the agent set margins narrower than the screen (DECSTBM,
	// DECSLRM) and has not set them back since. Until it does, a flood may
	// not be drawn on a cleared screen (restartFlood): rows outside the
	// margins would be wiped, where a terminal keeps them.
	margined [2]bool
	// mirror is a second parser fed exactly the bytes the emulator's own
	// parser is fed (x/vt keeps that one private): both run x/ansi's one
	// transition table, so the mirror's state is the emulator's. Inside an
	// unfinished sequence — an OSC, a DCS or SOS string waiting for its
	// end, a UTF-8 character cut short, or one of x/vt's own departures
	// from a VT500 such as an ESC right after ESC P, which it keeps as DCS
	// data — a flood's lines are part of that sequence, and the escape that
	// clears the screen would end it: restartFlood does nothing then.
	mirror   *ansi.Parser
	restarts int    // floods drawn on a cleared screen, for tests
	textBuf  []byte // reused by text
}

// MaxRows and MaxCols bound the shadow screen. The emulator keeps about
// 230 bytes a cell (measured with x/vt), and a terminal may claim 65535 in
// both (LINES and COLUMNS, or a window size set by a program): at
// 60000x60000 the wrapper grew by a gigabyte a second and never finished.
// 300x600 — larger than a full-screen terminal on a 5K display — costs at
// most about 42 MB. A bigger terminal is shadowed at that size: lines wrap
// at column 600 and a position past row 300 lands on the last row, so what
// is drawn beyond the bound may be misread.
const (
	MaxRows = 300
	MaxCols = 600
)

// bounded is a size the shadow screen can have: at least 1x1, at most
// MaxRows x MaxCols.
func bounded(rows, cols int) (int, int) {
	return min(max(rows, 1), MaxRows), min(max(cols, 1), MaxCols)
}

// New returns a shadow screen of the given size, within MaxRows x MaxCols.
func New(rows, cols int) *Screen {
	rows, cols = bounded(rows, cols)
	s := &Screen{rows: rows, cols: cols}
	s.build()
	return s
}

// build starts a fresh emulator at the current size. Its query replies
// (DSR, DA, colour queries) go to an internal pipe whose writes block until
// read: they are drained and dropped, because the real terminal already
// answers the child (go-toolkit.md §3.3).
func (s *Screen) build() {
	emu := vt.NewEmulator(s.cols, s.rows)
	// Only the visible screen matters: no scrollback, which would cost
	// memory, and a copy of every line that scrolls off, for nothing. (The
	// zero Scrollback keeps no lines; x/vt has no other way to turn it off.)
	if sb := emu.Scrollback(); sb != nil {
		*sb = vt.Scrollback{}
	}
	titleHandler := func(data []byte) bool {
		if _, name, ok := bytes.Cut(data, []byte{';'}); ok {
			s.title = string(name)
		}
		return true
	}
	// The margins are watched, not handled: returning false lets x/vt's
	// own handler apply them.
	emu.RegisterCsiHandler('r', func(params ansi.Params) bool {
		top, _, _ := params.Param(0, 1)
		bottom, _, _ := params.Param(1, 0)
		s.margined[altIndex(emu)] = top > 1 || (bottom > 0 && bottom < emu.Height())
		return false
	})
	emu.RegisterCsiHandler('s', func(params ansi.Params) bool {
		// With parameters this is DECSLRM (left and right margins); a
		// reset to the full width is not told apart: staying careful
		// only costs a flood its cheaper drawing.
		if len(params) > 0 {
			s.margined[altIndex(emu)] = true
		}
		return false
	})
	// x/vt repeats a character, moves to a tab stop and erases a cell as
	// many times as the first parameter says, one at a time: `CSI
	// 999999999 b` kept a 200x50 screen busy for four minutes, and a
	// parameter can reach 2^31-2. Past a bound the screen reads the same
	// (every cell of any scrolling region rewritten by the repeat; no
	// more tab stops or cells in a row than it has columns), so these
	// handlers lower the parameter to it in place, before x/vt's own
	// handler reads it. The cursor may then end elsewhere on its row
	// after a longer repeat than the bound; its text does not differ.
	rowBound := func() int { return emu.Width() }
	screenBound := func() int { return (emu.Height() + 1) * emu.Width() }
	emu.RegisterCsiHandler('I', boundFirstParam(rowBound))    // CHT
	emu.RegisterCsiHandler('Z', boundFirstParam(rowBound))    // CBT
	emu.RegisterCsiHandler('X', boundFirstParam(rowBound))    // ECH
	emu.RegisterCsiHandler('b', boundFirstParam(screenBound)) // REP
	emu.RegisterOscHandler(0, titleHandler)
	emu.RegisterOscHandler(2, titleHandler)
	emu.RegisterOscHandler(9, func(data []byte) bool {
		payload := bytes.TrimPrefix(data, []byte("9;"))
		if bytes.Equal(payload, []byte("4")) || bytes.HasPrefix(payload, []byte("4;")) {
			s.progress = string(payload)
		}
		return true
	})
	s.emu = emu
	// Sized to hold nothing: only its state is read.
	s.mirror = ansi.NewParser()
	s.mirror.SetParamsSize(0)
	s.mirror.SetDataSize(1)
	s.drain.Add(1)
	go func() {
		defer s.drain.Done()
		_, _ = io.Copy(io.Discard, emu)
	}()
}

// boundFirstParam returns a CSI handler that lowers the sequence's first
// parameter to bound() when it is larger, and leaves the sequence to the
// handler registered before it (x/vt's own): the parameters it is given
// are the ones that handler reads next.
func boundFirstParam(bound func() int) vt.CsiHandler {
	return func(params ansi.Params) bool {
		if len(params) > 0 {
			if n, more, _ := params.Param(0, 0); n > 0 {
				if limit := bound(); n > limit {
					params[0] = ansi.Param(ansi.Parameter(limit, more))
				}
			}
		}
		return false
	}
}

// teardown ends the drain goroutine through the input pipe, not
// emu.Close, whose unlocked flag races with Read (go-toolkit.md §3.3).
func (s *Screen) teardown() {
	_ = s.emu.InputPipe().(io.Closer).Close()
	s.drain.Wait()
}

// writeChunk bounds how much of the input one emulator panic can touch.
const writeChunk = 4 << 10

// minRetry is the smallest piece a failing chunk is split into.
const minRetry = 1024

// Write feeds output bytes. A panic inside the emulator (it has known
// out-of-range bugs) is recovered: the emulator is rebuilt empty at the
// current size and the failing piece is drawn again on it, in halves
// down to a few bytes, so one bad sequence costs only its neighbourhood
// and the output after it still lands. The screen is suspect until bytes
// have been drawn on the new emulator without a panic; the first error is
// returned.
func (s *Screen) Write(p []byte) (err error) {
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		p = p[len(chunk):]
		err = cmp.Or(err, s.writeGuarded(chunk))
	}
	return err
}

// writeGuarded draws p and moves the mirror parser over it once the
// emulator took it; a panic rebuilt both, at their ground state.
func (s *Screen) writeGuarded(p []byte) error {
	err := s.guard(func() { _, _ = s.emu.Write(p) })
	if err == nil {
		s.advanceMirror(p)
		s.suspect = false
		return nil
	}
	if len(p) > minRetry {
		mid := len(p) / 2
		_ = s.writeGuarded(p[:mid])
		_ = s.writeGuarded(p[mid:])
	}
	return err
}

// Resize changes the screen size, as the terminal did, within MaxRows x
// MaxCols.
func (s *Screen) Resize(rows, cols int) error {
	rows, cols = bounded(rows, cols)
	if rows == s.rows && cols == s.cols {
		return nil
	}
	s.rows, s.cols = rows, cols
	return s.guard(func() { s.emu.Resize(cols, rows) })
}

func (s *Screen) guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panics++
			err = fmt.Errorf("shadow screen: emulator panic (rebuilt at %dx%d): %v", s.rows, s.cols, r)
			s.teardown()
			s.build()
			s.suspect = true
		}
	}()
	f()
	return nil
}

// Suspect reports that the emulator was rebuilt and has not drawn fresh
// output since: its screen says nothing about the agent.
func (s *Screen) Suspect() bool { return s.suspect }

// Panics counts the emulator panics recovered so far.
func (s *Screen) Panics() int { return s.panics }

// blankSnapshot is what a screen of the given size, new and drawn on by
// nothing, shows: Follow's look before the first output built one.
func blankSnapshot(rows, cols int) Snapshot {
	rows, cols = bounded(rows, cols)
	return Snapshot{Text: strings.Repeat("\n", rows-1), Rows: rows, Cols: cols}
}

// Snapshot reads the screen.
func (s *Screen) Snapshot() Snapshot {
	var text string
	if err := s.guard(func() { text = s.text() }); err != nil {
		text = ""
	}
	return Snapshot{Text: text, Title: s.title, Progress: s.progress, Rows: s.rows, Cols: s.cols}
}

// text is the visible screen as x/vt's String() gives it (each row's
// cells, the blank halves of wide characters left out, trailing blanks
// trimmed), built in one reused buffer: String() builds every row in two
// builders, then splits the whole and joins it again to trim the rows:
// 131 µs and 309 allocations for a 200x50 screen, 43 µs and 4 this way
// (BenchmarkSnapshotWhileTyping), for a look up to 60 times a second while
// output keeps coming (FollowOptions.Frame). FuzzTextIsTheEmulatorsString
// holds the two equal.
func (s *Screen) text() string {
	buf := s.textBuf[:0]
	for y := range s.emu.Height() {
		if y > 0 {
			buf = append(buf, '\n')
		}
		row := len(buf)
		for x := 0; ; x++ {
			c := s.emu.CellAt(x, y)
			if c == nil {
				break
			}
			if c.Content == "" && c.Width == 0 && c.IsZero() {
				continue
			}
			buf = append(buf, c.Content...)
		}
		buf = trimRow(buf, row)
	}
	s.textBuf = buf
	return string(buf)
}

// trimRow drops the blanks ending buf[row:], before a final \r if there
// is one (which stays), as x/vt's String() trims each row.
func trimRow(buf []byte, row int) []byte {
	cr := len(buf) > row && buf[len(buf)-1] == '\r'
	end := len(buf)
	if cr {
		end--
	}
	trimmed := end
	for trimmed > row && buf[trimmed-1] == ' ' {
		trimmed--
	}
	if trimmed == end {
		return buf
	}
	if cr {
		buf[trimmed] = '\r'
		trimmed++
	}
	return buf[:trimmed]
}

// advanceMirror moves the mirror parser over p. In its ground state every
// ASCII byte but ESC leaves it there (printed or carried out), so runs of
// them are stepped over without the parser: plain text, the bulk of any
// output, costs a compare a byte.
func (s *Screen) advanceMirror(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.mirror.State() == parser.GroundState {
			for i < len(p) && p[i] < 0x80 && p[i] != 0x1b {
				i++
			}
			if i == len(p) {
				return
			}
		}
		s.mirror.Advance(p[i])
	}
}

func altIndex(emu *vt.Emulator) int {
	if emu.IsAltScreen() {
		return 1
	}
	return 0
}

// restartFlood prepares the screen for the newest lines of a flood: the
// cursor home and the screen cleared, so drawing the lines fills it from
// the top instead of scrolling every cell once per line (x/vt moves each
// cell on every scroll; a look at a flood of base64 lines on a 200x50
// screen took 3.7 ms, 1.0 ms this way: BenchmarkFeedFlood). Callers use it
// only for plain text with more line feeds than the screen has rows, which
// on a terminal pushes every earlier row out: the screen ends as a
// terminal that drew every byte shows it, more exactly than when the
// lines are drawn over rows the flood skipped. With margins set, or inside
// an unfinished escape sequence, it does nothing: rows outside the margins
// would be wiped, and the sequence ended.
func (s *Screen) restartFlood() {
	if s.margined[altIndex(s.emu)] || s.mirror.State() != parser.GroundState {
		return
	}
	s.restarts++
	_ = s.Write([]byte("\x1b[H\x1b[2J"))
}

// Close stops the emulator's drain goroutine.
func (s *Screen) Close() { s.teardown() }
