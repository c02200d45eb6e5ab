// Package demo is `herdr-pi demo`: a scripted agent (RunAgent) runs under
// the real `herdr-pi wrap`, which reports to a Herdr stand-in, and the
// demo draws the agent's screen with the timeline of what herdr-pi decided
// and sent. It needs no Herdr, Pi or network, and touches nothing outside
// a temporary directory. It sees the wrapper only from outside: the
// requests reaching the stand-in, and the wrapper's HERDR_PI_TRACE file.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Options is how the command wants the demo run.
type Options struct {
	// Out is where the demo draws.
	Out io.Writer
	// Terminal describes Out when it is a terminal (nil otherwise): the
	// demo then redraws in place, fitted to its size.
	Terminal *Terminal
	// Styles renders the colours, or plain text: the command decides
	// (never on a pipe, not with NO_COLOR).
	Styles *lipgloss.Renderer
	// JSON prints the timeline as JSON at the end instead of drawing it.
	JSON bool
	// Wrap is the command line that runs the demo agent under
	// `herdr-pi wrap`.
	Wrap []string
	// Env is the person's environment; whatever in it points at their
	// real Herdr, wrapper, config or state is left out.
	Env []string
}

// Terminal is the person's terminal.
type Terminal struct {
	Rows, Cols int
	// Keys is the terminal to read q from; nil when stdin is not one.
	Keys *os.File
}

// Timings: the simulated person reads, then types.
const (
	typeDelay   = 25 * time.Millisecond
	think       = 900 * time.Millisecond
	answerAfter = 2500 * time.Millisecond
	timeout     = 45 * time.Second
	// settle is how long a log line waits for events that sort before it.
	settle = 0.3
)

// Format names the shape of `demo --json` (docs/demo.md,
// docs/demo.schema.json). It changes only when a field's meaning changes.
const Format = "herdr-pi.demo/1"

// ErrInterrupted is what Run's error is (errors.Is) when a signal stopped
// the demo: Ctrl-C, kill, the terminal closing. q is a way to end it and
// not an error.
var ErrInterrupted = errors.New("interrupted")

// Interrupted is Run's error when a signal stopped the demo: the command
// exits 128+Signal, as a program that signal ended would.
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string {
	return ErrInterrupted.Error() + " (" + unix.SignalName(e.Signal) + ")"
}
func (e *Interrupted) Is(target error) bool { return target == ErrInterrupted }

// madeTempDir lets a test act the moment the demo's temporary directory
// exists (stop the demo with a signal there).
var madeTempDir = func(root string) {}

