package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// These tests run a Service against the fake Herdr with real panes. The
// owner link is played by fakeOwner; the pane's command is a stand-in for
// herdr-pi wrap that only sleeps, and the test plays the pane's wrapper:
// it registers a control endpoint for the pane (as wrap does) whose status
// names the session, and reports the pane's states to Herdr.

// A guard against hangs on a loaded machine, not a measurement.
const long = 60 * time.Second

type fakeOwner struct {
	pid  int
	done chan struct{}
	// launch answers every order, unless orderErr is set; waitBoundary
	// holds the order until the test releases it.
	launch       control.Launch
	orderErr     error
	boundary     chan struct{}
	waitBoundary bool
	// goneByContext: an owner going away while the order waits for the
	// boundary is heard through the run's context only (the wrapper's
	// cancel for the owner's disconnection came first).
	goneByContext bool

	// atHandback runs as each handback arrives, before the owner would
	// reopen its session.
	atHandback func(control.Handback)

	mu        sync.Mutex
	states    []string
	handbacks []control.Handback
	refused   []string
	withdrawn bool
}

func (o *fakeOwner) PID() int              { return o.pid }
func (o *fakeOwner) Done() <-chan struct{} { return o.done }

// gone is what the order's wait hears of the owner's end itself.
func (o *fakeOwner) gone() <-chan struct{} {
	if o.goneByContext {
		return nil
	}
	return o.done
}

func (o *fakeOwner) Handoff(ctx context.Context, order control.HandoffOrder) (control.Launch, error) {
	if o.waitBoundary {
		select {
		case <-o.boundary:
		case <-ctx.Done():
			return control.Launch{}, ctx.Err()
		case <-o.gone():
			return control.Launch{}, control.ErrOwnerGone
		}
	}
	if o.orderErr != nil {
		return control.Launch{}, o.orderErr
	}
	l := o.launch
	l.ID = order.ID
	return l, nil
}

func (o *fakeOwner) CallTool(ctx context.Context, id string, call control.ToolCall, update func(json.RawMessage)) (json.RawMessage, error) {
	update(json.RawMessage(`{"content":[{"type":"text","text":"looking"}]}`))
	return json.RawMessage(`{"content":[{"type":"text","text":"answer"}]}`), nil
}

func (o *fakeOwner) PaneState(id, state string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, state)
	return nil
}

func (o *fakeOwner) Handback(ctx context.Context, id string, hb control.Handback) (control.Resumed, error) {
	if o.atHandback != nil {
		o.atHandback(hb)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handbacks = append(o.handbacks, hb)
	select {
	case <-o.done:
		return control.Resumed{}, control.ErrOwnerGone
	default:
	}
	return control.Resumed{Transferred: hb.Transferred, Continued: hb.NeedsContinue}, nil
}

func (o *fakeOwner) Refuse(id string, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused = append(o.refused, id+": "+err.Error())
	return nil
}

func (o *fakeOwner) handbacksSoFar() []control.Handback {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.handbacks)
}

type rig struct {
	t       *testing.T
	s       *herdrtest.Server
	svc     *Service
	o       *fakeOwner
	runtime string
	ownDir  string // the wrapper's own run directory
	own     *control.Run
	client  *herdr.Client
	seq     uint64
}

const sessionFile = "/tmp/attempt-session.jsonl"

func newRig(t *testing.T, mut ...func(*Config)) *rig {
	t.Helper()
	s := herdrtest.Start(t, herdrtest.Options{RealPanes: &herdrtest.RealPanes{}, NoEventPacing: true})
	base, err := os.MkdirTemp("/tmp", "hpl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	rt := filepath.Join(base, "rt")
	self := filepath.Join(base, "fake-herdr-pi")
	// Stands in for herdr-pi wrap: it stays until the pane closes.
	if err := os.WriteFile(self, []byte("#!/bin/sh\nexec sleep 600\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := &fakeOwner{pid: 4242, done: make(chan struct{}), boundary: make(chan struct{}), launch: control.Launch{
		RunID: "r1", SessionID: "s1", SessionFile: sessionFile, Workflow: "review", Label: "finder", Attempt: 1,
		Model: "fake/m", ToolNames: []string{"read", "lookup"}, Executable: "/bin/pi",
		Argv: []control.Arg{{Text: "/bin/pi"}, {Text: "--system-prompt"}, {File: "system.md"}, {Text: "--extension"}, {ToolBridge: true}, {Text: "it's a message"}},
		Env:  map[string]string{"PI_CODING_AGENT_DIR": "/agent"}, Cwd: base,
		Files: []control.LaunchFile{{Name: "system.md", Content: "be brief"}},
		Tools: []control.ToolSpec{{Name: "lookup", Description: "looks up", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}}
	cfg := Config{Self: self, RunBase: rt, RuntimeBase: rt, HerdrSocket: s.SocketPath(), OwnerPane: s.PaneID(),
		Ledger: handoff.LedgerAt(rt), StartTimeout: long, Logf: t.Logf}
	for _, m := range mut {
		m(&cfg)
	}
	svc := New(cfg)
	// The wrapper's own control run, as wrap starts it after the service
	// and closes it after the service is closed (cleanups run last first).
	own, err := control.Start(control.RunConfig{RuntimeBase: rt, Events: &paneWrapper{}, Requests: &paneWrapper{}, Owner: svc, Handoffs: svc, Keep: svc.Kept})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	svc.SetRunDir(own.Dir)
	t.Cleanup(svc.Close)
	svc.ownerEvent(o, control.OwnerConnected{PID: o.pid})
	return &rig{t: t, s: s, svc: svc, o: o, runtime: rt, ownDir: own.Dir, own: own, client: herdr.NewClient(s.SocketPath())}
}

// paneWrapper plays the herdr-pi wrap in the pane: registered for it, with
// a status the test sets.
type paneWrapper struct {
	mu    sync.Mutex
	st    control.Status
	asked int // how many times its status was asked
}

func (p *paneWrapper) ProbeEvent(control.Event)       {}
func (p *paneWrapper) Wait(control.WaitRequest) error { return nil }
func (p *paneWrapper) Status() control.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	return p.st
}

func (p *paneWrapper) timesAsked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

func (p *paneWrapper) set(f func(*control.Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.st)
}

// startPaneWrapper plays the pane's wrapper, whose agent is childPID. The
// wrapper ends with its pane, as herdr-pi wrap does when Herdr closes the
// pane; an agent that is not really its (777, say) goes by it.
func (r *rig) startPaneWrapper(pane string, childPID ...int) *paneWrapper {
	r.t.Helper()
	st := control.Status{State: "idle", SessionFile: sessionFile, ChildPID: 777}
	if len(childPID) > 0 {
		st.ChildPID = childPID[0]
	}
	return r.startPaneWrapperAs(pane, st)
}

// startPaneWrapperAs plays the pane's wrapper with status st from the
// start.
func (r *rig) startPaneWrapperAs(pane string, st control.Status) *paneWrapper {
	r.t.Helper()
	w := &paneWrapper{st: st}
	run, err := control.Start(control.RunConfig{RuntimeBase: r.runtime, PaneID: pane, HerdrSocket: r.s.SocketPath(), Events: w, Requests: w})
	if err != nil {
		r.t.Fatal(err)
	}
	var once sync.Once
	end := func() { once.Do(func() { run.Close() }) }
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, ok := r.s.Exited(pane); ok {
				end()
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	r.t.Cleanup(func() { close(stop); <-stopped; end() })
	return w
}

// agentProc is a stand-in for the pane's Pi: a process under a session
// leader stand-in (sh) under this process, as the agent runs under the
// leader under the pane's wrapper (played by this process).
type agentProc struct {
	pid int
	fd  int // a pidfd, for the test to tell whether it runs
}

// startAgent starts an agent; ignoring, when given, is the signals it
// ignores ("HUP TERM").
func startAgent(t *testing.T, ignoring string) *agentProc {
	t.Helper()
	script := "sleep 600 & echo $!; wait"
	if ignoring != "" {
		script = "trap '' " + ignoring + "; " + script
	}
	cmd := exec.Command("sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, convErr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || convErr != nil {
		t.Fatalf("the agent's pid: %q %v %v", line, err, convErr)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		testenv.Missing(t, "pidfd_open", "run on Linux 5.3 or later ("+err.Error()+")")
	}
	a := &agentProc{pid: pid, fd: fd}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		_ = cmd.Wait()
		_ = unix.Close(fd)
	})
	return a
}

func (a *agentProc) running() bool { return !control.PidfdExited(a.fd, 0) }

func (r *rig) report(pane, state string) {
	r.t.Helper()
	r.seq++
	err := r.client.ReportAgent(context.Background(), herdr.AgentReport{PaneID: pane, Source: "custom:herdr-pi", Agent: "pi", State: state, Seq: r.seq})
	r.delivered(err, pane, "pane.report_agent")
}

// release releases the pane's agent as its wrapper would when its Pi exits.
func (r *rig) release(pane string) {
	r.t.Helper()
	r.seq++
	err := r.client.ReleaseAgent(context.Background(), herdr.AgentRelease{PaneID: pane, Source: "custom:herdr-pi", Agent: "pi", Seq: r.seq})
	r.delivered(err, pane, "pane.release_agent")
}

// delivered fails the test unless the call with the rig's last seq took
// effect. A call can take effect and still end in pane_not_found: the
// handback it caused closed the pane while its reply outlasted the
// client's first 500 ms (a loaded machine), and the identical retry found
// the pane gone, as it would in Herdr.
func (r *rig) delivered(err error, pane, method string) {
	r.t.Helper()
	var he *herdr.Error
	if errors.As(err, &he) && he.Code == "pane_not_found" && slices.ContainsFunc(r.s.AgentCalls(pane), func(c herdrtest.AgentCall) bool {
		return c.Method == method && c.Seq == r.seq && c.Applied
	}) {
		err = nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// handoff starts an ask and returns where its progress and result go.
type asked struct {
	progress chan control.Progress
	done     chan struct{}
	final    control.Progress
	err      error
	cancel   context.CancelFunc
}

func (r *rig) ask(a control.HandoffAsk) *asked {
	ctx, cancel := context.WithCancel(context.Background())
	x := &asked{progress: make(chan control.Progress, 32), done: make(chan struct{}), cancel: cancel}
	if a.RunID == "" {
		a.RunID, a.SessionID, a.OwnerPID = "r1", "s1", r.o.pid
	}
	go func() {
		defer close(x.done)
		x.final, x.err = r.svc.Handoff(ctx, a, func(p control.Progress) { x.progress <- p })
	}()
	r.t.Cleanup(func() { cancel(); <-x.done })
	return x
}

func (x *asked) next(t *testing.T, event string) control.Progress {
	t.Helper()
	for {
		select {
		case p := <-x.progress:
			if p.Event == event {
				return p
			}
		case <-x.done:
			// Every progress was queued before the handoff returned, but
			// select picks at random among ready cases: read what is left.
			for {
				select {
				case p := <-x.progress:
					if p.Event == event {
						return p
					}
					continue
				default:
				}
				break
			}
			t.Fatalf("the handoff ended (%+v, %v) before %s", x.final, x.err, event)
		case <-time.After(long):
			t.Fatalf("no %s within %v", event, long)
		}
	}
}

func (x *asked) wait(t *testing.T) control.Progress {
	t.Helper()
	select {
	case <-x.done:
	case <-time.After(long):
		t.Fatalf("the handoff did not end within %v", long)
	}
	if x.err != nil {
		t.Fatalf("handoff: %v", x.err)
	}
	return x.final
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// nothingLeft: no run directory, file or record of the handoff remains.
func (r *rig) nothingLeft() {
	r.t.Helper()
	var left []string
	filepath.WalkDir(r.runtime, func(p string, d fs.DirEntry, err error) error {
		// The wrappers' own run directories stay: their socket, and the
		// lock that says they are alive.
		if err == nil && !d.IsDir() && !strings.Contains(p, "/panes/") && !strings.HasSuffix(p, "/control.sock") &&
			!(d.Name() == "wrapper.lock" && fileExists(filepath.Join(filepath.Dir(p), "control.sock"))) {
			left = append(left, p)
		}
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "run-") {
			if entries, _ := os.ReadDir(p); !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == "control.sock" }) {
				left = append(left, p)
			}
		}
		return nil
	})
	if len(left) != 0 {
		r.t.Fatalf("left behind: %q", left)
	}
}

// The pane's Pi works and goes idle: the handoff relays launched, working
// and idle to the owner and the asker, hands back idle (transferred, how
// the last reply ended), closes the pane once and leaves nothing behind.
// The pane runs herdr-pi wrap around the launch's words, with its files
// and the bridge's client put in, in its cwd with its environment.
func TestIdleAfterWorkingHandsBack(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	if p := x.next(t, control.ProgressOrdered); p.Handoff != "h1" || p.RunID != "r1" {
		t.Fatalf("ordered %+v", p)
	}
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane)
	l := x.next(t, control.ProgressLaunched)
	if l.PaneID != pane || l.AgentPID != 777 || l.Cwd != r.o.launch.Cwd || !slices.Equal(l.Env, []string{"PI_CODING_AGENT_DIR=/agent"}) {
		t.Fatalf("launched %+v", l)
	}
	cmd := l.Command
	// The pane's notifications carry its title, as Herdr shows it.
	if len(cmd) != 14 || !slices.Equal(cmd[1:10], []string{"wrap", "--agent", "pi", "--label", "review #1 finder", "--no-resume", "--", "/bin/pi", "--system-prompt"}) ||
		cmd[11] != "--extension" || !strings.HasSuffix(cmd[12], ".mjs") || cmd[13] != "it's a message" {
		t.Fatalf("command %q", cmd)
	}
	if b, err := os.ReadFile(cmd[10]); err != nil || string(b) != "be brief" {
		t.Fatalf("the launch's file %s: %q %v", cmd[10], b, err)
	}
	if fi, err := os.Stat(cmd[10]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the bridge client %s: %v %v", cmd[10], fi, err)
	}
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
	r.report(pane, "idle")
	x.next(t, control.ProgressIdle)
	hb := x.wait(t)
	if hb.Event != control.ProgressHandback || hb.Reason != control.HandbackIdle || !hb.Transferred || hb.LastStopReason != "stop" || hb.NeedsContinue {
		t.Fatalf("handback %+v", hb)
	}
	if got := r.o.handbacksSoFar(); len(got) != 1 || got[0].Reason != control.HandbackIdle {
		t.Fatalf("the owner got %+v", got)
	}
	r.o.mu.Lock()
	states := strings.Join(r.o.states, " ")
	r.o.mu.Unlock()
	if states != "launched working idle" {
		t.Fatalf("pane states to the owner: %q", states)
	}
	if ex := r.s.WaitExited(t, pane, long); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	if n := len(slices.DeleteFunc(r.s.Methods(), func(m string) bool { return m != "pane.close" })); n != 1 {
		t.Fatalf("pane.close %d times", n)
	}
	r.nothingLeft()
	if _, err := os.Stat(cmd[10]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the bridge client is left: %v", err)
	}
}

