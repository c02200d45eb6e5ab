package herdrtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Generous bounds: a shell answers in milliseconds, but the CI box is a
// loaded 2-core machine. Nothing here measures time.
const (
	paneWait = 20 * time.Second
	callWait = 10 * time.Second
)

func startReal(t *testing.T) (*Server, *herdr.Client) {
	t.Helper()
	s := Start(t, Options{NoEventPacing: true, RealPanes: &RealPanes{Cols: 120, Rows: 30}})
	return s, herdr.NewClient(s.SocketPath())
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	t.Cleanup(cancel)
	return ctx
}

// events follows the fake's stream through herdr.Watcher, as herdr-pi
// does, until the test ends.
type events struct {
	ch chan herdr.Event
}

func watch(t *testing.T, c *herdr.Client, subs ...herdr.Subscription) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ev := &events{ch: make(chan herdr.Event, 256)}
	acked := make(chan struct{}, 1)
	done := make(chan struct{})
	w := &herdr.Watcher{Client: c, Subscriptions: subs, OnConnect: func(bool) {
		select {
		case acked <- struct{}{}:
		default:
		}
	}}
	go func() { // owned by the test: cancelled and waited for in cleanup
		defer close(done)
		_ = w.Run(ctx, func(e herdr.Event) {
			select {
			case ev.ch <- e:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-acked:
	case <-time.After(callWait):
		t.Fatal("the subscription was not acknowledged")
	}
	return ev
}

// until returns the events up to and including the first that matches.
func (e *events) until(t *testing.T, what string, match func(herdr.Event) bool) []herdr.Event {
	t.Helper()
	var seen []herdr.Event
	timeout := time.After(paneWait)
	for {
		select {
		case ev := <-e.ch:
			seen = append(seen, ev)
			if match(ev) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %s; events: %v", what, names(seen))
		}
	}
}

func names(evs []herdr.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name+"("+e.PaneID+")")
	}
	return out
}

func named(name, pane string) func(herdr.Event) bool {
	return func(e herdr.Event) bool { return e.Name == name && (pane == "" || e.PaneID == pane) }
}

// lines are the output lines of a pane without a leading shell prompt,
// for exact-line checks that the echo of the typed command cannot
// satisfy. Text typed before the shell is ready is echoed before its
// prompt, so the prompt may lead an output line.
func lines(out string) []string {
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimPrefix(strings.TrimPrefix(l, "# "), "$ ")
	}
	return ls
}

func tmuxPanes(t *testing.T, s *Server) int {
	t.Helper()
	out, err := s.real.run(nil, "list-panes", "-a", "-F", "#{pane_id}")
	if err != nil {
		return 0
	}
	return len(strings.Fields(out))
}

func TestRealPaneShellHasHerdrsEnvironment(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	dir := t.TempDir()
	ws, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Cwd: dir, Label: "api",
		// Herdr applies the caller's env first and its own variables over it.
		Env: map[string]string{"FROM_CALLER": "yes", "HERDR_PANE_ID": "spoofed", "TERM": "dumb"}})
	if err != nil {
		t.Fatal(err)
	}
	id := ws.RootPane.PaneID
	if id != "w2:p1" || ws.Workspace.WorkspaceID != "w2" {
		t.Fatalf("created %+v", ws)
	}
	show := `printf '<%s>\n' "$HERDR_ENV" "$HERDR_SOCKET_PATH" "$HERDR_WORKSPACE_ID" "$HERDR_TAB_ID" "$HERDR_PANE_ID" ` +
		`"$TERM" "$COLORTERM" "${FROM_CALLER-unset}" "${TMUX-unset}" "${TERM_PROGRAM-unset}" "$(pwd -P)"; echo DO""NE`
	if err := c.PaneSendInput(ctx, id, show, "Enter"); err != nil {
		t.Fatal(err)
	}
	out := s.WaitForText(t, id, "DONE", paneWait)
	real, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{"<1>", "<" + s.SocketPath() + ">", "<w2>", "<w2:t1>", "<w2:p1>",
		"<xterm-256color>", "<truecolor>", "<yes>", "<unset>", "<unset>", "<" + real + ">"} {
		if !slices.Contains(lines(out), want) {
			t.Errorf("pane output lacks the line %q:\n%s", want, out)
		}
	}

	// A split gets its own pane id and only its own request's env, and
	// starts where the split pane's shell is.
	np, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: id, Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, np.PaneID, show, "Enter"); err != nil {
		t.Fatal(err)
	}
	out = s.WaitForText(t, np.PaneID, "DONE", paneWait)
	for _, want := range []string{"<w2:p2>", "<unset>", "<" + real + ">"} {
		if !slices.Contains(lines(out), want) {
			t.Errorf("split pane output lacks the line %q:\n%s", want, out)
		}
	}
	if slices.Contains(lines(out), "<yes>") {
		t.Errorf("the workspace's env leaked into a split:\n%s", out)
	}
}