// Run runs the demo to its end, or until the person presses q or
// interrupts it (then the agent is stopped and the demo says so).
func Run(ctx context.Context, o Options) error {
	// A reader that went away (demo | head) must fail the write, which
	// stops the demo and cleans up, not kill it with SIGPIPE and leave
	// its temporary directories behind. Asked for, the signal is only
	// counted here; the channel is never read.
	brokenPipe := make(chan os.Signal, 1)
	signal.Notify(brokenPipe, unix.SIGPIPE)
	defer signal.Stop(brokenPipe)
	// Ctrl-C, or the terminal closing, stops the agent like q does. Held
	// from before the temporary directories are made: one that comes
	// while the demo starts waits in the channel, and the demo stops as
	// soon as its agent runs, removing them on the way out (killed by
	// the signal's default action, it left them in TMPDIR for good).
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(interrupt)
	where := os.TempDir()
	if os.Getenv("TMPDIR") != "" {
		where = "TMPDIR=" + where
	}
	// The demo's wrapper keeps its control socket below the temporary
	// directory, and refuses one there that anyone could swap for theirs:
	// said now, its agent would wait the whole timeout for a socket it
	// never gets.
	var pe *control.PrivateDirError
	if err := control.CheckPrivateDir(filepath.Join(tempBase(), "herdr-pi-demo")); errors.As(err, &pe) && pe.Problem == control.ProblemParent {
		return fmt.Errorf("cannot use %s: %s may be written by others and is not sticky, so anyone could swap the demo's directories for theirs; run chmod +t %s (or chmod o-w %s), or point TMPDIR at a directory of yours",
			where, pe.Parent, shellword.Word(pe.Parent), shellword.Word(pe.Parent))
	}
	root, err := os.MkdirTemp(tempBase(), "herdr-pi-demo")
	if err != nil {
		return fmt.Errorf("cannot make its temporary directory in %s: %w; point TMPDIR at a writable directory", where, err)
	}
	defer os.RemoveAll(root)
	madeTempDir(root)
	project := filepath.Join(root, "demo-project")
	if err := os.Mkdir(project, 0o700); err != nil {
		return err
	}
	if err := writeDemoConfig(root); err != nil {
		return err
	}

	tl := &timeline{start: time.Now()}
	herdr, err := startHerdrStandIn(func(m string, p json.RawMessage) { tl.add(herdrEvent(m, p)) })
	if err != nil {
		return fmt.Errorf("Herdr stand-in: %w", err)
	}
	defer herdr.close()

	lay, live := layoutFor(o.Terminal)

	// The agent's terminal: a pty of our own, whose screen we draw.
	master, slave, err := creackpty.Open()
	if err != nil {
		return err
	}
	defer master.Close()
	_ = creackpty.Setsize(master, &creackpty.Winsize{Rows: uint16(lay.agentRows), Cols: uint16(lay.agentCols)})
	scr := screen.New(lay.agentRows, lay.agentCols)
	defer scr.Close()
	var scrMu sync.Mutex
	snapshot := func() string {
		scrMu.Lock()
		defer scrMu.Unlock()
		return scr.Snapshot().Text
	}

	trace := &traceReader{path: filepath.Join(root, "trace.jsonl")}
	defer trace.close()
	readTrace := func() { trace.read(func(e state.Event) { tl.add(stateEvent(e)) }) }

	// herdr-pi wrap, as its own process leading its own session on the
	// pty, as it would in a terminal of its own.
	wrap := exec.Command(o.Wrap[0], o.Wrap[1:]...)
	wrap.Env = demoEnv(o.Env, root, herdr.socket, trace.path)
	wrap.Dir = project
	wrap.Stdin, wrap.Stdout, wrap.Stderr = slave, slave, slave
	wrap.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := wrap.Start(); err != nil {
		slave.Close()
		return fmt.Errorf("cannot start %s: %w", strings.Join(o.Wrap, " "), err)
	}
	slave.Close()
	wrapDone := make(chan error, 1)
	go func() { wrapDone <- wrap.Wait() }() // owned here: ends with wrap

	readDone := make(chan struct{})
	go func() { // owned here: ends when wrap and the agent have closed the pty
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

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	userCtx, stopUser := context.WithCancel(ctx)
	defer stopUser()
	userDone := make(chan struct{})
	go func() { // owned here: ends with the script or userCtx
		defer close(userDone)
		person(userCtx, master, tl)
	}()

	// Ctrl-Z and fg: the terminal is given back before the demo stops,
	// and taken again when it continues.
	jobControl := make(chan os.Signal, 2)
	signal.Notify(jobControl, unix.SIGTSTP, unix.SIGCONT)
	defer signal.Stop(jobControl)

	// A demo nobody can see is stopped at the first write that fails (a
	// full disk, a closed pipe), and that error is the demo's.
	out := &render.StickyWriter{W: o.Out}
	o.Out = out
	v := newView(o, lay, live)
	v.begin()
	stopped := false
	var interrupted os.Signal // the first signal that stopped the demo
	var killAfter <-chan time.Time
	stop := func() {
		if !stopped {
			stopped = true
			stopUser()
			_ = wrap.Process.Signal(unix.SIGTERM)
			killAfter = time.After(5 * time.Second)
		}
	}
	var wrapErr error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case wrapErr = <-wrapDone:
			break loop
		case sig := <-interrupt:
			if interrupted == nil {
				interrupted = sig
			}
			stop()
		case <-ctx.Done():
			stop()
		case <-killAfter:
			_ = wrap.Process.Kill()
		case sig := <-jobControl:
			if sig == unix.SIGTSTP {
				v.suspend()
				_ = unix.Kill(os.Getpid(), unix.SIGSTOP) // as the default action of SIGTSTP would
			} else {
				v.resume()
			}
		case <-tick.C:
			if v.quitRequested() || out.Err != nil {
				stop()
			}
			readTrace()
			v.frame(snapshot(), tl.events(), time.Since(tl.start).Seconds()-settle)
		}
	}
	<-readDone
	stopUser()
	<-userDone
	readTrace()
	final, events := snapshot(), tl.events()
	timedOut := ctx.Err() == context.DeadlineExceeded
	exit := exitCode(wrapErr)
	v.end(final, events, summarize(events, stopped && !timedOut, exit))

	if o.JSON {
		doc := struct {
			Format    string  `json:"format"`
			Events    []Event `json:"events"`
			Screen    string  `json:"screen"`
			AgentExit int     `json:"agent_exit"`
			Stopped   bool    `json:"stopped"`
		}{Format, events, final, exit, stopped}
		_ = render.JSON(o.Out, doc) // a write error is out.Err
	}
	switch {
	case out.Err != nil:
		return fmt.Errorf("cannot write what it shows: %w", out.Err)
	case timedOut:
		return fmt.Errorf("the scripted agent did not finish within %v", timeout)
	case interrupted != nil:
		return &Interrupted{Signal: interrupted.(syscall.Signal)}
	case wrapErr != nil && !stopped:
		return fmt.Errorf("the wrapped agent failed: %w", wrapErr)
	case herdr.failure() != nil:
		return fmt.Errorf("a herdr-pi bug (report it at https://github.com/herdr-pi/herdr-pi/issues): %w", herdr.failure())
	}
	return nil
}