// Herdr says done, not idle, when a turn ends in a pane that is not in
// the focused tab (herdr-socket-api.md §9.3) — the usual case, since the
// handoff's pane opens without the focus. The owner is told done, which its
// status line shows as completed; the asker's stream knows no done and
// reads idle, and the handback is idle all the same.
func TestDoneAfterWorkingReachesTheOwnerAsDone(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	// Herdr's own detection of the pane's Pi derives done.
	r.s.LocalDetection(pane, "pi", "working")
	x.next(t, control.ProgressWorking)
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
	r.s.LocalDetection(pane, "pi", "done")
	x.next(t, control.ProgressIdle)
	if hb := x.wait(t); hb.Reason != control.HandbackIdle || !hb.Transferred || hb.LastStopReason != "stop" {
		t.Fatalf("handback %+v", hb)
	}
	r.o.mu.Lock()
	states := strings.Join(r.o.states, " ")
	r.o.mu.Unlock()
	if states != "launched working done" {
		t.Fatalf("pane states to the owner: %q, want launched working done", states)
	}
}

// A turn too short for Herdr to show working still counts, from the pane
// wrapper's settled runs; an aborted turn asks the owner to continue.
func TestAShortAbortedTurnCountsAndNeedsContinue(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason, st.LastAborted = 1, "aborted", true })
	r.report(pane, "idle")
	x.next(t, control.ProgressWorking)
	x.next(t, control.ProgressIdle)
	if hb := x.wait(t); hb.Reason != control.HandbackIdle || !hb.NeedsContinue || !hb.Continued || hb.LastStopReason != "aborted" {
		t.Fatalf("handback %+v", hb)
	}
}

// --hold: idle does not hand back; the release of the pane's agent (its
// Pi exited) does, as exited.
func TestHoldKeepsThePaneUntilItsPiExits(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{Hold: true})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	w.set(func(st *control.Status) { st.Runs = 1 })
	r.report(pane, "idle")
	x.next(t, control.ProgressIdle)
	r.report(pane, "blocked")
	x.next(t, control.ProgressBlocked)
	r.release(pane)
	if hb := x.wait(t); hb.Reason != control.HandbackExited || !hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	if ex := r.s.WaitExited(t, pane, long); !ex.Closed {
		t.Fatalf("an exited handoff's pane is closed too: %+v", ex)
	}
	r.nothingLeft()
}

