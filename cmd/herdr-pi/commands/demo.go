package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	creackpty "github.com/creack/pty"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

type demoOptions struct {
	JSON bool
}

func demoCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "watch herdr-pi work on a scripted agent (no Herdr, Pi or network needed)",
		Description: "Runs a scripted agent under the real `herdr-pi wrap` machinery, reporting to a\n" +
			"built-in stand-in for Herdr. You see the agent's screen as it would look in a pane\n" +
			"and, below it, the timeline: each state herdr-pi decided, each request it sent to\n" +
			"Herdr, each notification. The agent works, asks a question (its reply ends with the\n" +
			":input_needed: marker, hidden from the screen), waits — the pane turns blocked —\n" +
			"gets an answer typed for you, works again and finishes. About 15 seconds; press q\n" +
			"to stop early. Nothing outside a temporary directory is touched.\n\n" +
			"Examples:\n" +
			"  herdr-pi demo\n" +
			"  herdr-pi demo --json | jq '.events[] | select(.source == \"herdr\")'",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the timeline as JSON at the end instead of drawing it"}},
		Action: func(c *cli.Context) error {
			return demoRun(c.Context, io, &demoOptions{JSON: c.Bool("json")})
		},
	}
}

// demoEvent is one line of the timeline.
type demoEvent struct {
	// T is seconds since the demo started.
	T float64 `json:"t"`
	// Source is "herdr" (a request herdr-pi sent to Herdr), "state" (a
	// decision of the state machine) or "you" (keys typed for you).
	Source string `json:"source"`
	Text   string `json:"text"`
	// Herdr requests.
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// State events.
	Kind    string `json:"kind,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Message string `json:"message,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

type demoTimeline struct {
	start time.Time
	mu    sync.Mutex
	ev    []demoEvent
}

func (t *demoTimeline) add(e demoEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.T = float64(time.Since(t.start).Milliseconds()) / 1000
	t.ev = append(t.ev, e)
}

func (t *demoTimeline) events() []demoEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]demoEvent(nil), t.ev...)
}

// reached reports whether the state machine has reported `to`, n times.
func (t *demoTimeline) reached(to string, n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.ev {
		if e.Source == "state" && e.To == to {
			if n--; n == 0 {
				return true
			}
		}
	}
	return false
}

func herdrEvent(method string, params json.RawMessage) demoEvent {
	var p map[string]any
	_ = json.Unmarshal(params, &p)
	e := demoEvent{Source: "herdr", Method: method, Params: params}
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch method {
	case "pane.report_agent":
		e.Text = fmt.Sprintf("report %s", str("state"))
		if m := str("message"); m != "" {
			e.Text += fmt.Sprintf(" (%q)", m)
		}
	case "pane.release_agent":
		e.Text = "release the pane"
	case "pane.get":
		e.Text = "read the pane back (Herdr answers ok even to reports it ignores)"
	case "events.subscribe":
		e.Text = "follow the pane's events (to report again if Herdr restarts)"
	case "notification.show":
		e.Text = fmt.Sprintf("toast %q", str("title"))
		if b := str("body"); b != "" {
			e.Text += " · " + b
		}
	default:
		e.Text = method
	}
	return e
}

func stateEvent(se state.Event) demoEvent {
	e := demoEvent{Source: "state", Kind: string(se.Kind), From: string(se.From), To: string(se.To),
		Message: se.Message, Cause: se.Cause, Outcome: string(se.Outcome)}
	if se.Kind == state.EventRunFinished {
		e.Text = fmt.Sprintf("run finished: %s", se.Outcome)
		return e
	}
	e.Text = fmt.Sprintf("%s → %s", se.From, se.To)
	if se.Message != "" {
		e.Text += fmt.Sprintf(" (%q)", se.Message)
	}
	e.Text += "  · " + se.Cause
	return e
}

// Demo timings: the simulated person reads, then types.
const (
	demoTypeDelay   = 25 * time.Millisecond
	demoThink       = 900 * time.Millisecond
	demoAnswerAfter = 2500 * time.Millisecond
	demoTimeout     = 45 * time.Second
	demoRows        = 16
	demoCols        = 76
)