// person is the person at the keyboard, scripted: asks for a fix once the
// agent is idle, answers its question once the pane is blocked.
func person(ctx context.Context, keyboard io.Writer, tl *timeline) {
	typeLine := func(text string) {
		for _, r := range text {
			if !sleep(ctx, typeDelay) {
				return
			}
			_, _ = io.WriteString(keyboard, string(r))
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return
		}
		_, _ = io.WriteString(keyboard, "\r")
		tl.add(Event{Source: "you", Text: fmt.Sprintf("typed %q, Enter", text)})
	}
	if !waitUntil(ctx, func() bool { return tl.reached("idle", 1) }) || !sleep(ctx, think) {
		return
	}
	typeLine("fix the flaky test in the api package")
	if !waitUntil(ctx, func() bool { return tl.reached("blocked", 1) }) || !sleep(ctx, answerAfter) {
		return
	}
	typeLine("api_test.go")
}

// exitCode is the wrapper's exit status: the agent's, or 128+n when it
// died of signal n (wrap passes that on).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// demoConfig is the wrapper's config.toml in the demo. The scripted agent
// plays Pi: read with Pi's manifest by choice, it is shown to Herdr and
// named in notifications as Pi, as `herdr-pi wrap pi` would be (a command
// that is not Pi goes by its own name otherwise). It is not named Pi with
// --agent, which would also treat it as Pi's CLI and load the probe.
const demoConfig = "[detect]\nagent = \"pi\"\n"

func writeDemoConfig(root string) error {
	dir := filepath.Join(root, "config", "herdr-pi")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(demoConfig), 0o600)
}

// demoEnv is the wrapper's environment in the demo: the person's own,
// minus anything pointing at their real Herdr, wrapper, config or state,
// plus a Herdr pane that is the stand-in and the trace file the demo
// reads.
func demoEnv(base []string, root, socket, trace string) []string {
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
		"HERDR_PI_TRACE="+trace,
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_RUNTIME_DIR="+root, "PI_CODING_AGENT_DIR="+filepath.Join(root, "agent"))
}

func waitUntil(ctx context.Context, cond func() bool) bool {
	for !cond() {
		if !sleep(ctx, 20*time.Millisecond) {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