func TestRealSplitsFollowDirectionRatioAndFocus(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	l, err := c.PaneLayout(ctx, "w1:p1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Area.Width != 120 || l.Area.Height != 30 || len(l.Panes) != 1 || l.FocusedPaneID != "w1:p1" {
		t.Fatalf("first layout %+v", l)
	}
	rect := func(l herdr.Layout, id string) herdr.Rect {
		t.Helper()
		for _, p := range l.Panes {
			if p.PaneID == id {
				return p.Rect
			}
		}
		t.Fatalf("pane %s not in layout %+v", id, l)
		return herdr.Rect{}
	}

	// right: side by side; no focus by default.
	p2, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = c.PaneLayout(ctx, "w1:p1"); err != nil {
		t.Fatal(err)
	}
	r1, r2 := rect(l, "w1:p1"), rect(l, p2.PaneID)
	if r2.X <= r1.X+r1.Width-1 || r2.Y != r1.Y || r2.Height != r1.Height || l.FocusedPaneID != "w1:p1" {
		t.Errorf("right split: p1 %+v p2 %+v focused %s", r1, r2, l.FocusedPaneID)
	}

	// down with focus: stacked under the split pane, and focused in Herdr
	// and in the real terminal.
	p3, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: p2.PaneID, Direction: "down", NewPlace: herdr.NewPlace{Focus: true}})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = c.PaneLayout(ctx, p3.PaneID); err != nil {
		t.Fatal(err)
	}
	r2, r3 := rect(l, p2.PaneID), rect(l, p3.PaneID)
	if r3.Y <= r2.Y || r3.X != r2.X || r3.Width != r2.Width || l.FocusedPaneID != p3.PaneID {
		t.Errorf("down split: p2 %+v p3 %+v focused %s", r2, r3, l.FocusedPaneID)
	}
	if active, _ := s.real.run(nil, "display-message", "-p", "-t", s.panes[p3.PaneID].tmux, "#{pane_active}"); strings.TrimSpace(active) != "1" {
		t.Errorf("the focused pane is not tmux's active pane")
	}

	// The raw layout carries both splits with their directions.
	m := call(t, s, `{"id":"l","method":"pane.layout","params":{"pane_id":"w1:p1"}}`)
	var raw struct {
		Result struct {
			Layout struct {
				Splits []struct {
					Direction string  `json:"direction"`
					Ratio     float64 `json:"ratio"`
				} `json:"splits"`
			} `json:"layout"`
		} `json:"result"`
	}
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &raw)
	var dirs []string
	for _, sp := range raw.Result.Layout.Splits {
		dirs = append(dirs, sp.Direction)
		if sp.Ratio <= 0 || sp.Ratio >= 1 {
			t.Errorf("split ratio %v", sp.Ratio)
		}
	}
	if !slices.Equal(dirs, []string{"right", "down"}) {
		t.Errorf("split directions %v, want [right down]", dirs)
	}

	// ratio is the share the split pane keeps.
	ratio := 0.75
	p4, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "down", Ratio: &ratio})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = c.PaneLayout(ctx, "w1:p1"); err != nil {
		t.Fatal(err)
	}
	if r1, r4 := rect(l, "w1:p1"), rect(l, p4.PaneID); r1.Height < 2*r4.Height {
		t.Errorf("ratio 0.75: p1 %+v p4 %+v", r1, r4)
	}

	// A tab is a window of the full size with one pane.
	tab, root, err := c.TabCreate(ctx, "w1", herdr.NewPlace{Label: "review"})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = c.PaneLayout(ctx, root.PaneID); err != nil {
		t.Fatal(err)
	}
	if l.TabID != tab.TabID || len(l.Panes) != 1 || rect(l, root.PaneID).Width != 120 {
		t.Errorf("new tab layout %+v", l)
	}
	if n := tmuxPanes(t, s); n != 5 {
		t.Errorf("%d tmux panes, want 5", n)
	}

	// What the contract rejects creates nothing.
	s.ExpectInvalidRequests()
	if _, code, _ := errCode(call(t, s, `{"id":"e","method":"pane.split","params":{"direction":"right","env":{"A=B":"x"}}}`)); code != "invalid_env" {
		t.Errorf("bad env: %s", code)
	}
	if _, code, _ := errCode(call(t, s, `{"id":"e","method":"pane.split","params":{"direction":"left"}}`)); code != "invalid_request" {
		t.Errorf("bad direction: %s", code)
	}
	if n := tmuxPanes(t, s); n != 5 {
		t.Errorf("%d tmux panes after rejected splits, want 5", n)
	}
}

