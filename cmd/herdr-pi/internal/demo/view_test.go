package demo

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/herdr-pi/herdr-pi/internal/golden"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func plainStyles() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
	r.SetColorProfile(termenv.Ascii)
	return r
}

// agentScreen draws the scripted agent at rows×cols after its first
// question, as the shadow screen sees it.
func sampleScreen(rows, cols int) string {
	s := &agentScreen{w: &bytes.Buffer{}, rows: rows, cols: cols, cwd: "/tmp/herdr-pi-demo123/demo-project"}
	s.say("› ", "fix the flaky test in the api package")
	s.say("", question)
	lines := make([]string, rows)
	lines[0] = " pi demo agent (scripted: no model, no network)"
	chat := s.chat[max(0, len(s.chat)-(rows-7)):]
	for i, l := range chat {
		lines[2+i] = l
	}
	lines[rows-4] = strings.Repeat("─", cols)
	lines[rows-2] = strings.Repeat("─", cols)
	lines[rows-1] = s.cwd
	return strings.Join(lines, "\n")
}

func sampleEvents() []Event {
	start := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	tl := &timeline{start: start}
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	herdr := func(s float64, method, params string) {
		e := herdrEvent(method, json.RawMessage(params))
		e.at = at(s)
		tl.add(e)
	}
	herdr(0.03, "pane.report_agent", `{"state":"unknown","agent":"pi"}`)
	herdr(0.03, "events.subscribe", `{}`)
	tl.add(stateEvent(state.Event{Kind: state.EventTransition, At: at(0.06), From: state.Unknown, To: state.Idle, Cause: "probe:connected"}))
	herdr(0.08, "pane.get", `{}`)
	herdr(0.13, "pane.report_agent", `{"state":"idle"}`)
	tl.add(Event{Source: "you", Text: `typed "fix the flaky test in the api package", Enter`, at: at(2.15)})
	tl.add(stateEvent(state.Event{Kind: state.EventTransition, At: at(2.16), From: state.Idle, To: state.Working, Cause: "probe:agent_start"}))
	herdr(2.16, "pane.report_agent", `{"state":"working"}`)
	tl.add(stateEvent(state.Event{Kind: state.EventTransition, At: at(4.98), From: state.Working, To: state.Blocked, Message: "input needed", Cause: "open:sentinel"}))
	herdr(4.98, "notification.show", `{"title":"Pi needs your input","body":"demo-project"}`)
	herdr(4.99, "pane.report_agent", `{"state":"blocked","message":"input needed"}`)
	return tl.events()
}

// The live view at 80×24, the smallest terminal it promises to fit: every
// line within 80 columns, the bottom row left free while it runs, and the
// last frame with its summary leaving room for the shell's next line.
func TestLiveViewFits80x24(t *testing.T) {
	lay, ok := fit(24, 80)
	if !ok {
		t.Fatalf("80x24 does not fit: %+v", lay)
	}
	v := &view{lay: lay, r: plainStyles(), live: true}
	scr := sampleScreen(lay.agentRows, lay.agentCols)
	events := sampleEvents()
	running := v.render(scr, events, 0)
	golden.Check(t, filepath.Join("testdata", "live-80x24-running.golden"), running)
	checkFits(t, running, 80, 23)
	if !strings.Contains(running, "pane state in Herdr:  BLOCKED") || !strings.Contains(running, "report blocked") {
		t.Errorf("the running frame lacks the badge or the latest event:\n%s", running)
	}

	last := v.render(scr, events, summaryLines) + "\n" + v.summary(summarize(events, true, 143))
	golden.Check(t, filepath.Join("testdata", "live-80x24-stopped.golden"), last)
	checkFits(t, last, 80, 22)
	if !strings.HasPrefix(last, "herdr-pi demo") {
		t.Errorf("the title is not the first line:\n%s", last)
	}
}

func checkFits(t *testing.T, frame string, cols, rows int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) > rows {
		t.Errorf("%d lines, more than %d", len(lines), rows)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > cols {
			t.Errorf("line %d is %d columns: %q", i+1, w, l)
		}
	}
}