// Cancelled during the launch (the pane runs, its Pi has not started):
// the pane is closed, the attempt goes back untransferred, and nothing is
// left — files, bridge, records.
func TestCancelDuringLaunchRestoresLocalOwnership(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	file := strings.TrimSuffix(strings.TrimPrefix(r.s.Inputs()[0].Text, "exec sh '"), "'")
	r.s.WaitFor(t, long, "the pane to start its command", func() bool { _, err := os.Lstat(file); return errors.Is(err, fs.ErrNotExist) })
	// The record is written once Open returns, which can be a moment after
	// the pane has already started its command.
	var recs []handoff.Record
	r.s.WaitFor(t, long, "the pane's record", func() bool { recs, _ = handoff.LedgerAt(r.runtime).List(); return len(recs) == 1 })
	// The wrapper's pid and the handoff's run directory, which this
	// wrapper holds while the handoff runs (and which holds the bridge),
	// say `herdr-pi close` must wait for this wrapper to hand back (and to
	// close the bridge it still serves).
	if recs[0].Thing() != "pane "+pane || recs[0].Bridge == "" || recs[0].WrapperPID != os.Getpid() || recs[0].Handoff != "h1" ||
		recs[0].RunDir == "" || filepath.Dir(recs[0].Bridge) != recs[0].RunDir {
		t.Fatalf("records while launching: %+v", recs)
	}
	if rd, ok := control.ReadRunDir(recs[0].RunDir); !ok || !rd.Alive || rd.PID != os.Getpid() {
		t.Fatalf("the record's run directory %s: %+v, %v; want this wrapper's, held", recs[0].RunDir, rd, ok)
	}
	x.cancel()
	hb := x.wait(t)
	if hb.Reason != control.HandbackAborted || hb.Transferred || hb.Error == "" || hb.ErrorCode != control.CodeCancelled {
		t.Fatalf("handback %+v, want aborted, code %s", hb, control.CodeCancelled)
	}
	if ex := r.s.WaitExited(t, pane, long); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	r.nothingLeft()
	if recs, _ := handoff.LedgerAt(r.runtime).List(); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

// The owner going away ends a handoff under way: its pane closes.
func TestOwnerGoneClosesThePane(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	close(r.o.done)
	r.svc.ownerEvent(r.o, control.OwnerDisconnected{PID: r.o.pid})
	hb := x.wait(t)
	if hb.Reason != control.HandbackAborted || !hb.Transferred || !strings.Contains(hb.Error, "gone") {
		t.Fatalf("handback %+v", hb)
	}
	// Said once, and what it means for the attempt: nobody has it back.
	if n := strings.Count(hb.Error, control.ErrOwnerGone.Error()); n != 1 || !hb.OwnerGone || !strings.Contains(hb.Error, "nobody has the attempt back") {
		t.Fatalf("the handback's error says the owner is gone %d times, and not that nobody has the attempt back: %q", n, hb.Error)
	}
	if hb.ErrorCode != control.CodeOwnerGone {
		t.Fatalf("handback code %q, want %s", hb.ErrorCode, control.CodeOwnerGone)
	}
	if ex := r.s.WaitExited(t, pane, long); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
}

// An owner whose session ends (it quits) gives the handoff up itself
// before it goes, and may still answer the handback, or not: either way
// nobody takes the attempt back, and the handback says so as it does of an
// owner that went away, so open's answer does not hang on which came first.
func TestAnOwnerWhoseSessionEndsIsGoneWhetherOrNotItAnswers(t *testing.T) {
	for _, answers := range []bool{true, false} {
		t.Run(fmt.Sprintf("answers=%v", answers), func(t *testing.T) {
			r := newRig(t)
			if !answers {
				r.o.atHandback = func(control.Handback) { close(r.o.done) }
			}
			x := r.ask(control.HandoffAsk{})
			r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
			pane := r.s.Inputs()[0].PaneID
			r.startPaneWrapper(pane)
			x.next(t, control.ProgressLaunched)
			r.svc.ownerEvent(r.o, control.HandoffCancel{ID: "h1", Reason: "its session ended", SessionEnding: true})
			hb := x.wait(t)
			if hb.Reason != control.HandbackAborted || !hb.Transferred || !hb.OwnerGone || hb.ErrorCode != control.CodeOwnerGone ||
				!strings.Contains(hb.Error, "its session ended") || strings.Count(hb.Error, "nobody has the attempt back") != 1 {
				t.Fatalf("handback %+v", hb)
			}
			if got := r.o.handbacksSoFar(); len(got) != 1 {
				t.Fatalf("the owner was handed back %+v: it is still there to reopen and dispose its session", got)
			}
			if ex := r.s.WaitExited(t, pane, long); !ex.Closed {
				t.Fatalf("the pane ended %+v", ex)
			}
		})
	}
	// The same cancel without the flag (the person stopped the run) is a
	// handback to an owner that stays.
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	r.startPaneWrapper(r.s.Inputs()[0].PaneID)
	x.next(t, control.ProgressLaunched)
	r.svc.ownerEvent(r.o, control.HandoffCancel{ID: "h1", Reason: "the workflow run was cancelled"})
	if hb := x.wait(t); hb.OwnerGone || hb.ErrorCode != control.CodeCancelled {
		t.Fatalf("a stopped run's handback %+v", hb)
	}
}

// Before the turn boundary, a cancel for the owner's session ending is
// no handback either: the asker hears the owner is gone, not that the
// owner merely withdrew its order.
func TestAnOwnerWhoseSessionEndsBeforeTheBoundaryIsGone(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	r.svc.ownerEvent(r.o, control.HandoffCancel{ID: "h1", Reason: "its session ended", SessionEnding: true})
	if hb := x.wait(t); hb.Transferred || !hb.OwnerGone || hb.ErrorCode != control.CodeOwnerGone || !strings.Contains(hb.Error, "its session ended") {
		t.Fatalf("handback %+v", hb)
	}
}

// A launch's notes (what it leaves out and why: the engine's tool timing
// when the owner's probe could not locate the engine) reach the wrapper's
// log, and the handoff goes on.
func TestALaunchsNotesAreLogged(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	r := newRig(t, func(c *Config) {
		c.Logf = func(format string, args ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			mu.Unlock()
			t.Logf(format, args...)
		}
	})
	r.o.launch.Notes = []string{"the pane's tool calls are not timed: the engine was not found"}
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	mu.Lock()
	found := slices.Contains(logged, "live: handoff h1: the pane's tool calls are not timed: the engine was not found")
	mu.Unlock()
	if !found {
		t.Errorf("the note is not in the log: %q", logged)
	}
	close(r.o.done)
	r.svc.ownerEvent(r.o, control.OwnerDisconnected{PID: r.o.pid})
	x.wait(t)
	r.s.WaitExited(t, pane, long)
}

// Withdrawn before the turn boundary (the asker gave up): nothing opens
// and the owner is told, untransferred.
func TestAskerGoneBeforeTheBoundaryWithdrawsTheOrder(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	x.cancel()
	if hb := x.wait(t); hb.Reason != control.HandbackAborted || hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	if got := r.o.handbacksSoFar(); len(got) != 1 || got[0].Reason != control.HandbackAborted {
		t.Fatalf("the owner got %+v", got)
	}
	if m := r.s.Methods(); slices.Contains(m, "pane.split") {
		t.Fatalf("a pane opened: %q", m)
	}
}

// Asks the wrapper cannot serve are refused in words; a second ask for an
// attempt under way shares its launch (the menu's is told so); a refusal from the owner is the
// asker's error, and the menu's requester hears it.
func TestRefusalsAndSharedLaunches(t *testing.T) {
	r := newRig(t)
	if _, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: 1}, nil); err == nil || !strings.Contains(err.Error(), "not the run's owner pid 1") {
		t.Fatalf("another owner's pid: %v", err)
	}
	r.o.waitBoundary = true
	first := r.ask(control.HandoffAsk{})
	first.next(t, control.ProgressOrdered)
	second := r.ask(control.HandoffAsk{})
	second.next(t, control.ProgressOrdered) // joined: the same handoff, where it stands
	// The menu's request shares it too, and hears so.
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r9", RunID: "r1", SessionID: "s1"})
	if got := r.o.refusedSoFar(); len(got) != 1 || !strings.Contains(got[0], "r9: a handoff of it is under way already (h1)") {
		t.Fatalf("the menu's request for the attempt under way: %q", got)
	}
	first.cancel()
	a, b := first.wait(t), second.wait(t)
	if a.Handoff != "h1" || b.Handoff != "h1" || len(r.o.handbacksSoFar()) != 1 {
		t.Fatalf("two asks: %+v and %+v; the owner got %+v", a, b, r.o.handbacksSoFar())
	}

	r.o.waitBoundary = false
	r.o.orderErr = &control.HandoffRefused{Code: control.HandoffErrNotLive, Message: "no live attempt with session s1"}
	if _, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid}, nil); err == nil || !strings.Contains(err.Error(), "no live attempt") {
		t.Fatalf("refused: %v", err)
	}
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r10", RunID: "r1", SessionID: "s1"})
	deadline := time.Now().Add(long)
	for {
		r.o.mu.Lock()
		refused := slices.Clone(r.o.refused)
		r.o.mu.Unlock()
		if len(refused) == 2 && strings.HasPrefix(refused[1], "r10: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the menu's request was not refused: %q", refused)
		}
		time.Sleep(10 * time.Millisecond)
	}

	r.svc.ownerEvent(r.o, control.OwnerDisconnected{PID: r.o.pid})
	if _, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid}, nil); err == nil || !strings.Contains(err.Error(), "no workflow owner link") {
		t.Fatalf("no owner: %v", err)
	}
}

// noEvents is a Herdr whose event stream is refused (an older Herdr, say).
type noEvents struct{ Client }

func (noEvents) Watch(context.Context, []herdr.Subscription, func(bool), func(herdr.Event)) error {
	return &herdr.Error{Code: "invalid_request", Message: "events.subscribe is not supported"}
}

// Without Herdr's events the handoff asks Herdr instead (process info,
// agent status): a closed pane hands back as closed.
func TestWithoutEventsThePaneIsAskedAfter(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Herdr = func(s string) Herdr { return noEvents{Client{herdr.NewClient(s)}} } })
	x := r.ask(control.HandoffAsk{Hold: true})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	if err := r.client.PaneClose(context.Background(), pane); err != nil {
		t.Fatal(err)
	}
	if hb := x.wait(t); hb.Reason != control.HandbackClosed {
		t.Fatalf("handback %+v", hb)
	}
	if n := len(slices.DeleteFunc(r.s.Methods(), func(m string) bool { return m != "pane.close" })); n != 1 {
		t.Fatalf("pane.close %d times: the handoff closed a closed pane", n)
	}
}