func TestRealSendInputTypesTextAndKeys(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	if err := c.PaneSendInput(ctx, "w1:p1", `echo "$((6*7))"`, "Enter"); err != nil {
		t.Fatal(err)
	}
	if out := s.WaitForText(t, "w1:p1", "42", paneWait); strings.Contains(out, "[200~") {
		t.Errorf("text was bracketed for a shell that did not ask for it:\n%s", out)
	}

	// A program that enables bracketed paste gets the text bracketed; a
	// key follows it in the same write.
	if err := c.PaneSendInput(ctx, "w1:p1", `printf '\033[?2004h'; echo RE""ADY; cat -v; printf '\033[?2004l'; echo O""FF`, "Enter"); err != nil {
		t.Fatal(err)
	}
	s.WaitForText(t, "w1:p1", "READY", paneWait) // tmux has seen the mode: it draws in order
	if err := c.PaneSendInput(ctx, "w1:p1", "pasted", "Enter"); err != nil {
		t.Fatal(err)
	}
	s.WaitForText(t, "w1:p1", "^[[200~pasted^[[201~", paneWait)
	// ctrl+d ends cat, which turns bracketed paste off again.
	if err := c.PaneSendInput(ctx, "w1:p1", "", "ctrl+d"); err != nil {
		t.Fatal(err)
	}
	s.WaitForText(t, "w1:p1", "OFF", paneWait)
	if err := c.PaneSendInput(ctx, "w1:p1", `echo "$((7*8))"`, "Enter"); err != nil {
		t.Fatal(err)
	}
	if out := s.WaitForText(t, "w1:p1", "56", paneWait); strings.Contains(out, `[200~echo "$((7*8))"`) {
		t.Errorf("bracketed after the program turned it off:\n%s", out)
	}

	// An unknown key is refused and nothing is typed.
	err := c.PaneSendInput(ctx, "w1:p1", `echo "$((8*9))"`, "Enter", "hyper+q")
	var he *herdr.Error
	if !errors.As(err, &he) || he.Code != "invalid_key" {
		t.Fatalf("unknown key: %v", err)
	}
	if err := c.PaneSendInput(ctx, "w1:p1", `echo "$((9*9))"`, "Enter"); err != nil {
		t.Fatal(err)
	}
	if out := s.WaitForText(t, "w1:p1", "81", paneWait); strings.Contains(out, "72") {
		t.Errorf("a refused input was typed:\n%s", out)
	}
}