func demoRun(ctx context.Context, io IO, opts *demoOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: cannot find my own executable to run the demo agent: %w", err)
	}
	root, err := os.MkdirTemp("", "herdr-pi-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	project := filepath.Join(root, "demo-project")
	if err := os.Mkdir(project, 0o700); err != nil {
		return err
	}

	tl := &demoTimeline{start: time.Now()}
	herdr, err := startHerdrStandIn(func(m string, p json.RawMessage) { tl.add(herdrEvent(m, p)) })
	if err != nil {
		return fmt.Errorf("demo: Herdr stand-in: %w", err)
	}
	defer herdr.close()

	// The agent's terminal: a pty of our own, whose screen we draw.
	master, slave, err := creackpty.Open()
	if err != nil {
		return err
	}
	defer master.Close()
	_ = unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: demoRows, Col: demoCols})
	scr := screen.New(demoRows, demoCols)
	defer scr.Close()
	var scrMu sync.Mutex
	readDone := make(chan struct{})
	go func() { // owned here: ends when the pty closes (after wrap returned)
		defer close(readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			scrMu.Lock()
			_ = scr.Write(buf[:n])
			scrMu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	snapshot := func() string {
		scrMu.Lock()
		defer scrMu.Unlock()
		return scr.Snapshot().Text
	}

	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	env := demoEnv(io.Env, root, herdr.socket)
	wopts := &wrapOptions{Argv: []string{exe, "demo-agent"}, onState: func(e state.Event) { tl.add(stateEvent(e)) }}
	wrapDone := make(chan error, 1)
	go func() { // owned here: wrap returns once the agent has exited
		wrapDone <- wrapRun(ctx, IO{In: slave, Out: slave, Err: slave, Env: env, Dir: project}, wopts)
	}()

	// The person at the keyboard, scripted.
	userDone := make(chan struct{})
	go func() { // owned here: ends with the script or the context
		defer close(userDone)
		typeLine := func(text string) {
			for _, r := range text {
				if ctx.Err() != nil {
					return
				}
				_, _ = master.Write([]byte(string(r)))
				time.Sleep(demoTypeDelay)
			}
			time.Sleep(200 * time.Millisecond)
			_, _ = master.Write([]byte("\r"))
			tl.add(demoEvent{Source: "you", Text: fmt.Sprintf("typed %q, Enter", text)})
		}
		if !waitUntil(ctx, func() bool { return tl.reached("idle", 1) }) {
			return
		}
		sleepCtx(ctx, demoThink)
		typeLine("fix the flaky test in the api package")
		if !waitUntil(ctx, func() bool { return tl.reached("blocked", 1) }) {
			return
		}
		sleepCtx(ctx, demoAnswerAfter)
		typeLine("api_test.go")
	}()

	view := newDemoView(io, opts.JSON)
	view.begin()
	var wrapErr error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case wrapErr = <-wrapDone:
			break loop
		case <-tick.C:
			if view.quitRequested() {
				cancel()
			}
			view.frame(snapshot(), tl.events())
		}
	}
	slave.Close()
	<-readDone
	<-userDone
	final := snapshot()
	events := tl.events()
	view.end(final, events, wrapErr)

	if opts.JSON {
		out := struct {
			Format    string      `json:"format"`
			Events    []demoEvent `json:"events"`
			Screen    string      `json:"screen"`
			AgentExit int         `json:"agent_exit"`
		}{"herdr-pi.demo/1", events, final, demoExitCode(wrapErr)}
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("demo: the scripted agent did not finish within %v", demoTimeout)
	}
	if wrapErr != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("demo: the wrapped agent failed: %w", wrapErr)
	}
	return nil
}

func demoExitCode(err error) int {
	var es pty.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	}
	return -1
}

// demoEnv is the wrapper's environment in the demo: the person's own,
// minus anything pointing at their real Herdr, wrapper, config or state,
// plus a Herdr pane that is the stand-in.
func demoEnv(base []string, root, socket string) []string {
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERDR_") || strings.HasPrefix(k, "XDG_") || k == "PI_CODING_AGENT_DIR" || k == "TMUX" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HERDR_ENV=1", "HERDR_SOCKET_PATH="+socket, "HERDR_PANE_ID=w1:p1", "HERDR_TAB_ID=w1:t1", "HERDR_WORKSPACE_ID=w1",
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_RUNTIME_DIR="+root, "PI_CODING_AGENT_DIR="+filepath.Join(root, "agent"))
}

func waitUntil(ctx context.Context, cond func() bool) bool {
	for !cond() {
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return false
		}
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// demoView draws the demo: live, redrawn in place, on a terminal; as a
// plain running log elsewhere; nothing but the final JSON with --json.
type demoView struct {
	out      io.Writer
	live     bool
	json     bool
	in       *os.File // the person's terminal, for q
	saved    *unix.Termios
	printed  int
	r        *lipgloss.Renderer
	rows     int
	lastDraw string
	reserve  int // rows kept free below the frame
}

func newDemoView(io IO, asJSON bool) *demoView {
	v := &demoView{out: io.Out, json: asJSON, rows: 40}
	out, isFile := file(io.Out)
	tty := isFile && isTerminal(out)
	// Colour as every command decides it (style.go): never queried from
	// the terminal, off for pipes, NO_COLOR and dumb terminals.
	v.r = lookFor(io).r
	v.live = tty && !asJSON
	if v.live {
		if ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 {
			v.rows = int(ws.Row)
		}
		if in, ok := file(io.In); ok && isTerminal(in) {
			if t, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
				raw := *t
				raw.Lflag &^= unix.ECHO | unix.ICANON
				raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 0, 0
				if unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw) == nil {
					v.in, v.saved = in, t
				}
			}
		}
	}
	return v
}