// paneCommand puts the files' paths (with their prefix) and the bridge's
// client where the launch names them, the environment in a stable order.
func TestPaneCommand(t *testing.T) {
	l := control.Launch{RunID: "r", Label: "x", Cwd: "/w",
		Argv: []control.Arg{{Text: "/n"}, {File: "p.md", Prefix: "@"}, {ToolBridge: true}},
		Env:  map[string]string{"B": "2", "A": "1"}}
	got, err := paneCommand("/hp", "wf #2 x", l, map[string]string{"p.md": "/d/p.md"}, "/d/t.mjs", []string{"X=3"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Argv, []string{"/hp", "wrap", "--agent", "pi", "--label", "wf #2 x", "--no-resume", "--", "/n", "@/d/p.md", "/d/t.mjs"}) ||
		!slices.Equal(got.Env, []string{"A=1", "B=2", "X=3"}) || got.Dir != "/w" {
		t.Fatalf("%+v", got)
	}
	if _, err := paneCommand("/hp", "", l, nil, "/d/t.mjs", nil); err == nil {
		t.Fatal("a file that was not written")
	}
	if _, err := paneCommand("/hp", "", l, map[string]string{"p.md": "/d/p.md"}, "", nil); err == nil {
		t.Fatal("no bridge client")
	}
}

// Herdr 0.9 drops events for a reader it finds slow and says only that it
// did (events_lost); it replays nothing. A pane closed meanwhile is found
// by reading it back: the handoff hands back closed, instead of waiting
// for an event that will never come.
func TestAPaneClosedWhileEventsWereLostHandsBack(t *testing.T) {
	r := newRig(t)
	r.s.SetProtocol(herdrtest.Protocol22)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	r.s.StallEvents()
	if err := r.client.PaneClose(context.Background(), pane); err != nil {
		t.Fatal(err)
	}
	r.s.LoseEvents()
	if hb := x.wait(t); hb.Reason != control.HandbackClosed || !hb.Transferred {
		t.Fatalf("handback %+v, want closed", hb)
	}
	r.nothingLeft()
}

// Cancelled during the launch in a workspace it opened: the placement is
// undone whole, and the ledger forgets the workspace too, not only the
// handoff's tab (a record of a closed workspace would send the run's next
// handoff, and herdr-pi close, after it).
func TestCancelDuringLaunchInAWorkspaceForgetsItWhole(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{Place: string(handoff.ModeWorkspace)})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	var recs []handoff.Record
	r.s.WaitFor(t, long, "the records", func() bool { recs, _ = handoff.LedgerAt(r.runtime).List(); return len(recs) == 2 })
	if recs[0].Kind != "workspace" || recs[1].Kind != "tab" {
		t.Fatalf("records while launching: %+v", recs)
	}
	x.cancel()
	if hb := x.wait(t); hb.Reason != control.HandbackAborted || hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	if p := slices.Index(r.s.Methods(), "workspace.close"); p < 0 {
		t.Fatalf("the workspace was not closed: %q", r.s.Methods())
	}
	if recs, _ := handoff.LedgerAt(r.runtime).List(); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

// A launch that arrives with its turn cut (NeedsContinue) asks the owner
// to continue when the pane's Pi never took the turn up; once the pane
// worked, the turn was taken up and the owner does not continue.
func TestACutTurnNeedsContinueUntilThePaneWorks(t *testing.T) {
	for _, worked := range []bool{false, true} {
		r := newRig(t)
		r.o.launch.NeedsContinue = true
		x := r.ask(control.HandoffAsk{})
		r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
		pane := r.s.Inputs()[0].PaneID
		w := r.startPaneWrapper(pane)
		x.next(t, control.ProgressLaunched)
		if worked {
			r.report(pane, "working")
			x.next(t, control.ProgressWorking)
			w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
			r.report(pane, "idle")
		} else {
			// At rest, then gone: the person quit without a turn.
			r.report(pane, "idle")
			r.release(pane)
		}
		if hb := x.wait(t); hb.NeedsContinue == worked || !hb.Transferred {
			t.Fatalf("worked %v: handback %+v", worked, hb)
		}
	}
}

// A wrapper that is quitting takes no new handoff: `open` hears why,
// and the owner's menu is refused, rather than a handoff that is given
// back before it starts.
func TestAClosingServiceRefusesNewHandoffs(t *testing.T) {
	r := newRig(t)
	r.svc.Close()
	if _, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid}, nil); !errors.Is(err, ErrClosing) {
		t.Fatalf("a handoff asked of a closing wrapper: %v", err)
	}
	if len(r.o.handbacksSoFar()) != 0 || len(r.s.Inputs()) != 0 {
		t.Fatalf("a closing wrapper started a handoff: handbacks %+v, inputs %+v", r.o.handbacksSoFar(), r.s.Inputs())
	}
}

// A cancel names its handoff and comes on the link of the owner that
// ordered it: another owner's link cannot end it.
func TestACancelFromAnotherOwnerIsIgnored(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	other := &fakeOwner{pid: 5151, done: make(chan struct{})}
	r.svc.ownerEvent(other, control.HandoffCancel{ID: "h1", Reason: "not yours"})
	select {
	case <-x.done:
		t.Fatalf("another owner's cancel ended the handoff: %+v, %v", x.final, x.err)
	case <-time.After(300 * time.Millisecond):
	}
	r.svc.ownerEvent(r.o, control.HandoffCancel{ID: "h1", Reason: "run cancelled"})
	if hb := x.wait(t); hb.Reason != control.HandbackAborted || !strings.Contains(hb.Error, "run cancelled") || hb.ErrorCode != control.CodeCancelled {
		t.Fatalf("the owner's own cancel: %+v", hb)
	}
}

// A second ask for an attempt handed off to a tab of its own (not a turn
// of fully inspectable mode) follows that handoff to its handback, as for
// a split: it is not answered by focusing the tab.
func TestASecondAskFollowsAHandoffInATab(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{Place: string(handoff.ModeTab)})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	y := r.ask(control.HandoffAsk{})
	if p := y.next(t, control.ProgressLaunched); p.PaneID != pane || p.Handoff != "h1" {
		t.Fatalf("the second ask heard %+v", p)
	}
	r.report(pane, "idle")
	r.release(pane)
	a, b := x.wait(t), y.wait(t)
	if a.Handoff != "h1" || b.Handoff != "h1" || b.Reason != control.HandbackExited {
		t.Fatalf("two asks: %+v and %+v", a, b)
	}
}

// An owner that goes away before the turn boundary suspended nothing:
// nothing is handed back to it, and the asker hears it aborted.
func TestOwnerGoneBeforeTheBoundaryHandsNothingBack(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	close(r.o.done)
	hb := x.wait(t)
	if hb.Reason != control.HandbackAborted || hb.Transferred || !hb.OwnerGone || !strings.Contains(hb.Error, control.ErrOwnerGone.Error()) || hb.ErrorCode != control.CodeOwnerGone {
		t.Fatalf("handback %+v", hb)
	}
	if got := r.o.handbacksSoFar(); len(got) != 0 {
		t.Fatalf("a gone owner was handed %+v", got)
	}
}

// The same, when the owner's end reaches the order's wait as the run's
// context cancelled, before the link's own word: still nothing is handed
// back (old: 'a gone owner was handed [{Reason:aborted …}]', one run in 20
// under load, the two ways racing).
func TestOwnerGoneHeardByContextHandsNothingBack(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary, r.o.goneByContext = true, true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	close(r.o.done)
	hb := x.wait(t)
	if hb.Reason != control.HandbackAborted || hb.Transferred || !hb.OwnerGone || !strings.Contains(hb.Error, control.ErrOwnerGone.Error()) || hb.ErrorCode != control.CodeOwnerGone {
		t.Fatalf("handback %+v", hb)
	}
	if got := r.o.handbacksSoFar(); len(got) != 0 {
		t.Fatalf("a gone owner was handed %+v", got)
	}
}

// Without Herdr's events, a pane's Pi that exits while its pane stays open
// (a failed Pi holds the pane until Enter) is heard by asking: once an
// agent was seen, Herdr answering that the pane has none any more (its
// wrapper released it) is the exit.
func TestWithoutEventsAReleasedAgentHandsBackExited(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Herdr = func(s string) Herdr { return noEvents{Client{herdr.NewClient(s)}} } })
	x := r.ask(control.HandoffAsk{Hold: true})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	r.release(pane)
	if hb := x.wait(t); hb.Reason != control.HandbackExited || !hb.Transferred {
		t.Fatalf("handback %+v, want exited", hb)
	}
}

// In the engine's fully inspectable mode a handoff asked with no place
// goes to the run's workspace, where the run's turns are, not to a split.
// The mode is the one Config.Place says at the handoff: the engine's
// status from the owner's start (mode off here) has no say.
func TestFullyInspectableModeHandsOffToTheRunsWorkspace(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Place = func() (handoff.Mode, error) { return handoff.ModeWorkspace, nil } })
	r.svc.ownerEvent(r.o, control.EngineStatus{Registered: true, FullyInspectable: false})
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	if m := r.s.Methods(); !slices.Contains(m, "workspace.create") || slices.Contains(m, "pane.split") {
		t.Fatalf("placed by %q, want the run's workspace", m)
	}
	x.cancel()
	x.wait(t)
}

// idleHandbackWith hands off with the pane's wrapper naming agent as its Pi, and
// brings the pane's Pi through a turn: working, then idle.
func (r *rig) idleHandbackWith(agent *agentProc, x *asked) string {
	r.t.Helper()
	r.s.WaitFor(r.t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane, agent.pid)
	if l := x.next(r.t, control.ProgressLaunched); l.AgentPID != agent.pid {
		r.t.Fatalf("launched %+v, want agent pid %d", l, agent.pid)
	}
	r.report(pane, "working")
	x.next(r.t, control.ProgressWorking)
	w.set(func(st *control.Status) { st.Runs, st.LastStopReason = 1, "stop" })
	r.report(pane, "idle")
	return pane
}

var paneCloseFails = herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.close"},
	Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom"}}}