// Herdr drops typed input beyond about 4096 characters; a long command
// must arrive cut, so a test of a caller that types long commands fails.
func TestRealSendInputTruncatesLongText(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	long := "echo " + strings.Repeat("x", 5000) + " TAIL"
	if err := c.PaneSendInput(ctx, "w1:p1", long, "Enter"); err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, "w1:p1", `echo "$((6*7))"`, "Enter"); err != nil {
		t.Fatal(err)
	}
	out := s.WaitForText(t, "w1:p1", "42", paneWait)
	if strings.Contains(out, "TAIL") {
		t.Errorf("the end of a %d-byte input reached the pane", len(long))
	}
	if want := strings.Repeat("x", MaxTypedInput-len("echo ")); !slices.Contains(lines(out), want) {
		t.Errorf("the pane did not run the first %d bytes of the input", MaxTypedInput)
	}
	in := s.Inputs()[0]
	if !in.Truncated || in.Text != long || len(in.Typed) != MaxTypedInput {
		t.Errorf("input record: truncated=%v text=%d typed=%d bytes", in.Truncated, len(in.Text), len(in.Typed))
	}
	if short := s.Inputs()[1]; short.Truncated || short.Typed != short.Text {
		t.Errorf("short input record %+v", short)
	}
	// The cut never splits a character.
	if got, cut := truncateTyped(strings.Repeat("x", MaxTypedInput-1) + "é"); !cut || got != strings.Repeat("x", MaxTypedInput-1) {
		t.Errorf("cut inside a character: %q… (%d bytes)", got[len(got)-3:], len(got))
	}
}

func TestRealPaneExitIsSeenWithItsStatus(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	ev := watch(t, c, herdr.Subscription{Type: "pane.exited"}, herdr.Subscription{Type: "layout.updated"},
		herdr.Subscription{Type: "pane.closed"}, herdr.Subscription{Type: "workspace.closed"})
	p2, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, p2.PaneID, "echo bye; exit 3", "Enter"); err != nil {
		t.Fatal(err)
	}
	ex := s.WaitExited(t, p2.PaneID, paneWait)
	if ex.Closed || ex.Code != 3 || ex.Signal != 0 || !slices.Contains(lines(ex.Screen), "bye") {
		t.Errorf("exit %+v", ex)
	}
	if strings.Contains(ex.Screen, "Pane is dead") {
		t.Errorf("tmux's own note is on the last screen:\n%s", ex.Screen)
	}
	// pane.exited, then layout.updated without the pane (§5.4); never
	// pane.closed for an exit.
	seen := ev.until(t, "pane_exited", named("pane_exited", p2.PaneID))
	seen = append(seen, ev.until(t, "layout_updated after the exit", func(e herdr.Event) bool {
		return e.Name == "layout_updated" && !strings.Contains(string(e.Data), p2.PaneID)
	})...)
	for _, e := range seen {
		if e.Name == "pane_closed" {
			t.Errorf("pane_closed for an exit: %v", names(seen))
		}
	}
	var he *herdr.Error
	if _, err := c.PaneGet(ctx, p2.PaneID); !errors.As(err, &he) || he.Code != "pane_not_found" {
		t.Errorf("the exited pane is still there: %v", err)
	}
	if n := tmuxPanes(t, s); n != 1 {
		t.Errorf("%d tmux panes after the exit, want 1", n)
	}
	screen, err := s.Screen(p2.PaneID)
	if err != nil || screen != ex.Screen {
		t.Errorf("Screen of an ended pane: %v %q", err, screen)
	}

	// Death by a signal.
	p3, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, p3.PaneID, "kill -9 $$", "Enter"); err != nil {
		t.Fatal(err)
	}
	if ex := s.WaitExited(t, p3.PaneID, paneWait); ex.Code != 137 || ex.Signal != 9 {
		t.Errorf("exit by SIGKILL %+v", ex)
	}
	ev.until(t, "pane_exited", named("pane_exited", p3.PaneID))

	// The last pane of a workspace takes the workspace with it.
	ws, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, ws.RootPane.PaneID, "exit", "Enter"); err != nil {
		t.Fatal(err)
	}
	s.WaitExited(t, ws.RootPane.PaneID, paneWait)
	ev.until(t, "pane_exited", named("pane_exited", ws.RootPane.PaneID))
	ev.until(t, "workspace_closed", func(e herdr.Event) bool {
		return e.Name == "workspace_closed" && strings.Contains(string(e.Data), ws.Workspace.WorkspaceID)
	})
	if wss, _ := c.WorkspaceList(ctx); len(wss) != 1 {
		t.Errorf("workspaces after the last pane exited: %+v", wss)
	}

	// ExitPane kills a real pane's shell and returns once it is handled.
	p5, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	s.ExitPane(p5.PaneID)
	if ex, ok := s.Exited(p5.PaneID); !ok || ex.Signal != 9 {
		t.Errorf("ExitPane: %+v %v", ex, ok)
	}
}

