package herdrtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// RealPanes makes every pane of a fake a real shell in a real pty instead
// of data only. A private tmux server backs them: a workspace is a tmux
// session, a tab a window, a pane a pane. Set it in Options.RealPanes.
type RealPanes struct {
	// Shell is the program a new pane starts, where Herdr starts the
	// person's default shell. Default /bin/sh: a plain prompt and no line
	// editor, so screens are predictable.
	Shell []string
	// Cols and Rows are the size of every tab in cells (default 200×50, the
	// area the data-only fake reports).
	Cols, Rows int
}

// ErrNoTmux is New's error when real panes are asked for and tmux is not
// installed; Start turns it into testenv.Missing.
var ErrNoTmux = errors.New("herdrtest: real panes need tmux, which is not on PATH")

// MaxTypedInput is how many bytes of pane.send_input's text reach a pane;
// the rest is dropped silently, keys still follow. Herdr's pty drops typed
// input beyond about 4096 characters (workflows-handoff.md §5.4: why long
// commands go through a command file); 4095 is also where a tty in
// canonical mode ends a line, so a test sees the same cut whichever limit
// the real thing hits first.
const MaxTypedInput = 4095

// PaneExit is how a real pane ended.
type PaneExit struct {
	// Closed is true when pane.close, tab.close or workspace.close ended the
	// pane (Herdr kills its process), false when its process exited.
	Closed bool
	// Code is the exit status of the pane's process, 128+Signal when a
	// signal ended it, -1 when the pane was closed.
	Code   int
	Signal int
	// Screen is the pane's last visible screen; Output is everything it
	// still held, scrollback included, with wrapped lines joined.
	Screen, Output string
}

// diedChannel is the tmux wait-for channel a pane's supervisor (and, as a
// fallback, the pane-died hook) signals when a pane's shell has ended.
// tmux remembers a signal nobody waited for, so a death between two waits
// is not lost.
const diedChannel = "herdrtest-died"

// exitTitle marks, in a pane's title, that its shell ended and how.
const exitTitle = "herdrtest-exited:"

// supervisor is the pane's root process (POSIX sh). tmux 3.3 cannot be
// trusted with a pane whose process ends: it may close the pty before
// reading the last output, and it may miss the SIGCHLD and never call the
// pane dead. So tmux never sees the shell end: the supervisor runs it,
// then sets the pane title to the exit status. tmux handles a pane's
// output in order, so once it shows that title it has drawn everything
// the shell wrote; the supervisor waits for that, tells the fake on
// diedChannel and holds the pane until the fake has read it and closes
// it. It catches (rather than ignores) the keyboard signals, so the shell
// and its commands still get them with their default handling.
//
// $1 tmux, $2 its socket, then the command that starts the shell.
const supervisor = `trap : INT QUIT TSTP
t=$1 k=$2; shift 2
"$@"
s=$?
printf '\033]2;` + exitTitle + `%d\033\\' "$s"
n=0
while [ "$n" -lt 1000 ] && [ "$("$t" -S "$k" display-message -p -t "$TMUX_PANE" '#{pane_title}' </dev/null 2>/dev/null)" != "` + exitTitle + `$s" ]; do
	n=$((n+1)); sleep 0.01
done
"$t" -S "$k" wait-for -S ` + diedChannel + ` </dev/null >/dev/null 2>&1
exec sleep 2147483647
`

// spawnFormat is what tmux prints for a new session, window or pane.
const spawnFormat = "#{session_id} #{window_id} #{pane_id} #{pane_pid}"

// realPanes is the tmux side of a fake in real-pane mode.
type realPanes struct {
	opts      RealPanes
	bin       string // tmux
	envBin    string // env(1), which builds each pane's environment
	sock      string
	conf      string
	clientEnv []string
	serverPID int
	// ctx ends the death watcher's wait; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	bufSeq int // paste buffer names, guarded by Server.mu
	reapMu sync.Mutex
}

func (r *realPanes) run(stdin io.Reader, args ...string) (string, error) {
	return r.runCtx(context.Background(), stdin, args...)
}