// Herdr fails to close the pane at an idle handback, and the pane's Pi
// shrugs off a hangup and a terminate: it is killed before the owner hears
// of the handback (two Pis never write the session file at once). The
// pane stays in the ledger, so `herdr-pi close` closes it later.
func TestAPaneThatDoesNotCloseHasItsPiStoppedBeforeTheHandback(t *testing.T) {
	defer func(g time.Duration) { signalGrace = g }(signalGrace)
	signalGrace = time.Second // the Pi ignores two signals: no need to wait long on them
	r := newRig(t)
	agent := startAgent(t, "HUP TERM")
	var runningAtHandback []bool
	r.o.atHandback = func(control.Handback) { runningAtHandback = append(runningAtHandback, agent.running()) }
	r.s.SetFault(paneCloseFails)
	x := r.ask(control.HandoffAsk{})
	pane := r.idleHandbackWith(agent, x)
	hb := x.wait(t)
	if hb.Reason != control.HandbackIdle || !hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	if !slices.Equal(runningAtHandback, []bool{false}) {
		t.Fatalf("the pane's Pi ran when the owner got its handback: %v", runningAtHandback)
	}
	if _, ok := r.s.Exited(pane); ok {
		t.Fatal("the pane closed although pane.close failed")
	}
	r.s.SetFault(herdrtest.Fault{})
	recs, err := handoff.LedgerAt(r.runtime).List()
	if err != nil || len(recs) != 1 || recs[0].Thing() != "pane "+pane {
		t.Fatalf("the ledger after a failed close: %+v %v", recs, err)
	}
	closed, failed := handoff.CloseRun(context.Background(), handoff.LedgerAt(r.runtime), func(s string) handoff.Herdr { return herdr.NewClient(s) }, recs, long)
	if len(failed) != 0 || len(closed) == 0 || closed[0] != (handoff.Closed{Kind: "pane", ID: pane, How: "closed"}) {
		t.Fatalf("close: %+v, failed %+v", closed, failed)
	}
	r.s.WaitExited(t, pane, long)
}

// When the pane's Pi may still run — Herdr did not close the pane, and the
// Pi cannot be signalled from here (its pid is not pinned to the pane's
// wrapper, as in another pid namespace) — the handback fails and tells
// the owner not to reopen the session; the pane stays in the ledger.
func TestAPiThatMayStillRunFailsTheHandback(t *testing.T) {
	defer func(g time.Duration) { closeGrace = g }(closeGrace)
	closeGrace = time.Second
	r := newRig(t)
	r.s.SetFault(paneCloseFails)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	w := r.startPaneWrapper(pane) // its agent, 777, is not its child: it goes by the wrapper, which runs on
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	w.set(func(st *control.Status) { st.Runs = 1 })
	r.report(pane, "idle")
	hb := x.wait(t)
	if hb.Reason != control.HandbackFailed || !hb.Transferred || !strings.Contains(hb.Error, "herdr-pi close r1") || hb.ErrorCode != control.CodePaneStillRunning {
		t.Fatalf("handback %+v, want failed, code %s", hb, control.CodePaneStillRunning)
	}
	if got := r.o.handbacksSoFar(); len(got) != 1 || !got[0].PaneRunning || got[0].Reason != control.HandbackFailed {
		t.Fatalf("the owner got %+v, want a failed handback that says the pane's Pi may run", got)
	}
	if recs, err := handoff.LedgerAt(r.runtime).List(); err != nil || len(recs) != 1 || recs[0].Thing() != "pane "+pane {
		t.Fatalf("the ledger: %+v %v", recs, err)
	}
}

// Herdr goes away while the pane works: no event will come, but the pane's
// Pi exits (its pty is gone), which ends the handoff as exited, promptly.
// Herdr's socket is gone, and the pane with it: nothing is kept for close.
func TestThePanesPiExitingEndsTheHandoffWithoutHerdr(t *testing.T) {
	r := newRig(t)
	agent := startAgent(t, "")
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane, agent.pid)
	x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	r.s.Close()
	if err := unix.PidfdSendSignal(agent.fd, unix.SIGHUP, nil, 0); err != nil {
		t.Fatal(err)
	}
	hb := x.wait(t)
	if hb.Reason != control.HandbackExited || !hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	// Herdr could not close the pane: it stays known to herdr-pi close,
	// for a Herdr that comes back with it (see
	// TestAPaneHerdrWasGoneToCloseIsClosedOnceHerdrIsBack).
	if recs, err := handoff.LedgerAt(r.runtime).List(); err != nil || len(recs) != 1 || recs[0].Thing() != "pane "+pane {
		t.Fatalf("the ledger: %+v %v", recs, err)
	}
}

// A place that cannot be read at the handoff (the engine's settings file
// broken since the owner started) refuses the handoff with its error,
// before the owner is asked: nothing is cut, nothing opens. The menu's
// request is refused the same way; a place the asker chose is taken
// without asking.
func TestAPlaceThatCannotBeReadRefusesTheHandoff(t *testing.T) {
	bad := errors.New("the workflow settings: /x/settings.json: not valid JSON")
	asked := 0
	r := newRig(t, func(c *Config) {
		c.Place = func() (handoff.Mode, error) { asked++; return "", bad }
	})
	if _, err := r.svc.Handoff(context.Background(), control.HandoffAsk{RunID: "r1", SessionID: "s1", OwnerPID: r.o.pid}, nil); !errors.Is(err, bad) {
		t.Fatalf("open's ask: %v, want the settings error", err)
	}
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r7", RunID: "r1", SessionID: "s1"})
	r.o.mu.Lock()
	refused := slices.Clone(r.o.refused)
	r.o.mu.Unlock()
	if !slices.Equal(refused, []string{"r7: " + bad.Error()}) {
		t.Fatalf("the menu's request: refused %q", refused)
	}
	if m := r.s.Methods(); slices.ContainsFunc(m, func(x string) bool { return x != "ping" && x != "events.subscribe" }) || len(r.o.handbacksSoFar()) != 0 || asked != 2 {
		t.Fatalf("Herdr was asked %q, the owner got %+v, the place was read %d times", m, r.o.handbacksSoFar(), asked)
	}
	x := r.ask(control.HandoffAsk{Place: string(handoff.ModeSplit)})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	x.cancel()
	x.wait(t)
	if asked != 2 {
		t.Fatalf("the place was read for an ask that chose it")
	}
}

// A pane's Pi that ignores its pane's close (the hangup it got from its
// pty, and a terminate after) holds the handback until it is gone; the
// wait is not silent: the asker hears "stopping" (the pane, the Pi's pid)
// and the owner's status line the same, before the handback. The hangup
// is not sent again (the close gave it one): terminate comes first, then
// kill.
func TestAPiThatIgnoresTheCloseIsStoppedAndTheWaitIsSaid(t *testing.T) {
	defer func(c, g time.Duration) { closeGrace, signalGrace = c, g }(closeGrace, signalGrace)
	closeGrace, signalGrace = 2*time.Second, time.Second // the Pi ignores what it is sent: no need to wait long on it
	var mu sync.Mutex
	var logged []string
	r := newRig(t, func(c *Config) {
		c.Logf = func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(f, a...))
			t.Logf(f, a...)
		}
	})
	agent := startAgent(t, "HUP TERM")
	var runningAtHandback []bool
	r.o.atHandback = func(control.Handback) { runningAtHandback = append(runningAtHandback, agent.running()) }
	x := r.ask(control.HandoffAsk{})
	pane := r.idleHandbackWith(agent, x)
	stopping := x.next(t, control.ProgressStopping)
	if stopping.PaneID != pane || stopping.AgentPID != agent.pid {
		t.Fatalf("stopping %+v, want pane %s and the Pi's pid %d", stopping, pane, agent.pid)
	}
	hb := x.wait(t)
	if hb.Reason != control.HandbackIdle || !hb.Transferred || hb.Error != "" || !slices.Equal(runningAtHandback, []bool{false}) {
		t.Fatalf("handback %+v; the Pi ran at the handback: %v", hb, runningAtHandback)
	}
	r.o.mu.Lock()
	states := slices.Clone(r.o.states)
	r.o.mu.Unlock()
	if len(states) == 0 || states[len(states)-1] != control.PaneStopping {
		t.Fatalf("the owner's pane states %q, want %q last before the handback", states, control.PaneStopping)
	}
	mu.Lock()
	defer mu.Unlock()
	var sent []string
	for _, l := range logged {
		if _, sig, ok := strings.Cut(l, "sending "); ok {
			sent = append(sent, sig)
		}
	}
	if !slices.Equal(sent, []string{"terminated", "killed"}) {
		t.Fatalf("signals sent %q, want terminate then kill (the close hung it up already)", sent)
	}
}

// A handoff given up while its pane starts, in the run's workspace it
// made, that an open of the same run has joined meanwhile (it found the
// workspace in the ledger and added its tab): only the handoff's own tab
// closes. The workspace, the other tab and the workspace's record stay,
// as open's own interrupt leaves a joined workspace.
func TestCancelDuringLaunchLeavesAJoinedWorkspace(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{Place: string(handoff.ModeWorkspace)})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	var recs []handoff.Record
	r.s.WaitFor(t, long, "the records", func() bool { recs, _ = handoff.LedgerAt(r.runtime).List(); return len(recs) == 2 })
	ws := recs[0].ID
	other, _, err := r.client.TabCreate(context.Background(), ws, herdr.NewPlace{Label: "#2 other (inspect)"})
	if err != nil {
		t.Fatal(err)
	}
	x.cancel()
	if hb := x.wait(t); hb.Reason != control.HandbackAborted || hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
	m := r.s.Methods()
	if slices.Contains(m, "workspace.close") || !slices.Contains(m, "tab.close") {
		t.Fatalf("calls %q: the joined workspace %s (with tab %s) was closed, or the handoff's tab was not", m, ws, other.TabID)
	}
	left, _ := handoff.LedgerAt(r.runtime).List()
	if len(left) != 1 || left[0].Kind != "workspace" || left[0].ID != ws {
		t.Fatalf("records left: %+v, want the workspace's", left)
	}
}