func (v *demoView) begin() {
	if v.live {
		fmt.Fprint(v.out, "\x1b[?25l\x1b[2J\x1b[H")
	} else if !v.json {
		fmt.Fprintln(v.out, "herdr-pi demo: a scripted agent under herdr-pi wrap, reporting to a Herdr stand-in")
	}
}

// quitRequested reads pending keys from the person's terminal (never
// blocking) and says whether q or Ctrl-C was among them.
func (v *demoView) quitRequested() bool {
	if v.in == nil {
		return false
	}
	buf := make([]byte, 32)
	n, _ := unix.Read(int(v.in.Fd()), buf)
	for _, c := range buf[:max(n, 0)] {
		if c == 'q' || c == 0x03 {
			return true
		}
	}
	return false
}

func (v *demoView) frame(scr string, events []demoEvent) {
	if v.json {
		return
	}
	if !v.live {
		for _, e := range events[v.printed:] {
			fmt.Fprintln(v.out, v.eventLine(e))
		}
		v.printed = len(events)
		return
	}
	draw := v.render(scr, events, v.reserve)
	if draw == v.lastDraw {
		return
	}
	v.lastDraw = draw
	var b strings.Builder
	b.WriteString("\x1b[H")
	for _, line := range strings.Split(draw, "\n") {
		b.WriteString(line)
		b.WriteString("\x1b[K\r\n")
	}
	b.WriteString("\x1b[J")
	fmt.Fprint(v.out, b.String())
}

func (v *demoView) end(scr string, events []demoEvent, wrapErr error) {
	if v.saved != nil {
		_ = unix.IoctlSetTermios(int(v.in.Fd()), unix.TCSETS, v.saved)
	}
	if v.json {
		return
	}
	summary := v.summary(events, wrapErr)
	if v.live {
		// The last frame leaves room for the summary below it, so the top
		// of the frame does not scroll away.
		v.lastDraw, v.reserve = "", strings.Count(summary, "\n")+2
		v.frame(scr, events)
		fmt.Fprint(v.out, "\x1b[?25h")
		fmt.Fprintln(v.out, summary)
		return
	}
	v.frame(scr, events)
	fmt.Fprintln(v.out)
	fmt.Fprintln(v.out, v.box(scr))
	fmt.Fprintln(v.out, summary)
}

func (v *demoView) summary(events []demoEvent, wrapErr error) string {
	reports, toasts := 0, 0
	for _, e := range events {
		switch e.Method {
		case "pane.report_agent":
			reports++
		case "notification.show":
			toasts++
		}
	}
	s := fmt.Sprintf("The agent exited %d. herdr-pi sent Herdr %d state reports and %d\nnotifications, then released the pane.", demoExitCode(wrapErr), reports, toasts)
	return s + "\n\nIn a Herdr pane, run your agent the same way:   herdr-pi wrap pi\nCheck this machine first:                       herdr-pi doctor"
}

var demoStateColors = map[string]string{"idle": "2", "working": "3", "blocked": "1", "unknown": "8"}

func (v *demoView) eventLine(e demoEvent) string {
	who := map[string]string{"herdr": "→ Herdr", "state": "state", "you": "you"}[e.Source]
	text := e.Text
	if e.Source == "state" && e.To != "" {
		color := demoStateColors[e.To]
		text = strings.Replace(text, e.To, v.r.NewStyle().Bold(true).Foreground(lipgloss.Color(color)).Render(e.To), 1)
	}
	return fmt.Sprintf("%6.2fs  %-8s %s", e.T, who, text)
}

func (v *demoView) box(scr string) string {
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	for len(lines) < demoRows {
		lines = append(lines, "")
	}
	for i, l := range lines {
		if n := len([]rune(l)); n < demoCols {
			lines[i] = l + strings.Repeat(" ", demoCols-n)
		}
	}
	return v.r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("8")).Render(strings.Join(lines, "\n"))
}

// render draws one frame, leaving reserve rows of the terminal free below it.
func (v *demoView) render(scr string, events []demoEvent, reserve int) string {
	title := v.r.NewStyle().Bold(true).Render("herdr-pi demo") +
		v.r.NewStyle().Faint(true).Render("  a scripted agent under `herdr-pi wrap`, reporting to a Herdr stand-in · q quits")
	cur := "unknown"
	for _, e := range events {
		if e.Source == "state" && e.To != "" {
			cur = e.To
		}
	}
	badge := v.r.NewStyle().Bold(true).Reverse(true).Foreground(lipgloss.Color(demoStateColors[cur])).Render(" " + strings.ToUpper(cur) + " ")
	head := []string{title, v.box(scr), " pane state in Herdr: " + badge, ""}
	room := max(v.rows-len(strings.Split(strings.Join(head, "\n"), "\n"))-2-reserve, 4)
	if len(events) > room {
		events = events[len(events)-room:]
	}
	lines := head
	for _, e := range events {
		lines = append(lines, v.eventLine(e))
	}
	return strings.Join(lines, "\n")
}