func (r *realPanes) runCtx(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	// -u: the client handles UTF-8 whatever the locale, or capture-pane
	// would print "_" for every non-ASCII character.
	cmd := exec.CommandContext(ctx, r.bin, append([]string{"-u", "-S", r.sock, "-f", r.conf}, args...)...)
	cmd.Env = r.clientEnv
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// tmuxConf keeps dead panes until the fake has read their status and last
// screen (remain-on-exit), keeps the server up with no session left
// (exit-empty), and signals every death on diedChannel.
func tmuxConf(o RealPanes) string {
	return strings.Join([]string{
		"set -g exit-empty off",
		"set -g remain-on-exit on",
		"set -g default-terminal xterm-256color",
		"set -g status off",
		fmt.Sprintf("set -g default-size %dx%d", o.Cols, o.Rows),
		"set -g history-limit 50000",
		"set-hook -g pane-died 'wait-for -S " + diedChannel + "'",
		"",
	}, "\n")
}

// startRealPanes starts the tmux server with w1's session and the watcher
// of pane deaths. Called by New before the fake serves anything.
func (s *Server) startRealPanes() error {
	o := *s.opts.RealPanes
	if len(o.Shell) == 0 {
		o.Shell = []string{"/bin/sh"}
	}
	if o.Cols <= 0 {
		o.Cols = 200
	}
	if o.Rows <= 0 {
		o.Rows = 50
	}
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return ErrNoTmux
	}
	envBin, err := exec.LookPath("env")
	if err != nil {
		return fmt.Errorf("herdrtest: real panes need env(1): %w", err)
	}
	r := &realPanes{opts: o, bin: bin, envBin: envBin,
		sock: filepath.Join(s.dir, "tmux"), conf: filepath.Join(s.dir, "tmux.conf"), clientEnv: tmuxClientEnv()}
	if err := os.WriteFile(r.conf, []byte(tmuxConf(o)), 0o600); err != nil {
		return err
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	s.real = r
	s.exits = map[string]PaneExit{}
	ws := s.workspaces[0]
	if err := s.spawnWorkspace(ws); err != nil {
		_, _ = r.run(nil, "kill-server")
		r.cancel()
		return fmt.Errorf("herdrtest: starting tmux for real panes: %w", err)
	}
	out, err := r.run(nil, "display-message", "-p", "-t", ws.tmux, "#{pid}")
	if err == nil {
		r.serverPID, err = strconv.Atoi(strings.TrimSpace(out))
	}
	if err != nil {
		_, _ = r.run(nil, "kill-server")
		r.cancel()
		return fmt.Errorf("herdrtest: reading the tmux server's pid: %w", err)
	}
	s.wg.Add(1)
	go s.watchDeaths()
	return nil
}

// tmuxClientEnv is the environment of every tmux command, and so of the
// server the first one starts and of every pane (before each pane's own
// variables): the test's, without the variables of a tmux or Herdr the
// tests themselves may run in.
func tmuxClientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TMUX" || k == "TMUX_PANE" || k == "TERM" || k == "CODEX_THREAD_ID" || strings.HasPrefix(k, "HERDR_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TERM=xterm-256color")
}

// paneArgv is the command tmux starts for a pane: the supervisor, which
// starts the shell through env(1) so the shell gets Herdr's environment
// (herdr-socket-api.md §3.1) and not tmux's: the caller's env first,
// Herdr's own variables over it.
func (s *Server) paneArgv(p *pane) []string {
	a := []string{"/bin/sh", "-c", supervisor, "herdrtest-pane", s.real.bin, s.real.sock, s.real.envBin}
	for _, k := range []string{"TMUX", "TMUX_PANE", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "CODEX_THREAD_ID"} {
		a = append(a, "-u", k)
	}
	a = append(a, "--")
	keys := make([]string, 0, len(p.env))
	for k := range p.env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a = append(a, k+"="+p.env[k])
	}
	a = append(a, "HERDR_ENV=1", "HERDR_SOCKET_PATH="+s.sock, "HERDR_WORKSPACE_ID="+p.tab.ws.id,
		"HERDR_TAB_ID="+p.tab.id, "HERDR_PANE_ID="+p.id, "TERM=xterm-256color", "COLORTERM=truecolor")
	if s.protocol >= Protocol22 {
		a = append(a, "TERM_PROGRAM=herdr") // Herdr 0.9 names itself to new panes (landscape.md §9)
	}
	return append(a, s.real.opts.Shell...)
}

// spawn runs a tmux command that creates p (and maybe its window and
// session) and records the tmux ids it printed. Called with s.mu held.
func (s *Server) spawn(p *pane, args []string) error {
	out, err := s.real.run(nil, append(append(args, "--"), s.paneArgv(p)...)...)
	if err != nil {
		return err
	}
	f := strings.Fields(out)
	if len(f) != 4 {
		return fmt.Errorf("tmux printed %q for a new pane", out)
	}
	pid, err := strconv.Atoi(f[3])
	if err != nil {
		return fmt.Errorf("tmux printed %q for a new pane", out)
	}
	if p.tab.ws.tmux == "" {
		p.tab.ws.tmux = f[0]
	}
	if p.tab.tmux == "" {
		p.tab.tmux = f[1]
	}
	p.tmux, p.root = f[2], pid
	return nil
}