// The pane cannot be given its command and Herdr refuses to close it
// again: the handoff fails, and the pane it leaves open is in the ledger,
// so `herdr-pi close` closes it once Herdr answers.
func TestAPaneLeftOpenByAFailedPlacementIsInTheLedger(t *testing.T) {
	r := newRig(t)
	r.s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.send_input", "pane.close"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom"}}})
	x := r.ask(control.HandoffAsk{})
	hb := x.wait(t)
	recs, err := handoff.LedgerAt(r.runtime).List()
	if err != nil || len(recs) != 1 || recs[0].Kind != "pane" {
		t.Fatalf("the ledger after a failed placement: %+v %v (handback %+v; calls %v): herdr-pi close cannot find the pane", recs, err, hb, r.s.Methods())
	}
	if !strings.Contains(hb.Error, "herdr-pi close") {
		t.Fatalf("handback %+v, want it to say herdr-pi close closes the pane", hb)
	}
	r.s.SetFault(herdrtest.Fault{})
	closed, failed := handoff.CloseRun(context.Background(), handoff.LedgerAt(r.runtime), func(s string) handoff.Herdr { return herdr.NewClient(s) }, recs, long)
	if len(failed) != 0 || len(closed) != 1 || closed[0] != (handoff.Closed{Kind: "pane", ID: recs[0].ID, How: "closed"}) {
		t.Fatalf("close: %+v, failed %+v", closed, failed)
	}
}

// Herdr refuses to close the pane at an idle handback; its Pi goes at the
// hangup the wrapper sends. The attempt is back (idle, no error: the
// handback succeeded), and the handback says, to the asker and to the
// owner, which pane stays open in Herdr and that `herdr-pi close` closes
// it: the person learns it without reading the wrapper's log.
func TestAPaneHerdrWillNotCloseIsSaidInTheHandback(t *testing.T) {
	r := newRig(t)
	agent := startAgent(t, "")
	r.s.SetFault(paneCloseFails)
	x := r.ask(control.HandoffAsk{})
	pane := r.idleHandbackWith(agent, x)
	hb := x.wait(t)
	r.s.SetFault(herdrtest.Fault{})
	if hb.Reason != control.HandbackIdle || !hb.Transferred || hb.Error != "" {
		t.Fatalf("handback %+v, want a successful idle handback", hb)
	}
	for who, said := range map[string]string{"the asker": hb.LeftOpen, "the owner": r.o.handbacksSoFar()[0].LeftOpen} {
		if !strings.Contains(said, "pane "+pane) || !strings.Contains(said, "herdr-pi close r1") {
			t.Errorf("%s was told %q of what stays open, want pane %s and herdr-pi close r1", who, said, pane)
		}
	}
	recs, err := handoff.LedgerAt(r.runtime).List()
	if err != nil || len(recs) != 1 || recs[0].Thing() != "pane "+pane {
		t.Fatalf("the ledger: %+v %v", recs, err)
	}
	// The handoff is over, its bridge closed: herdr-pi close closes the
	// pane, and reports nothing of a bridge it had nothing to do with.
	closed, failed := handoff.CloseRun(context.Background(), handoff.LedgerAt(r.runtime), func(s string) handoff.Herdr { return herdr.NewClient(s) }, recs, long)
	if len(failed) != 0 || !slices.Equal(closed, []handoff.Closed{{Kind: "pane", ID: pane, How: "closed"}}) {
		t.Fatalf("close after the handback: %+v, failed %+v; want only pane %s closed", closed, failed, pane)
	}
}

// A second ask follows the handoff the first started (or the owner's menu
// did); when it leaves (Ctrl-C on the second open) nothing is given back:
// the pane goes on for the first. What it hears says so — the handoff
// goes on, in which pane, and how to give it back anyway — rather than
// that the asker "cancelled it", which reads as the attempt given back.
func TestASecondAskThatLeavesHearsTheHandoffGoesOn(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	y := r.ask(control.HandoffAsk{})
	y.next(t, control.ProgressLaunched)
	y.cancel()
	<-y.done
	if y.err == nil || !strings.Contains(y.err.Error(), "goes on") || !strings.Contains(y.err.Error(), "pane "+pane) ||
		!strings.Contains(y.err.Error(), "herdr-pi close r1") {
		t.Fatalf("the second ask, cancelled, heard %+v, %v; want that the handoff goes on in pane %s, and herdr-pi close r1", y.final, y.err, pane)
	}
	if got := r.o.handbacksSoFar(); len(got) != 0 {
		t.Fatalf("the owner got %+v when only a follower left", got)
	}
	r.report(pane, "idle")
	r.release(pane)
	if a := x.wait(t); a.Reason != control.HandbackExited {
		t.Fatalf("the first ask: %+v", a)
	}
}

// A second ask that joins a handoff whose pane has long been working
// hears where the handoff stands — one line: working, in which pane —
// and then each change; not the history replayed from "ordered", which a
// person reads as the attempt being handed off only now, at the end of
// its current turn.
func TestASecondAskHearsWhereTheHandoffStands(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{Label: "herdr-pi open (pid 4711)"})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	launched := x.next(t, control.ProgressLaunched)
	r.report(pane, "working")
	x.next(t, control.ProgressWorking)
	y := r.ask(control.HandoffAsk{})
	var first control.Progress
	select {
	case first = <-y.progress:
	case <-time.After(long):
		t.Fatal("the second ask heard nothing")
	}
	if first.Event != control.ProgressWorking || first.PaneID != pane || first.Handoff != "h1" {
		t.Fatalf("the second ask first heard %+v; want where the handoff stands: working in pane %s", first, pane)
	}
	// Marked as joined, with when it started working, who asked for the
	// handoff, and what launched said (the pane's Pi and command).
	if !first.Joined || first.Since.IsZero() || first.Since.After(time.Now()) || first.AskedBy != "herdr-pi open (pid 4711)" ||
		first.TabID != launched.TabID || first.AgentPID != launched.AgentPID || !slices.Equal(first.Command, launched.Command) || first.Cwd != launched.Cwd {
		t.Fatalf("the second ask first heard %+v; want it joined, since when, asked by herdr-pi open (pid 4711), and what launched said (%+v)", first, launched)
	}
	select {
	case p := <-y.progress:
		t.Fatalf("the second ask then heard %+v, as if it were new", p)
	default:
	}
	r.report(pane, "idle")
	if p := y.next(t, control.ProgressIdle); p.PaneID != pane {
		t.Fatalf("the second ask heard %+v", p)
	}
	x.wait(t)
}

// An open that asks while the attempt's handoff is being handed back (its
// pane closed or closing, the owner reopening its session) asks for a new
// handoff: it waits for the handback, then the owner is ordered again. It
// does not join the ending one, whose replayed history and handback would
// tell it "handed back" without anything handed off.
func TestAnAskDuringAHandbackWaitsAndHandsOffAgain(t *testing.T) {
	r := newRig(t)
	atHandback, release := make(chan struct{}, 1), make(chan struct{})
	r.o.atHandback = func(control.Handback) {
		atHandback <- struct{}{}
		<-release
	}
	x := r.ask(control.HandoffAsk{})
	pane := r.idleHandbackWith(startAgent(t, ""), x)
	select {
	case <-atHandback:
	case <-time.After(long):
		t.Fatal("no handback")
	}
	y := r.ask(control.HandoffAsk{})
	// One that gives up while it waits hears that nothing was handed off.
	z := r.ask(control.HandoffAsk{})
	time.Sleep(100 * time.Millisecond) // y's and z's asks reach the service while h1 is handed back
	z.cancel()
	<-z.done
	if z.err == nil || !strings.Contains(z.err.Error(), "nothing was handed off") {
		t.Fatalf("an ask given up while h1 was handed back heard %+v, %v", z.final, z.err)
	}
	r.o.atHandback = nil
	close(release)
	if a := x.wait(t); a.Handoff != "h1" || a.Reason != control.HandbackIdle {
		t.Fatalf("the first ask: %+v", a)
	}
	// A new handoff: its id is not h1's (the asks that waited each had
	// one reserved, in the order they reached the service).
	if p := y.next(t, control.ProgressOrdered); p.Handoff == "h1" || p.Handoff == "" {
		t.Fatalf("an ask during h1's handback heard ordered of handoff %q: it joined the handoff being handed back (pane %s)", p.Handoff, pane)
	}
}

// The owner's menu asking for the live handoff while the attempt's last
// one is handed back is not dropped either: once that is over the owner
// is ordered again.
func TestAMenuRequestDuringAHandbackHandsOffAgain(t *testing.T) {
	r := newRig(t)
	atHandback, release := make(chan struct{}, 1), make(chan struct{})
	r.o.atHandback = func(control.Handback) {
		atHandback <- struct{}{}
		<-release
	}
	x := r.ask(control.HandoffAsk{})
	r.idleHandbackWith(startAgent(t, ""), x)
	select {
	case <-atHandback:
	case <-time.After(long):
		t.Fatal("no handback")
	}
	r.o.waitBoundary = true // the new order waits at the owner: no second pane needed
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r5", RunID: "r1", SessionID: "s1", Label: "finder"})
	r.o.atHandback = nil
	close(release)
	x.wait(t)
	r.s.WaitFor(t, long, "the menu's request ordered once the handback is over", func() bool {
		r.svc.mu.Lock()
		defer r.svc.mu.Unlock()
		h := r.svc.running["s1"]
		return h != nil && h.order.Request == "r5"
	})
}