func TestRealPaneCloseKillsWhatRunsInIt(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	ev := watch(t, c, herdr.Subscription{Type: "pane.closed"}, herdr.Subscription{Type: "pane.exited"},
		herdr.Subscription{Type: "workspace.closed"})
	p2, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	shell := s.ShellPID(p2.PaneID)
	if err := c.PaneSendInput(ctx, p2.PaneID, "sleep 1000", "Enter"); err != nil {
		t.Fatal(err)
	}
	sleep := waitForeground(t, c, p2.PaneID, "sleep")
	procs := []procStat{{pid: shell, start: startTime(shell)}, {pid: sleep.PID, start: startTime(sleep.PID)}}
	if err := c.PaneClose(ctx, p2.PaneID); err != nil {
		t.Fatal(err)
	}
	seen := ev.until(t, "pane_closed", named("pane_closed", p2.PaneID))
	for _, e := range seen {
		if e.Name == "pane_exited" {
			t.Errorf("pane_exited for a close: %v", names(seen))
		}
	}
	if ex, ok := s.Exited(p2.PaneID); !ok || !ex.Closed || ex.Code != -1 || !strings.Contains(ex.Screen, "sleep 1000") {
		t.Errorf("closed pane: %+v %v", ex, ok)
	}
	if !s.Await(paneWait, func() bool { return !running(procs[0]) && !running(procs[1]) }) {
		t.Errorf("the closed pane's shell %d or its sleep %d still runs", shell, sleep.PID)
	}

	// tab.close and workspace.close end every pane they hold.
	ws, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "two"})
	if err != nil {
		t.Fatal(err)
	}
	tab, root, err := c.TabCreate(ctx, ws.Workspace.WorkspaceID, herdr.NewPlace{})
	if err != nil {
		t.Fatal(err)
	}
	split, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: root.PaneID, Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	var shells []procStat
	for _, id := range []string{ws.RootPane.PaneID, root.PaneID, split.PaneID} {
		pid := s.ShellPID(id)
		shells = append(shells, procStat{pid: pid, start: startTime(pid)})
	}
	if err := c.TabClose(ctx, tab.TabID); err != nil {
		t.Fatal(err)
	}
	if err := c.WorkspaceClose(ctx, ws.Workspace.WorkspaceID); err != nil {
		t.Fatal(err)
	}
	ev.until(t, "workspace_closed", named("workspace_closed", ""))
	for _, id := range []string{ws.RootPane.PaneID, root.PaneID, split.PaneID} {
		if ex, ok := s.Exited(id); !ok || !ex.Closed {
			t.Errorf("pane %s after its tab or workspace closed: %+v %v", id, ex, ok)
		}
	}
	if !s.Await(paneWait, func() bool {
		return !slices.ContainsFunc(shells, running)
	}) {
		t.Errorf("shells of closed tabs and workspaces still run")
	}
	if n := tmuxPanes(t, s); n != 1 {
		t.Errorf("%d tmux panes left, want 1", n)
	}
}