// shellPID finds the shell a real pane's supervisor started: its only
// child until the shell ends, once it runs the shell (and no longer the
// supervisor's fork or env(1)), so nobody sees the fake's own steps.
// Called with s.mu held.
func (s *Server) shellPID(p *pane) int {
	if p.shell != 0 || p.root == 0 {
		return p.shell
	}
	// The supervisor starts it at once; only a loaded machine makes this
	// wait at all.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, c := range allProcs() {
			if c.ppid == p.root && slices.Equal(cmdline(c.pid), s.real.opts.Shell) {
				p.shell = c.pid
				return p.shell
			}
		}
	}
	s.logf("real panes: the shell of %s did not start", p.id)
	return 0
}

func (s *Server) spawnWorkspace(ws *workspace) error {
	o := s.real.opts
	args := []string{"new-session", "-d", "-P", "-F", spawnFormat, "-s", ws.id,
		"-x", strconv.Itoa(o.Cols), "-y", strconv.Itoa(o.Rows)}
	if ws.cwd != "" {
		args = append(args, "-c", ws.cwd)
	}
	return s.spawn(ws.tabs[0].panes[0], args)
}

// spawnTab opens t's window; its cwd is the request's, else the
// workspace's (tmux's session directory).
func (s *Server) spawnTab(t *tab, cwd string, focus bool) error {
	args := []string{"new-window", "-P", "-F", spawnFormat, "-t", t.ws.tmux + ":"}
	if !focus {
		args = append(args, "-d")
	}
	if cwd != "" {
		args = append(args, "-c", cwd)
	}
	return s.spawn(t.panes[0], args)
}

// spawnSplit opens np beside at. Without a cwd the new pane starts where
// at's shell is now, as a split in a terminal multiplexer usually does.
// ratio, when given, is the share the split pane keeps.
func (s *Server) spawnSplit(np, at *pane, direction string, ratio float64, hasRatio bool, cwd string, focus bool) error {
	args := []string{"split-window", "-P", "-F", spawnFormat, "-t", at.tmux, "-v"}
	if direction == "right" {
		args[len(args)-1] = "-h"
	}
	if !focus {
		args = append(args, "-d")
	}
	if hasRatio {
		pct := int((1-ratio)*100 + 0.5)
		args = append(args, "-l", strconv.Itoa(min(max(pct, 1), 99))+"%")
	}
	if cwd == "" {
		cwd = "#{pane_current_path}"
	}
	return s.spawn(np, append(args, "-c", cwd))
}

// typeInto types text (bracketed when the pane's program enabled bracketed
// paste, exactly as given otherwise) and then keys into a real pane, in
// one tmux command so nothing else gets between them. Called with s.mu
// held.
func (s *Server) typeInto(p *pane, text string, keys []string) error {
	var args []string
	var stdin io.Reader
	if text != "" {
		s.real.bufSeq++
		buf := "herdrtest-" + strconv.Itoa(s.real.bufSeq)
		// load-buffer reads stdin: no argument-length limit and no
		// option parsing of the text; paste-buffer -p brackets only when
		// the program asked for it, -r keeps newlines as they are.
		args = append(args, "load-buffer", "-b", buf, "-", ";", "paste-buffer", "-p", "-r", "-d", "-b", buf, "-t", p.tmux)
		stdin = strings.NewReader(text)
	}
	if len(keys) > 0 {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, "send-keys", "-t", p.tmux, "--")
		for _, k := range keys {
			args = append(args, tmuxKey(k))
		}
	}
	if len(args) == 0 {
		return nil
	}
	_, err := s.real.run(stdin, args...)
	return err
}

// tmuxKeys names in tmux the keys pane.send_input accepts (validKey).
var tmuxKeys = map[string]string{
	"enter": "Enter", "tab": "Tab", "esc": "Escape", "escape": "Escape", "backspace": "BSpace",
	"space": "Space", "up": "Up", "down": "Down", "left": "Left", "right": "Right", "home": "Home",
	"end": "End", "pageup": "PPage", "pagedown": "NPage", "delete": "DC", "insert": "IC",
	"minus": "-", "shift+tab": "BTab",
}