// Smaller terminals get a running log instead of a frame that cannot fit.
func TestFit(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		ok         bool
		agentRows  int
		agentCols  int
	}{
		{24, 80, true, 13, 78},
		{46, 100, true, 16, 98},
		{60, 200, true, 16, 100},
		{20, 80, false, 0, 0},
		{24, 40, false, 0, 0},
	} {
		lay, ok := fit(tc.rows, tc.cols)
		if ok != tc.ok || ok && (lay.agentRows != tc.agentRows || lay.agentCols != tc.agentCols) {
			t.Errorf("%dx%d: %+v %v", tc.rows, tc.cols, lay, ok)
		}
	}
	// The size the too-small notice names is the smallest that fits.
	if _, ok := fit(liveMinRows, liveMinCols); !ok {
		t.Errorf("%dx%d, the least the notice asks for, does not fit", liveMinRows, liveMinCols)
	}
	for _, small := range [][2]int{{liveMinRows - 1, liveMinCols}, {liveMinRows, liveMinCols - 1}} {
		if _, ok := fit(small[0], small[1]); ok {
			t.Errorf("%dx%d fits, yet is under the %dx%d the notice names", small[0], small[1], liveMinRows, liveMinCols)
		}
	}
}

func TestSummary(t *testing.T) {
	v := &view{r: plainStyles()}
	events := sampleEvents()
	events = append(events, Event{Source: "herdr", Method: "pane.release_agent"})
	if got := v.summary(summarize(events, false, 0)); !strings.HasPrefix(got, "The agent exited 0. herdr-pi sent Herdr 4 state reports and 1 notification,\nthen released the pane.\n") {
		t.Errorf("finished: %q", got)
	}
	got := v.summary(summarize(events, true, 143))
	if !strings.HasPrefix(got, "Stopped. ") || strings.Contains(got, "143") {
		t.Errorf("stopped by q: %q", got)
	}
}

// A state decision read from the trace file after the report it caused
// still comes first in the timeline.
func TestTimelineKeepsTimeOrder(t *testing.T) {
	start := time.Now()
	tl := &timeline{start: start}
	report := herdrEvent("pane.report_agent", json.RawMessage(`{"state":"working"}`))
	report.at = start.Add(2 * time.Second)
	tl.add(report)
	tl.add(stateEvent(state.Event{Kind: state.EventTransition, At: start.Add(1990 * time.Millisecond), From: state.Idle, To: state.Working}))
	ev := tl.events()
	if len(ev) != 2 || ev[0].Source != "state" || ev[1].Source != "herdr" || ev[0].T != 1.99 {
		t.Fatalf("%+v", ev)
	}
}

// The trace is read as the wrapper appends it: a line still being written
// waits for its end.
func TestTraceReaderTakesWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	r := &traceReader{path: path}
	defer r.close()
	var got []state.State
	add := func(e state.Event) { got = append(got, e.To) }
	r.read(add) // no file yet
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := func(to state.State) string {
		b, _ := json.Marshal(state.Event{Kind: state.EventTransition, To: to})
		return string(b) + "\n"
	}
	idle, working := line(state.Idle), line(state.Working)
	f.WriteString(idle + working[:10])
	r.read(add)
	if len(got) != 1 || got[0] != state.Idle {
		t.Fatalf("after one line and a half: %v", got)
	}
	f.WriteString(working[10:])
	r.read(add)
	if len(got) != 2 || got[1] != state.Working {
		t.Fatalf("after the rest: %v", got)
	}
}

// A reason opening or closing is no transition: its line says which
// reason, never an arrow between two empty states.
func TestReasonEventsReadAsWords(t *testing.T) {
	r := &state.Reason{Key: "sentinel", Kind: state.KindSentinel, Label: "input needed"}
	for kind, want := range map[state.EventKind]string{
		state.EventOpened: `reason opened sentinel ("input needed")`,
		state.EventClosed: `reason closed sentinel ("input needed")`,
	} {
		e := stateEvent(state.Event{Kind: kind, Reason: r, Cause: "open:sentinel"})
		if e.Text != want || e.Kind != string(kind) || e.From != "" || e.To != "" {
			t.Errorf("%s: %+v, want text %q", kind, e, want)
		}
	}
}