// waitForeground waits until process_info shows a process named name in
// the pane's foreground and returns it.
func waitForeground(t *testing.T, c *herdr.Client, paneID, name string) herdr.Process {
	t.Helper()
	var info herdr.ProcessInfo
	var found herdr.Process
	ok := awaitEvery(paneWait, 20*time.Millisecond, func() bool {
		var err error
		info, err = c.PaneProcessInfo(context.Background(), paneID)
		if err != nil {
			return false
		}
		for _, p := range info.ForegroundProcesses {
			if p.Name == name {
				found = p
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no %s in the foreground of %s: %+v", name, paneID, info)
	}
	return found
}

func TestRealProcessInfo(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	shell := s.ShellPID("w1:p1")
	info, err := c.PaneProcessInfo(ctx, "w1:p1")
	if err != nil {
		t.Fatal(err)
	}
	// An idle shell is its own foreground.
	if info.ShellPID == nil || *info.ShellPID != shell || info.ForegroundProcessGroupID == nil ||
		*info.ForegroundProcessGroupID != shell || len(info.ForegroundProcesses) != 1 || info.ForegroundProcesses[0].Name != "sh" {
		t.Errorf("idle shell %d: %+v", shell, info)
	}
	dir := t.TempDir()
	if err := c.PaneSendInput(ctx, "w1:p1", "cd "+dir+" && sleep 1000", "Enter"); err != nil {
		t.Fatal(err)
	}
	p := waitForeground(t, c, "w1:p1", "sleep")
	info, _ = c.PaneProcessInfo(ctx, "")
	real, _ := filepath.EvalSymlinks(dir)
	if *info.ForegroundProcessGroupID != p.PID || !slices.Equal(p.Argv, []string{"sleep", "1000"}) ||
		p.Argv0 != "sleep" || p.Cmdline != "sleep 1000" || p.Cwd != real || *info.ShellPID != shell {
		t.Errorf("a running command: %+v, process %+v", info, p)
	}
	// A scripted answer still wins, for tests that need a process they
	// cannot run.
	pid := 4242
	s.SetProcessInfo("w1:p1", ProcessInfo{ShellPID: &pid, Processes: []Process{{PID: 4300, Name: "herdr-pi"}}})
	if info, _ := c.PaneProcessInfo(ctx, "w1:p1"); *info.ShellPID != 4242 || info.ForegroundProcesses[0].Name != "herdr-pi" {
		t.Errorf("scripted: %+v", info)
	}
}

const reportFromPaneEnv = "HERDRTEST_REPORT_FROM_PANE"

// reportFromPane runs in a real pane: it reports "working" for its own
// pane through the socket its environment names, as herdr-pi does.
func reportFromPane() int {
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	c := herdr.NewClient(os.Getenv("HERDR_SOCKET_PATH"))
	err := c.ReportAgent(ctx, herdr.AgentReport{PaneID: os.Getenv("HERDR_PANE_ID"), Source: "custom:herdrtest",
		Agent: "pi", State: herdr.StateWorking, Seq: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A process in a real pane reaches the fake through the pane's own
// environment, and its report flows to subscribers as before.
func TestRealPaneProcessReportsToTheFake(t *testing.T) {
	s, c := startReal(t)
	ctx := ctxFor(t)
	p2, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	ev := watch(t, c, herdr.Subscription{Type: "pane.agent_status_changed", PaneID: p2.PaneID})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, p2.PaneID, reportFromPaneEnv+"=1 '"+self+"'; echo r\"\"c=$?", "Enter"); err != nil {
		t.Fatal(err)
	}
	seen := ev.until(t, "a working status", func(e herdr.Event) bool { return e.AgentStatus == "working" })
	if e := seen[len(seen)-1]; e.PaneID != p2.PaneID || e.Agent != "pi" {
		t.Errorf("status event %+v", e)
	}
	if out := s.WaitForText(t, p2.PaneID, "rc=", paneWait); !slices.Contains(lines(out), "rc=0") {
		t.Errorf("the reporter failed:\n%s", out)
	}
	if st := s.Pane(p2.PaneID); st.Status != "working" || st.Source != "custom:herdrtest" {
		t.Errorf("pane state %+v", st)
	}
}

// Close ends the tmux server and every process that ran in a pane, even
// one that ignores the hangup.
func TestRealPanesDieWithTheFake(t *testing.T) {
	s, err := New(Options{RealPanes: &RealPanes{}})
	if errors.Is(err, ErrNoTmux) {
		testenv.Missing(t, "tmux", "apt-get install tmux")
	}
	if err != nil {
		t.Fatal(err)
	}
	c := herdr.NewClient(s.SocketPath())
	ctx := ctxFor(t)
	p2, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w1:p1", Direction: "right"})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := c.PaneSendInput(ctx, p2.PaneID, `sh -c 'trap "" HUP; exec sleep 1000' & sleep 1000`, "Enter"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	waitForeground(t, c, p2.PaneID, "sleep")
	sock := s.TmuxSocket()
	server := procStat{pid: s.real.serverPID, start: startTime(s.real.serverPID)}
	tree := descendants([]int{s.ShellPID("w1:p1"), s.ShellPID(p2.PaneID)})
	if len(tree) < 4 {
		t.Errorf("process tree %+v, want two shells and two sleeps", tree)
	}
	s.Close()
	if running(server) {
		t.Errorf("the tmux server %d outlived Close", server.pid)
	}
	for _, p := range tree {
		if running(p) {
			t.Errorf("%s (%d) outlived Close", p.comm, p.pid)
		}
	}
	for _, p := range allProcs() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid)); strings.Contains(string(b), sock) && running(p) {
			t.Errorf("a tmux process of the closed fake still runs: %d %q", p.pid, b)
		}
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the tmux socket is still there: %v", err)
	}
}

func TestNoTmuxIsAMissingPrerequisite(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s, err := New(Options{RealPanes: &RealPanes{}})
	if !errors.Is(err, ErrNoTmux) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("New without tmux: %v, want ErrNoTmux", err)
	}
}

func TestParseTmuxLayout(t *testing.T) {
	root, err := parseTmuxLayout("198e,200x50,0,0{100x50,0,0,0,99x50,101,0[99x34,101,0,1,99x15,101,35,2]}")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]string{0: "w1:p1", 1: "w1:p2", 2: "w1:p3"}
	panes, splits := herdrLayout(root, func(n int) (string, bool) { return ids[n], n == 0 })
	got, _ := json.Marshal(map[string]any{"panes": panes, "splits": splits})
	want := `{"panes":[` +
		`{"focused":true,"pane_id":"w1:p1","rect":{"height":50,"width":100,"x":0,"y":0}},` +
		`{"focused":false,"pane_id":"w1:p2","rect":{"height":34,"width":99,"x":101,"y":0}},` +
		`{"focused":false,"pane_id":"w1:p3","rect":{"height":15,"width":99,"x":101,"y":35}}],` +
		`"splits":[` +
		`{"direction":"right","id":"s1","ratio":0.5,"rect":{"height":50,"width":200,"x":0,"y":0}},` +
		`{"direction":"down","id":"s2","ratio":0.68,"rect":{"height":50,"width":99,"x":101,"y":0}}]}`
	if string(got) != want {
		t.Errorf("layout\n got %s\nwant %s", got, want)
	}
	for _, bad := range []string{"", "abc", "1,2x3", "c,10x10,0,0{", "c,10x10,0,0,1,", "c,10x10,0,0[5x5,0,0,1}"} {
		if _, err := parseTmuxLayout(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzTmuxLayout(f *testing.F) {
	for _, s := range []string{
		"198e,200x50,0,0{100x50,0,0,0,99x50,101,0[99x34,101,0,1,99x15,101,35,2]}",
		"aca0,200x50,0,0,3",
		"x,0x0,0,0{0x0,0,0,1,0x0,0,0,2}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		root, err := parseTmuxLayout(s)
		if err != nil {
			return
		}
		panes, splits := herdrLayout(root, func(n int) (string, bool) { return fmt.Sprint(n), false })
		if _, err := json.Marshal(map[string]any{"panes": panes, "splits": splits}); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
