package demo

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
)

// Sizes of the agent's screen. Off a terminal it is the plain size; on one
// it takes the terminal's width and what height the timeline leaves.
const (
	plainRows, plainCols = 16, 76
	minRows, maxRows     = 10, 16
	minCols, maxCols     = 40, 100
	// minBoxCols is the narrowest agent screen the log still draws: in a
	// narrower window its lines would say nothing.
	minBoxCols = 20
	// logIndent is where an event's text starts in the timeline, and
	// minLogText the narrowest the log wraps that text in.
	logIndent, minLogText = 18, 16
	// minTimeline is how many timeline lines a live frame always shows.
	minTimeline = 6
	// frameChrome is the title, the box's two borders and the state badge.
	frameChrome = 4
	// summaryLines is what the live view's last frame keeps free below it:
	// the summary, and a line for the shell after it, so the frame's top
	// stays on the screen.
	summaryLines = 4
)

// The smallest terminal fit accepts for a live frame.
const (
	liveMinRows = minRows + 1 + frameChrome + minTimeline
	liveMinCols = minCols + 2
)

// layout is where a live frame puts things on a terminal of rows×cols.
type layout struct {
	rows, cols int
	// agentRows and agentCols are the agent's screen inside the box.
	agentRows, agentCols int
}

// fit lays a live frame out on a terminal of rows×cols. The frame never
// uses the terminal's last row, so printing below it never scrolls its top
// away. ok is false when the terminal is too small for a readable frame;
// the demo then prints a running log instead.
func fit(rows, cols int) (layout, bool) {
	l := layout{rows: rows, cols: cols, agentCols: min(cols-2, maxCols)}
	l.agentRows = min(rows-1-frameChrome-minTimeline, maxRows)
	return l, l.agentCols >= minCols && l.agentRows >= minRows
}

// layoutFor lays the demo out for the person's terminal (nil: not one).
// Off a live frame the agent's screen is the plain size, but never wider
// than a terminal's width leaves inside the box's borders.
func layoutFor(t *Terminal) (layout, bool) {
	lay, live := layout{agentRows: plainRows, agentCols: plainCols}, false
	if t != nil {
		lay, live = fit(t.Rows, t.Cols)
		if !live {
			lay.agentRows, lay.agentCols = plainRows, plainCols
			if t.Cols > 0 { // 0: the terminal does not say its width
				lay.agentCols = max(min(plainCols, t.Cols-2), minBoxCols)
			}
		}
	}
	return lay, live
}

// view draws the demo: live, redrawn in place, on a terminal; as a plain
// running log elsewhere; nothing but the final JSON with --json.
type view struct {
	out  io.Writer
	live bool
	json bool
	// small is a terminal too small for the live view: the running log
	// then says so, and that q still stops it, and wraps at its width.
	small   bool
	lay     layout
	keys    *os.File // the person's terminal, for q
	saved   *unix.Termios
	raw     *unix.Termios // the key mode, taken again after Ctrl-Z and fg
	printed int
	r       *lipgloss.Renderer
	last    string
}

func newView(o Options, lay layout, live bool) *view {
	v := &view{out: o.Out, json: o.JSON, lay: lay, r: o.Styles, live: live && !o.JSON}
	v.small = o.Terminal != nil && !live && !o.JSON
	// q stops the demo whenever the person is at a terminal, whatever it
	// shows: the help promises it.
	if o.Terminal != nil && o.Terminal.Keys != nil {
		// Keys arrive one by one and unechoed, and reading never waits
		// (VMIN 0): q is seen within a frame. Ctrl-C stays a signal.
		in := o.Terminal.Keys
		if t, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
			raw := *t
			raw.Lflag &^= unix.ECHO | unix.ICANON
			raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 0, 0
			if unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw) == nil {
				v.keys, v.saved, v.raw = in, t, &raw
			}
		}
	}
	return v
}

func (v *view) begin() {
	if v.live {
		fmt.Fprint(v.out, "\x1b[?25l\x1b[2J\x1b[H")
	} else if !v.json {
		v.println("herdr-pi demo: a scripted agent under herdr-pi wrap, reporting to a Herdr stand-in")
		if v.small {
			v.println(fmt.Sprintf("This window (%dx%d) is too small for the live view (it needs %dx%d): printing the timeline instead.",
				v.lay.rows, v.lay.cols, liveMinRows, liveMinCols))
		}
		if v.keys != nil {
			v.println("Press q to stop early.")
		}
	}
}