// A window too narrow for the live view gets the running log, and all of
// it fits the window's width: the words of its sentences and events wrap
// whole, and the agent's screen is drawn that wide (a window under 42
// columns got the 78-column box of a pipe, its borders broken over two
// rows each).
func TestNarrowWindowLogFits(t *testing.T) {
	for _, cols := range []int{38, 30, 24} {
		term := &Terminal{Rows: 40, Cols: cols}
		lay, live := layoutFor(term)
		if live {
			t.Fatalf("%d columns: live view", cols)
		}
		var out bytes.Buffer
		v := newView(Options{Out: &out, Styles: plainStyles(), Terminal: term}, lay, live)
		v.begin()
		events := sampleEvents()
		scr := sampleScreen(lay.agentRows, lay.agentCols)
		v.frame(scr, events, events[len(events)-1].T)
		v.end(scr, events, summarize(events, false, 0))
		got := out.String()
		if cols == 38 {
			golden.Check(t, filepath.Join("testdata", "log-40x38.golden"), got)
		}
		checkFits(t, strings.TrimRight(got, "\n"), cols, 1000)
		for _, want := range []string{"reporting to a Herdr stand-in", "too small for the live view", "Which", `"fix the flaky test in the api package"`, "The agent exited 0."} {
			if !strings.Contains(strings.Join(strings.Fields(got), " "), want) {
				t.Errorf("%d columns: %q is missing:\n%s", cols, want, got)
			}
		}
	}
	// Narrower still, the agent's screen could not be read: it is left
	// out, and the log says so.
	term := &Terminal{Rows: 40, Cols: 16}
	lay, _ := layoutFor(term)
	var out bytes.Buffer
	v := newView(Options{Out: &out, Styles: plainStyles(), Terminal: term}, lay, false)
	v.end(sampleScreen(lay.agentRows, lay.agentCols), sampleEvents(), summary{})
	if got := out.String(); strings.Contains(got, "╭") || !strings.Contains(got, "screen") {
		t.Errorf("16 columns: %q", got)
	}
}

// The scripted agent draws every row within its screen's width, as Pi
// does: its title and its directory, wider than a narrow screen, wrapped
// onto the next row and scrolled the title away.
func TestAgentScreenKeepsToItsWidth(t *testing.T) {
	for _, cols := range []int{36, 40, 76} {
		var out bytes.Buffer
		s := &agentScreen{w: &out, rows: plainRows, cols: cols, cwd: "/tmp/herdr-pi-demo3488179397/demo-project"}
		s.say("› ", "fix the flaky test in the api package")
		s.busy = true
		s.draw()
		scr := screen.New(plainRows, cols)
		if err := scr.Write(out.Bytes()); err != nil {
			t.Fatal(err)
		}
		text := scr.Snapshot().Text
		scr.Close()
		lines := strings.Split(text, "\n")
		if !strings.HasPrefix(lines[0], " pi demo agent") || !strings.HasPrefix(lines[plainRows-1], "/tmp/herdr-pi-demo") {
			t.Errorf("%d columns: the title or the directory is off its row:\n%s", cols, text)
		}
	}
}

// A terminal that does not say its size (0x0: a pty nobody sized, as some
// CI runners and serial consoles give) is no narrow window: the log's
// lines stay whole and the agent's screen is drawn at the plain size, as
// before the log learnt to wrap (it printed one word a line, the screen
// left out).
func TestATerminalOfUnknownSizeGetsTheLogWhole(t *testing.T) {
	term := &Terminal{Rows: 0, Cols: 0}
	lay, live := layoutFor(term)
	if live {
		t.Fatal("0x0: live view")
	}
	var out bytes.Buffer
	v := newView(Options{Out: &out, Styles: plainStyles(), Terminal: term}, lay, live)
	v.begin()
	events := sampleEvents()
	scr := sampleScreen(lay.agentRows, lay.agentCols)
	v.frame(scr, events, events[len(events)-1].T)
	v.end(scr, events, summarize(events, false, 0))
	got := out.String()
	lines := strings.Split(got, "\n")
	if !slices.Contains(lines, "herdr-pi demo: a scripted agent under herdr-pi wrap, reporting to a Herdr stand-in") {
		t.Errorf("0x0: the first sentence is not one line:\n%s", got)
	}
	box := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "╭") })
	if box < 0 || ansi.StringWidth(lines[box]) != plainCols+2 {
		t.Errorf("0x0: want the agent's screen %d columns wide:\n%s", plainCols, got)
	}
}