func init() {
	for i := 1; i <= 12; i++ {
		tmuxKeys["f"+strconv.Itoa(i)] = "F" + strconv.Itoa(i)
	}
}

// tmuxKey translates a key validKey accepted.
func tmuxKey(k string) string {
	l := strings.ToLower(k)
	if name, ok := tmuxKeys[l]; ok {
		return name
	}
	for _, m := range []struct{ pre, tmux string }{{"ctrl+", "C-"}, {"c-", "C-"}, {"alt+", "M-"}, {"m-", "M-"}} {
		if _, ok := strings.CutPrefix(l, m.pre); ok {
			rest := k[len(m.pre):]
			if name, ok := tmuxKeys[strings.ToLower(rest)]; ok {
				return m.tmux + name
			}
			if m.tmux == "C-" {
				rest = strings.ToLower(rest)
			}
			return m.tmux + rest
		}
	}
	return k
}

// truncateTyped cuts text to what reaches a pane (MaxTypedInput), on a
// character boundary.
func truncateTyped(text string) (string, bool) {
	if len(text) <= MaxTypedInput {
		return text, false
	}
	cut := MaxTypedInput
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut], true
}

// finishPane records how a real pane ended with its last screen, and
// removes what is left of it from tmux (a dead pane stays until then; a
// live one is killed, as Herdr kills a closed pane's process). Called with
// s.mu held, before the pane leaves the world.
func (s *Server) finishPane(p *pane, ex PaneExit) {
	if s.real == nil || p.tmux == "" {
		return
	}
	ex.Screen, _ = s.real.capture(p.tmux, false)
	ex.Output, _ = s.real.capture(p.tmux, true)
	if _, err := s.real.run(nil, "kill-pane", "-t", p.tmux); err != nil {
		s.logf("real panes: closing %s (%s): %v", p.id, p.tmux, err)
	}
	s.exits[p.id] = ex
}

// paneExited is what Herdr does when a pane's process dies (§5.4, §6.5):
// pane.exited, the pane goes, layout.updated for its tab when the tab
// stays, workspace.closed when it was the workspace's last pane. Called
// with s.mu held.
func (s *Server) paneExited(p *pane, ex PaneExit) {
	s.finishPane(p, ex)
	s.emit("pane.exited", map[string]any{"pane_id": p.id, "workspace_id": p.tab.ws.id})
	t := p.tab
	tabGone, wsGone := s.removePane(p)
	if !tabGone {
		s.syncFocus(t)
		s.emit("layout.updated", map[string]any{"layout": s.layoutForEvent(t)})
	}
	if wsGone {
		s.emit("workspace.closed", map[string]any{"workspace_id": t.ws.id})
	}
}

// syncFocus makes tmux's active pane the one the fake thinks focused after
// a pane left the tab. Called with s.mu held.
func (s *Server) syncFocus(t *tab) {
	if s.real == nil || t.focused == nil || t.focused.tmux == "" {
		return
	}
	_, _ = s.real.run(nil, "select-pane", "-t", t.focused.tmux)
}

// watchDeaths is owned by the Server: New starts it in real-pane mode and
// Close ends it (cancelling its wait) and waits for it. Each time a pane
// says its shell ended it hands the ended panes to reapDead. A second
// goroutine, owned by it, reaps once a second too, for a pane whose
// supervisor itself was killed, which only tmux sees (and tmux 3.3 may
// not tell).
func (s *Server) watchDeaths() {
	defer s.wg.Done()
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-s.real.ctx.Done():
				return
			case <-tick.C:
				s.reapDead()
			}
		}
	}()
	defer func() { <-tickDone }()
	for {
		_, err := s.real.runCtx(s.real.ctx, nil, "wait-for", diedChannel)
		if s.real.ctx.Err() != nil {
			return
		}
		if err != nil {
			// Panes can no longer exit for the fake: tell the test.
			s.mu.Lock()
			s.violations = append(s.violations, "real panes: the tmux server went away before the fake was closed: "+err.Error())
			s.mu.Unlock()
			return
		}
		s.reapDead()
	}
}