// `herdr-pi close` while a handoff is ordered (the owner holds the order
// until its turn ends, and no pane has opened): the handoff is in the
// ledger from the order on, so close finds it, asks this wrapper to give
// it up, and waits; the order is withdrawn, the attempt stays with its
// owner, and no pane opens when the owner's turn ends.
func TestCloseWhileAHandoffIsOrderedGivesItUpAndNothingOpens(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	var named []string
	files, _ := filepath.Glob(filepath.Join(handoff.LedgerAt(r.runtime).Dir, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), `"r1"`) {
			named = append(named, f)
		}
	}
	if len(named) == 0 {
		t.Fatalf("close would say nothing is open: no ledger file names run r1 while its handoff is ordered (%q)", files)
	}
	ledger := handoff.LedgerAt(r.runtime)
	pending, err := ledger.Pendings()
	if err != nil || len(pending) != 1 || pending[0].Run != "r1" || pending[0].WrapperPID != os.Getpid() || !control.WrapperAlive(pending[0].RunDir, os.Getpid()) || pending[0].RunDir == "" {
		t.Fatalf("pending handoffs: %+v %v", pending, err)
	}
	done, failed := handoff.CancelPending(context.Background(), ledger, pending, long)
	if len(failed) != 0 || len(done) != 1 || done[0].Kind != "handoff" || done[0].How != "given back" {
		t.Fatalf("close: %+v, failed %+v", done, failed)
	}
	close(r.o.boundary) // the owner's turn ends: had the order stood, a pane would open now
	hb := x.wait(t)
	if hb.Reason != control.HandbackAborted || hb.Transferred || !strings.Contains(hb.Error, "herdr-pi close") {
		t.Fatalf("handback %+v", hb)
	}
	if got := r.o.handbacksSoFar(); len(got) != 1 || got[0].Reason != control.HandbackAborted {
		t.Fatalf("the owner got %+v", got)
	}
	if m := r.s.Methods(); slices.Contains(m, "pane.split") {
		t.Fatalf("a pane opened: %q", m)
	}
	r.nothingLeft()
}

// A pending handoff shows that its wrapper runs by the wrapper's own run
// directory, whose lock the wrapper holds until it exits (handoffs end
// before its control socket closes): it makes no run directory of its own
// for that, and close judges it alive (and gone once that lock is free).
func TestAPendingHandoffIsJudgedByTheWrappersOwnRunDirectory(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{})
	x.next(t, control.ProgressOrdered)
	pending, err := handoff.LedgerAt(r.runtime).Pendings()
	if err != nil || len(pending) != 1 || pending[0].RunDir != r.ownDir || !control.WrapperAlive(pending[0].RunDir, pending[0].WrapperPID) {
		t.Fatalf("pending handoffs %+v (%v); want one, judged by the wrapper's own run directory %s", pending, err, r.ownDir)
	}
	dirs, _ := filepath.Glob(filepath.Join(r.runtime, "run-*"))
	if len(dirs) != 1 || dirs[0] != r.ownDir {
		t.Fatalf("run directories while the handoff is pending: %q; want only the wrapper's own %s", dirs, r.ownDir)
	}
	x.cancel()
	<-x.done
	r.nothingLeft()
}

// `herdr-pi close` while a live handoff waits for the attempt's last one
// to be handed back (the owner's menu asked, or another open, while that
// one's pane closed and the owner reopened its session): the waiting ask
// is in the ledger as a pending handoff from the moment it waits, so close
// finds it and gives it up. The menu hears why (its request refused), an
// open hears that close gave it up and nothing was handed off, and once
// the last handoff is back no order goes to the owner and no pane opens.
func TestCloseWhileAHandoffWaitsForTheLastHandbackGivesItUp(t *testing.T) {
	for _, by := range []string{"menu", "open"} {
		t.Run(by, func(t *testing.T) {
			r := newRig(t)
			atHandback, release := make(chan struct{}, 1), make(chan struct{})
			r.o.atHandback = func(control.Handback) {
				atHandback <- struct{}{}
				<-release
			}
			x := r.ask(control.HandoffAsk{})
			var releasing sync.Once
			letGo := func() { releasing.Do(func() { close(release) }) }
			t.Cleanup(letGo) // before x's cleanup waits for it: a failing test does not hang
			r.idleHandbackWith(startAgent(t, ""), x)
			select {
			case <-atHandback:
			case <-time.After(long):
				t.Fatal("no handback")
			}
			var y *asked
			if by == "menu" {
				r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r5", RunID: "r1", SessionID: "s1", Label: "finder"})
			} else {
				y = r.ask(control.HandoffAsk{})
			}
			ledger := handoff.LedgerAt(r.runtime)
			var pending []handoff.Pending
			r.s.WaitFor(t, long, "the waiting ask in the ledger, for close to find", func() bool {
				pending, _ = ledger.Pendings()
				return len(pending) == 1
			})
			if p := pending[0]; p.Run != "r1" || p.Handoff != "h2" || p.RunDir != r.ownDir {
				t.Fatalf("pending %+v", p)
			}
			done, failed := handoff.CancelPending(context.Background(), ledger, pending, long)
			if len(failed) != 0 || len(done) != 1 || done[0] != (handoff.Closed{Kind: "handoff", ID: "h2", How: "given back"}) {
				t.Fatalf("close: %+v, failed %+v", done, failed)
			}
			if by == "menu" {
				r.o.mu.Lock()
				refused := slices.Clone(r.o.refused)
				r.o.mu.Unlock()
				if len(refused) != 1 || !strings.HasPrefix(refused[0], "r5: ") || !strings.Contains(refused[0], "herdr-pi close") {
					t.Fatalf("the menu's request was answered %q; want it refused, saying herdr-pi close gave it up", refused)
				}
			} else {
				<-y.done
				if y.err == nil || !strings.Contains(y.err.Error(), "herdr-pi close") || !strings.Contains(y.err.Error(), "nothing was handed off") {
					t.Fatalf("the waiting open heard %+v, %v", y.final, y.err)
				}
			}
			letGo()
			if a := x.wait(t); a.Handoff != "h1" {
				t.Fatalf("the first ask: %+v", a)
			}
			r.svc.Close()
			if n := len(slices.DeleteFunc(r.s.Methods(), func(m string) bool { return m != "pane.split" })); n != 1 {
				t.Fatalf("panes split %d: a pane opened after close gave the waiting handoff up", n)
			}
			if got := r.o.handbacksSoFar(); len(got) != 1 {
				t.Fatalf("the owner was handed back %+v: a second handoff was ordered", got)
			}
			r.nothingLeft()
		})
	}
}

// A Herdr error can be long (a message of its own, a path, a dump): the
// handback that carries it must still fit the handoff stream's field
// limit, or `open` refuses the handback as too long and the person hears
// nothing of why. What the handback says is clipped, its start (what
// failed, and Herdr's words) kept; so is what stays open when Herdr would
// not close the pane, with the way to close it.
func TestALongHerdrErrorStillReachesTheAsker(t *testing.T) {
	long := strings.Repeat("herdr says no; ", 300)
	fault := func(method string) herdrtest.Fault {
		return herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{method},
			Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": long}}}
	}
	check := func(t *testing.T, hb control.Progress) control.Progress {
		t.Helper()
		b, err := json.Marshal(hb)
		if err != nil {
			t.Fatal(err)
		}
		p, err := control.ParseProgress(b)
		if err != nil {
			t.Fatalf("the asker refuses the handback (%v): error %d bytes, left_open %d bytes", err, len(hb.Error), len(hb.LeftOpen))
		}
		return p
	}
	t.Run("placing the pane", func(t *testing.T) {
		r := newRig(t)
		r.s.SetFault(fault("pane.split"))
		x := r.ask(control.HandoffAsk{})
		hb := check(t, x.wait(t))
		if hb.Reason != control.HandbackFailed || !strings.Contains(hb.Error, "opening a pane") || !strings.Contains(hb.Error, "herdr says no") || hb.ErrorCode != control.CodeHerdr {
			t.Fatalf("handback %+v, want failed, code %s", hb, control.CodeHerdr)
		}
	})
	t.Run("closing the pane", func(t *testing.T) {
		r := newRig(t)
		agent := startAgent(t, "")
		r.s.SetFault(fault("pane.close"))
		x := r.ask(control.HandoffAsk{})
		pane := r.idleHandbackWith(agent, x)
		hb := check(t, x.wait(t))
		r.s.SetFault(herdrtest.Fault{})
		if hb.Reason != control.HandbackIdle || !strings.Contains(hb.LeftOpen, "pane "+pane) || !strings.Contains(hb.LeftOpen, "herdr-pi close r1") {
			t.Fatalf("handback %+v", hb)
		}
	})
}

// refusedSoFar is what the owner's menu was told so far.
func (o *fakeOwner) refusedSoFar() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.refused)
}

// The menu asks for an attempt whose handoff is under way already (open
// took it over, say): the person hears where it is — its pane once there
// is one — rather than nothing at all.
func TestAMenuRequestForAnAttemptUnderWayIsToldWhereItIs(t *testing.T) {
	r := newRig(t)
	r.o.waitBoundary = true
	x := r.ask(control.HandoffAsk{Label: "herdr-pi open (pid 42)"})
	x.next(t, control.ProgressOrdered)
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r9", RunID: "r1", SessionID: "s1", Label: "finder"})
	if got := r.o.refusedSoFar(); len(got) != 1 || !strings.HasPrefix(got[0], "r9: ") ||
		!strings.Contains(got[0], "under way already (h1, asked by herdr-pi open (pid 42))") || !strings.Contains(got[0], "its Herdr pane is opening") {
		t.Fatalf("the menu's request before the pane: the owner was told %q", got)
	}
	close(r.o.boundary)
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	r.startPaneWrapper(pane)
	x.next(t, control.ProgressLaunched)
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r10", RunID: "r1", SessionID: "s1", Label: "finder"})
	if got := r.o.refusedSoFar(); len(got) != 2 || !strings.HasPrefix(got[1], "r10: ") || !strings.Contains(got[1], "runs in Herdr pane "+pane) {
		t.Fatalf("the menu's request with the pane open: the owner was told %q", got)
	}
	if n := len(slices.DeleteFunc(r.s.Methods(), func(m string) bool { return m != "pane.split" })); n != 1 {
		t.Fatalf("%d panes opened for one attempt", n)
	}
	x.cancel()
	x.wait(t)
}