// quitRequested reads pending keys from the person's terminal (never
// blocking) and says whether q was among them.
func (v *view) quitRequested() bool {
	if v.keys == nil {
		return false
	}
	// Asked first, so the read never waits whatever the mode: after
	// Ctrl-Z and fg the shell has put the terminal back in line mode
	// until resume, and a read would wait for Enter with the whole demo
	// (its frames, its timeout, Ctrl-C) behind it.
	fds := []unix.PollFd{{Fd: int32(v.keys.Fd()), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
		return false
	}
	buf := make([]byte, 32)
	n, _ := unix.Read(int(v.keys.Fd()), buf)
	for _, c := range buf[:max(n, 0)] {
		if c == 'q' || c == 'Q' {
			return true
		}
	}
	return false
}

// suspend gives the terminal back as the demo found it before the demo
// stops (Ctrl-Z): the shell's prompt comes back with the cursor shown.
func (v *view) suspend() {
	if v.saved != nil {
		_ = unix.IoctlSetTermios(int(v.keys.Fd()), unix.TCSETS, v.saved)
	}
	if v.live {
		fmt.Fprint(v.out, "\x1b[?25h")
	}
}

// resume takes the terminal again after fg: the key mode back (the shell
// restored its own), and on the live view a whole frame drawn anew over
// whatever the shell printed meanwhile.
func (v *view) resume() {
	if v.raw != nil {
		_ = unix.IoctlSetTermios(int(v.keys.Fd()), unix.TCSETS, v.raw)
	}
	if v.live {
		fmt.Fprint(v.out, "\x1b[?25l\x1b[2J\x1b[H")
		v.last = ""
	}
}

// frame shows the events so far: a redrawn frame on a terminal; in a log,
// the events older than settle, in order (a state decision is read from
// the trace a moment after the report it caused, and sorts before it).
func (v *view) frame(scr string, events []Event, settle float64) {
	if v.json {
		return
	}
	if !v.live {
		for _, e := range events[v.printed:] {
			if e.T > settle {
				break
			}
			fmt.Fprintln(v.out, v.logLine(e))
			v.printed++
		}
		return
	}
	v.draw(v.render(scr, events, 0))
}

func (v *view) draw(frame string) {
	if frame == v.last {
		return
	}
	v.last = frame
	var b strings.Builder
	b.WriteString("\x1b[H")
	for _, line := range strings.Split(frame, "\n") {
		b.WriteString(line)
		b.WriteString("\x1b[K\r\n")
	}
	b.WriteString("\x1b[J")
	fmt.Fprint(v.out, b.String())
}

func (v *view) end(scr string, events []Event, sum summary) {
	if v.saved != nil {
		_ = unix.IoctlSetTermios(int(v.keys.Fd()), unix.TCSETS, v.saved)
	}
	if v.json {
		return
	}
	text := v.summary(sum)
	if v.live {
		// The last frame gives the summary the timeline's last rows.
		v.draw(v.render(scr, events, summaryLines))
		fmt.Fprint(v.out, "\x1b[?25h", text, "\n")
		return
	}
	v.frame(scr, events, sum.end)
	fmt.Fprintln(v.out)
	if v.narrow() && v.lay.cols < minBoxCols+2 {
		v.println(fmt.Sprintf("(The agent's screen is left out: it needs %d columns.)", minBoxCols+2))
	} else {
		fmt.Fprintln(v.out, v.box(scr, v.lay.agentRows, v.lay.agentCols))
	}
	for _, line := range strings.Split(text, "\n") {
		v.println(line)
	}
}

// println prints a sentence of the log, its words wrapped at a small
// window's width (a pipe's lines stay whole, for grep).
func (v *view) println(text string) {
	if v.narrow() {
		text = strings.Join(wrapTo(text, v.lay.cols), "\n")
	}
	fmt.Fprintln(v.out, text)
}

// narrow says the log wraps at the window's width: a small one that says
// its width (a terminal of unknown size, 0x0, gets lines whole, as a pipe).
func (v *view) narrow() bool { return v.small && v.lay.cols > 0 }

// summary is what the demo ends on.
type summary struct {
	stopped  bool
	exit     int
	reports  int
	toasts   int
	released bool
	// end is the time of the last event, seconds since the start.
	end float64
}

func summarize(events []Event, stopped bool, exit int) summary {
	s := summary{stopped: stopped, exit: exit}
	for _, e := range events {
		switch e.Method {
		case "pane.report_agent":
			s.reports++
		case "notification.show":
			s.toasts++
		case "pane.release_agent":
			s.released = true
		}
		s.end = max(s.end, e.T)
	}
	return s
}

// summary fits in summaryLines-1 lines of 80 columns.
func (v *view) summary(s summary) string {
	first := fmt.Sprintf("The agent exited %d.", s.exit)
	if s.stopped {
		first = "Stopped."
	}
	sent := fmt.Sprintf(" herdr-pi sent Herdr %s and %s", plural(s.reports, "state report"), plural(s.toasts, "notification"))
	if s.released {
		sent += ",\nthen released the pane."
	} else {
		sent += "."
	}
	return first + sent + "\nNext: " + v.r.NewStyle().Bold(true).Render("herdr-pi wrap pi") + " in a Herdr pane · " +
		v.r.NewStyle().Bold(true).Render("herdr-pi doctor") + " checks this machine"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

var stateColors = map[string]string{"idle": "2", "working": "3", "blocked": "1", "unknown": "8"}

// eventLine is one timeline line, cut to width columns (0: not cut).
func (v *view) eventLine(e Event, width int) string {
	text := e.Text
	if width > 0 {
		text = ansi.Truncate(text, width-logIndent, "…")
	}
	return eventPrefix(e) + v.colorState(e, text)
}

// logLine is an event of the running log. In a small window its text
// wraps under itself, clear of the time and the source; in one too narrow
// even for that, the whole line wraps.
func (v *view) logLine(e Event) string {
	switch {
	case !v.narrow():
		return v.eventLine(e, 0)
	case v.lay.cols-logIndent >= minLogText:
		lines := wrapTo(e.Text, v.lay.cols-logIndent)
		return eventPrefix(e) + v.colorState(e, strings.Join(lines, "\n"+strings.Repeat(" ", logIndent)))
	default:
		return v.colorState(e, strings.Join(wrapTo(eventPrefix(e)+e.Text, v.lay.cols), "\n"))
	}
}

// wrapTo breaks text into lines of at most width columns, between words
// where it can: a word wider than the line is cut.
func wrapTo(text string, width int) []string {
	var lines []string
	for _, l := range render.WrapWords(text, width) {
		if ansi.StringWidth(l) > width {
			l = ansi.Hardwrap(l, width, true)
		}
		lines = append(lines, strings.Split(l, "\n")...)
	}
	return lines
}

// eventPrefix is the time and the source of an event: logIndent columns.
func eventPrefix(e Event) string {
	who := map[string]string{"herdr": "→ Herdr", "state": "state", "you": "you"}[e.Source]
	return fmt.Sprintf("%6.2fs  %-8s ", e.T, who)
}

// colorState colours the state a transition's text names.
func (v *view) colorState(e Event, text string) string {
	if e.Source == "state" && e.To != "" {
		text = strings.Replace(text, e.To, v.r.NewStyle().Bold(true).Foreground(lipgloss.Color(stateColors[e.To])).Render(e.To), 1)
	}
	return text
}

// box frames the agent's screen, padded to rows×cols.
func (v *view) box(scr string, rows, cols int) string {
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	if len(lines) > rows {
		lines = lines[:rows]
	}
	for len(lines) < rows {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, cols, "")
		if n := ansi.StringWidth(lines[i]); n < cols {
			lines[i] += strings.Repeat(" ", cols-n)
		}
	}
	return v.r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("8")).Render(strings.Join(lines, "\n"))
}

// render draws one live frame, leaving reserve of the timeline's rows free
// below it (for the summary) and the terminal's last row unused.
func (v *view) render(scr string, events []Event, reserve int) string {
	l := v.lay
	title := v.r.NewStyle().Bold(true).Render("herdr-pi demo") +
		v.r.NewStyle().Faint(true).Render(ansi.Truncate("  a scripted agent under herdr-pi wrap · q stops it", l.cols-13, "…"))
	cur := "unknown"
	for _, e := range events {
		if e.Source == "state" && e.To != "" {
			cur = e.To
		}
	}
	badge := v.r.NewStyle().Bold(true).Reverse(true).Foreground(lipgloss.Color(stateColors[cur])).Render(" " + strings.ToUpper(cur) + " ")
	lines := []string{title, v.box(scr, l.agentRows, l.agentCols), " pane state in Herdr: " + badge}
	room := max(l.rows-1-frameChrome-l.agentRows-reserve, 1)
	if len(events) > room {
		events = events[len(events)-room:]
	}
	for _, e := range events {
		lines = append(lines, v.eventLine(e, l.cols))
	}
	return strings.Join(lines, "\n")
}