// reapDead handles every pane whose shell has ended. Serialised by
// reapMu: the watcher and its ticker may both call it.
func (s *Server) reapDead() {
	s.real.reapMu.Lock()
	defer s.real.reapMu.Unlock()
	// "|" keeps empty fields; the title comes last, it may hold anything.
	out, err := s.real.run(nil, "list-panes", "-a", "-F", "#{pane_id}|#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}|#{pane_title}")
	if err != nil {
		return // no session left
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, "|", 5)
		if len(f) != 5 {
			continue
		}
		var ex PaneExit
		if code, ok := strings.CutPrefix(f[4], exitTitle); ok {
			// The shell's status as its supervisor saw it: 128+n after
			// signal n, as shells report it.
			ex.Code, _ = strconv.Atoi(code)
			if ex.Code > 128 && ex.Code < 128+65 {
				ex.Signal = ex.Code - 128
			}
		} else if f[1] == "1" && (f[2] != "" || f[3] != "") {
			// The supervisor itself ended (killed from outside).
			ex.Code, _ = strconv.Atoi(f[2])
			if ex.Signal, _ = strconv.Atoi(f[3]); ex.Signal > 0 {
				ex.Code = 128 + ex.Signal
			}
		} else {
			if f[1] == "1" {
				// Dead without a status: tmux missed the SIGCHLD; a
				// nudge makes it reap, the next round sees the status.
				_ = syscall.Kill(s.real.serverPID, syscall.SIGCHLD)
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if p := s.paneByTmux(f[0]); p != nil {
			s.paneExited(p, ex)
		} else {
			// Closed by a request while it was dying: already handled.
			_, _ = s.real.run(nil, "kill-pane", "-t", f[0])
		}
		s.mu.Unlock()
	}
}

func (s *Server) paneByTmux(id string) *pane {
	for _, p := range s.panes {
		if p.tmux == id {
			return p
		}
	}
	return nil
}

// capture reads a pane: the visible screen, or with history everything
// tmux still holds with wrapped lines joined.
func (r *realPanes) capture(target string, history bool) (string, error) {
	args := []string{"capture-pane", "-p", "-t", target}
	if history {
		args = append(args, "-J", "-S", "-")
	}
	out, err := r.run(nil, args...)
	return tidyScreen(out), err
}

// tidyScreen drops trailing blanks and tmux's note on a dead pane, which
// is not the program's output.
func tidyScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	trim := func() {
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
	}
	trim()
	if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "Pane is dead") {
		lines = lines[:n-1]
		trim()
	}
	return strings.Join(lines, "\n")
}

// stopRealPanes ends the tmux server and everything that ran in it: the
// panes' processes get the hangup of their closing ptys, and whatever of
// their process trees is still there a moment later is killed. Called by
// Close, without s.mu.
func (s *Server) stopRealPanes() {
	r := s.real
	if r == nil {
		return
	}
	var roots []int
	if out, err := r.run(nil, "list-panes", "-a", "-F", "#{pane_pid}"); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil {
				roots = append(roots, pid)
			}
		}
	}
	// Taken before the kill: once a shell dies its children move to init
	// and can no longer be told from anyone else's.
	doomed := descendants(roots)
	r.cancel() // first, so the watcher takes the server's end for the close it is
	_, _ = r.run(nil, "kill-server")
	waitGone([]procStat{{pid: r.serverPID, start: startTime(r.serverPID)}}, 5*time.Second, syscall.SIGKILL)
	// The hangup gives each pane's program the time it takes to tidy
	// up, as a real Herdr's exit does; a wrapper killed on the way out
	// leaves its registration behind, which tests of a vanished Herdr
	// would then take for the product's leftover (a loaded machine took
	// more than a second now and then).
	waitGone(doomed, 5*time.Second, syscall.SIGKILL)
}