// The pane is closed after it started its command and before its Pi
// started (`herdr-pi close` racing the launch, or the person): the launch
// failed because the pane went, and the handback says so — not that Pi
// did not start within the start timeout, which it never waited out.
func TestAPaneClosedBeforeItsPiStartedIsSaidSo(t *testing.T) {
	r := newRig(t)
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	file := strings.TrimSuffix(strings.TrimPrefix(r.s.Inputs()[0].Text, "exec sh '"), "'")
	r.s.WaitFor(t, long, "the pane to start its command", func() bool { _, err := os.Lstat(file); return errors.Is(err, fs.ErrNotExist) })
	if err := herdr.NewClient(r.s.SocketPath()).PaneClose(t.Context(), pane); err != nil {
		t.Fatal(err)
	}
	hb := x.wait(t)
	if hb.Reason != control.HandbackFailed || hb.Transferred || !strings.Contains(hb.Error, "pane "+pane+" closed before its Pi started") || hb.ErrorCode != control.CodePaneClosed {
		t.Fatalf("handback %+v, want failed: pane %s closed before its Pi started", hb, pane)
	}
	r.nothingLeft()
}

// herdr-pi moved or removed under a running owner (an upgrade that puts
// the new build elsewhere, an uninstall): the pane could not start the
// attempt, so the handoff is refused before the owner is asked or a pane
// opens, in words that name the path and the way out; the owner's
// session is never suspended for a launch that cannot run.
func TestAHerdrPiRemovedSinceTheWrapperStartedRefusesTheHandoff(t *testing.T) {
	var self string
	r := newRig(t, func(c *Config) { self = c.Self })
	if err := os.Remove(self); err != nil {
		t.Fatal(err)
	}
	x := r.ask(control.HandoffAsk{})
	select {
	case <-x.done:
	case <-time.After(long):
		t.Fatalf("the handoff did not end within %v (Herdr was asked %q)", long, r.s.Methods())
	}
	if x.err == nil || !strings.Contains(x.err.Error(), self) || !strings.Contains(x.err.Error(), "restart the owner") {
		t.Fatalf("handoff: %+v, %v; want a refusal naming %s and the restart", x.final, x.err, self)
	}
	if m := r.s.Methods(); slices.ContainsFunc(m, func(x string) bool { return x != "ping" && x != "events.subscribe" }) || len(r.o.handbacksSoFar()) != 0 {
		t.Fatalf("Herdr was asked %q, the owner got %+v", m, r.o.handbacksSoFar())
	}
	r.svc.ownerEvent(r.o, control.HandoffRequest{ID: "r7", RunID: "r1", SessionID: "s1"})
	r.o.mu.Lock()
	refused := slices.Clone(r.o.refused)
	r.o.mu.Unlock()
	if len(refused) != 1 || !strings.Contains(refused[0], self) {
		t.Fatalf("the menu's request: refused %q", refused)
	}
}

// askWithALoadingPi asks for a handoff whose pane's wrapper runs agent, a
// Pi that names no session (one loading a big transcript), and returns the
// asker, the pane and its wrapper. The rig's start timeout is the test's.
func (r *rig) askWithALoadingPi(t *testing.T, agent *agentProc) (*asked, string, *paneWrapper) {
	t.Helper()
	x := r.ask(control.HandoffAsk{})
	r.s.WaitFor(t, long, "the pane's command", func() bool { return len(r.s.Inputs()) == 1 })
	pane := r.s.Inputs()[0].PaneID
	return x, pane, r.startPaneWrapperAs(pane, control.Status{State: "idle", ChildPID: agent.pid})
}

// The pane's Pi runs but names its session only after the start timeout:
// it is still loading the attempt's transcript (a 50 MB one took Pi 1.6.0
// 46 s to load here, on a loaded machine, and the timeout is 60 s). While
// the pane's wrapper answers and its Pi runs, the handoff waits for it
// rather than close the pane under a Pi about to take the attempt over;
// once it names its session the pane is launched.
func TestAPiStillLoadingItsSessionPastTheStartTimeoutIsWaitedFor(t *testing.T) {
	r := newRig(t, func(c *Config) { c.StartTimeout = time.Second })
	agent := startAgent(t, "")
	x, pane, w := r.askWithALoadingPi(t, agent)
	// Asked every 100 ms: forty asks are well past the one-second timeout.
	r.s.WaitFor(t, long, "the start timeout to pass", func() bool { return w.timesAsked() >= 40 || closed(x.done) })
	if closed(x.done) {
		t.Fatalf("the handoff ended while the pane's Pi was still loading: %+v", x.final)
	}
	w.set(func(st *control.Status) { st.SessionFile = sessionFile })
	if l := x.next(t, control.ProgressLaunched); l.PaneID != pane || l.AgentPID != agent.pid {
		t.Fatalf("launched %+v", l)
	}
	if err := unix.PidfdSendSignal(agent.fd, unix.SIGHUP, nil, 0); err != nil {
		t.Fatal(err)
	}
	if hb := x.wait(t); hb.Reason != control.HandbackExited || !hb.Transferred {
		t.Fatalf("handback %+v", hb)
	}
}

// The pane's Pi exits while it is still loading past the start timeout:
// the wait ends at once, the launch failed and says why, and nothing was
// transferred.
func TestAPiThatExitsWhileLoadingEndsTheWait(t *testing.T) {
	var logged strings.Builder
	var logMu sync.Mutex
	r := newRig(t, func(c *Config) {
		c.StartTimeout = time.Second
		c.Logf = func(f string, a ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(&logged, f+"\n", a...)
		}
	})
	agent := startAgent(t, "")
	x, pane, _ := r.askWithALoadingPi(t, agent)
	r.s.WaitFor(t, long, "the wait for the loading Pi", func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Contains(logged.String(), "still loading the attempt's transcript")
	})
	if err := unix.PidfdSendSignal(agent.fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	hb := x.wait(t)
	if hb.Reason != control.HandbackFailed || hb.Transferred || !strings.Contains(hb.Error, "Pi in pane "+pane+" exited before it named its session") || hb.ErrorCode != control.CodePaneFailed {
		t.Fatalf("handback %+v", hb)
	}
}

// The wait for a pane's Pi still loading past the start timeout (up to
// ten minutes) ends at once when the handoff is cancelled, its pane is
// closed or its owner goes: each with its own code, nothing transferred,
// not a timeout the handoff never waited out.
func TestTheWaitForALoadingPiEndsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		end        func(r *rig, x *asked, pane string)
	}{
		{"cancelled", control.CodeCancelled, func(_ *rig, x *asked, _ string) { x.cancel() }},
		{"pane closed", control.CodePaneClosed, func(r *rig, _ *asked, pane string) {
			if err := herdr.NewClient(r.s.SocketPath()).PaneClose(t.Context(), pane); err != nil {
				t.Fatal(err)
			}
		}},
		{"owner gone", control.CodeOwnerGone, func(r *rig, _ *asked, _ string) {
			close(r.o.done)
			r.svc.ownerEvent(r.o, control.OwnerDisconnected{PID: r.o.pid})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.StartTimeout = time.Second })
			agent := startAgent(t, "")
			x, pane, w := r.askWithALoadingPi(t, agent)
			// Asked every 100 ms by the start wait, then once a second:
			// forty asks are past the one-second timeout, in the wait.
			r.s.WaitFor(t, long, "the wait for the loading Pi", func() bool { return w.timesAsked() >= 40 || closed(x.done) })
			if closed(x.done) {
				t.Fatalf("the handoff ended before the wait: %+v", x.final)
			}
			tc.end(r, x, pane)
			hb := x.wait(t)
			if hb.Reason != control.HandbackAborted && hb.Reason != control.HandbackFailed || hb.Transferred || hb.ErrorCode != tc.code ||
				strings.Contains(hb.Error, "within") {
				t.Fatalf("handback %+v, want it ended, code %s, no timeout said", hb, tc.code)
			}
		})
	}
}

// A pane's Pi that still runs when the wait for its loading runs out (a
// transcript bigger than ten minutes can load, or a Pi hung while
// loading) is the attempt's transcript's reader, and its writer once it
// loads: the pane closes and the Pi is stopped before the owner gets the
// attempt back, and the handback says it ran on without naming its
// session, not that it surely was loading.
func TestAPiStillRunningWhenTheLoadingWaitRunsOutIsStoppedBeforeTheHandback(t *testing.T) {
	defer func(l, c, g time.Duration) { loadingFor, closeGrace, signalGrace = l, c, g }(loadingFor, closeGrace, signalGrace)
	loadingFor, closeGrace, signalGrace = 2*time.Second, time.Second, time.Second
	r := newRig(t, func(c *Config) { c.StartTimeout = time.Second })
	agent := startAgent(t, "HUP") // the pane's close does not stop it
	var runningAtHandback []bool
	r.o.atHandback = func(control.Handback) { runningAtHandback = append(runningAtHandback, agent.running()) }
	x, pane, _ := r.askWithALoadingPi(t, agent)
	hb := x.wait(t)
	if hb.Reason != control.HandbackFailed || hb.Transferred || hb.ErrorCode != control.CodeStartTimeout ||
		!strings.Contains(hb.Error, "Pi in pane "+pane+" still ran but did not name its session within") || !strings.Contains(hb.Error, "or it hangs") {
		t.Fatalf("handback %+v, want failed, %s, the Pi still ran", hb, control.CodeStartTimeout)
	}
	if slices.Contains(runningAtHandback, true) {
		t.Fatalf("the pane's Pi ran when the owner got its handback: %v", runningAtHandback)
	}
	if agent.running() {
		t.Fatal("the pane's Pi still runs after the handback")
	}
}