// waitGone waits up to d for the processes to end, then sends sig to those
// left and waits for them once more.
func waitGone(ps []procStat, d time.Duration, sig syscall.Signal) {
	alive := func() []procStat {
		var out []procStat
		for _, p := range ps {
			if p.pid > 0 && running(p) {
				out = append(out, p)
			}
		}
		return out
	}
	deadline := time.Now().Add(d)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	left := alive()
	for _, p := range left {
		_ = syscall.Kill(p.pid, sig)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(left) > 0 && len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// Screen returns a real pane's visible screen, one line per row, trailing
// blanks dropped; for a pane that has ended, its last screen.
func (s *Server) Screen(paneID string) (string, error) {
	return s.read(paneID, false)
}

// Output returns everything a real pane still holds, scrollback included,
// with wrapped lines joined; for a pane that has ended, what it held last.
func (s *Server) Output(paneID string) (string, error) {
	return s.read(paneID, true)
}

func (s *Server) read(paneID string, history bool) (string, error) {
	s.mu.Lock()
	target := ""
	if p := s.panes[paneID]; p != nil {
		target = p.tmux
	}
	ex, ended := s.exits[paneID]
	s.mu.Unlock()
	pick := func(ex PaneExit) string {
		if history {
			return ex.Output
		}
		return ex.Screen
	}
	switch {
	case s.real == nil:
		return "", fmt.Errorf("herdrtest: pane %s: no screen without Options.RealPanes", paneID)
	case ended:
		return pick(ex), nil
	case target == "":
		return "", fmt.Errorf("herdrtest: no pane %s", paneID)
	}
	out, err := s.real.capture(target, history)
	if err != nil {
		// It may have ended between the look-up and the capture.
		if ex, ok := s.Exited(paneID); ok {
			return pick(ex), nil
		}
		return "", fmt.Errorf("herdrtest: reading pane %s: %w", paneID, err)
	}
	return out, nil
}

// WaitForText waits until want appears in a real pane's Output and
// returns that output; it fails t with the pane's screen after timeout.
func (s *Server) WaitForText(t testing.TB, paneID, want string, timeout time.Duration) string {
	t.Helper()
	var out string
	var err error
	// Each look runs tmux: a gentler pace than Await's on a loaded box.
	if awaitEvery(timeout, 20*time.Millisecond, func() bool {
		out, err = s.Output(paneID)
		return err == nil && strings.Contains(out, want)
	}) {
		return out
	}
	t.Fatalf("herdrtest: %q did not appear in pane %s within %v (%v); it shows:\n%s", want, paneID, timeout, err, out)
	return ""
}

// Exited says how a real pane ended, and whether it has.
func (s *Server) Exited(paneID string) (PaneExit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex, ok := s.exits[paneID]
	return ex, ok
}

// WaitExited waits until a real pane has ended and says how; it fails t
// with the pane's screen after timeout.
func (s *Server) WaitExited(t testing.TB, paneID string, timeout time.Duration) PaneExit {
	t.Helper()
	var ex PaneExit
	if s.Await(timeout, func() (ok bool) { ex, ok = s.Exited(paneID); return ok }) {
		return ex
	}
	screen, _ := s.Screen(paneID)
	t.Fatalf("herdrtest: pane %s did not end within %v; it shows:\n%s", paneID, timeout, screen)
	return ex
}

// ShellPID is the pid of the shell a real pane started, 0 when the pane is
// gone or not real.
func (s *Server) ShellPID(paneID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.panes[paneID]; p != nil {
		return s.shellPID(p)
	}
	return 0
}

// TmuxSocket is the socket of the tmux server behind real panes, "" in
// data-only mode: `tmux -S <socket> attach` shows a test's panes live.
func (s *Server) TmuxSocket() string {
	if s.real == nil {
		return ""
	}
	return s.real.sock
}

// realLayout reads a real tab's layout from tmux (pane.layout). Called
// with s.mu held.
func (s *Server) realLayout(t *tab) (map[string]any, error) {
	out, err := s.real.run(nil, "display-message", "-p", "-t", t.tmux, "#{window_layout}")
	if err != nil {
		return nil, err
	}
	root, err := parseTmuxLayout(strings.TrimSpace(out))
	if err != nil {
		return nil, err
	}
	byNum := map[int]*pane{}
	for _, p := range t.panes {
		if n, err := strconv.Atoi(strings.TrimPrefix(p.tmux, "%")); err == nil {
			byNum[n] = p
		}
	}
	panes, splits := herdrLayout(root, func(n int) (string, bool) {
		if p := byNum[n]; p != nil {
			return p.id, t.focused == p
		}
		return "", false
	})
	focused := ""
	if t.focused != nil {
		focused = t.focused.id
	}
	return map[string]any{
		"workspace_id": t.ws.id, "tab_id": t.id, "zoomed": false,
		"area":            rectOf(root.x, root.y, root.w, root.h),
		"focused_pane_id": focused, "panes": panes, "splits": splits,
	}, nil
}

// layoutForEvent is a tab's layout for layout.updated: the real one when
// there is one. Called with s.mu held.
func (s *Server) layoutForEvent(t *tab) map[string]any {
	if s.real != nil && t.tmux != "" {
		l, err := s.realLayout(t)
		if err == nil {
			return l
		}
		s.logf("real panes: layout of %s: %v", t.id, err)
	}
	return s.layout(t)
}

// finishPanes ends every real pane of a tab that is being closed. Called
// with s.mu held.
func (s *Server) finishPanes(t *tab) {
	for _, p := range slices.Clone(t.panes) {
		s.finishPane(p, PaneExit{Closed: true, Code: -1})
	}
}
