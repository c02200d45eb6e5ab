package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// liveWorld is a live attempt whose owner "runs under herdr-pi wrap": the
// owner Pi is a sleep started by this test process, which plays its
// wrapper — a held run directory, a real control socket registered in the
// pane registry, and a scripted Handoffs behind it. open finds and asks it
// as it would a real wrapper.
type liveWorld struct {
	home, cwd, runtime, run string
	handoffs                *scriptedHandoffs
}

func newLiveWorld(t *testing.T) *liveWorld {
	t.Helper()
	ls := newListStore(t)
	run := ls.runningRun(t)
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	lease := fmt.Sprintf(`{"pid":%d,"token":"t","startedAt":%d}`+"\n", owner.Process.Pid, time.Now().Add(time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(filepath.Dir(run.Dir), store.LeaseFile), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	if a, err := run.PickText("docs"); err != nil || a.Record.Session == nil || a.Record.Session.SessionID == "" {
		t.Fatalf("docs of run %s: %v (it needs a session id)", run.ID, err)
	}
	// A short runtime directory: socket paths are limited to 107 bytes.
	runtime, err := os.MkdirTemp("", "hpl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	w := &liveWorld{home: ls.Home, cwd: ls.Cwd, runtime: runtime, run: run.ID, handoffs: newScriptedHandoffs()}
	base := filepath.Join(runtime, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	if err := control.EnsurePrivateDir(base); err != nil {
		t.Fatal(err)
	}
	held, err := control.NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Remove() })
	ep := control.Endpoint{Socket: filepath.Join(held.Path, "control.sock"), Token: "t0k", PID: os.Getpid(), PaneID: "w1:p1"}
	srv, err := control.Listen(control.Config{Path: ep.Socket, Token: ep.Token, Events: noEvents{}, Requests: noRequests{}, Handoffs: w.handoffs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	unregister, err := control.PaneRegistry(base).Register(control.PaneKey("/h.sock", ep.PaneID), ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	return w
}

// open runs `herdr-pi open <run> docs args…` with stdout going to out. It
// fails the test when open has not returned within a long while (it
// followed a handoff nobody could see), then lets the handoff end so
// nothing is left running.
func (w *liveWorld) open(t *testing.T, out io.Writer, args ...string) (code int, stderr string) {
	t.Helper()
	var errb bytes.Buffer
	env := []string{"HOME=" + w.home, "XDG_CONFIG_HOME=" + w.home + "/.config", "XDG_STATE_HOME=" + w.home + "/.state",
		"XDG_RUNTIME_DIR=" + w.runtime, "HERDR_PI_LOG=off", "TERM=dumb"}
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), append([]string{"herdr-pi", "open", w.run, "docs"}, args...),
			IO{In: strings.NewReader(""), Out: out, Err: &errb, Env: env, Dir: w.cwd})
	}()
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		w.handoffs.endTurn()
		w.handoffs.endPaneTurn()
		<-done
		t.Fatalf("open %q went on following the handoff after its output failed\n%s", args, errb.String())
	}
	return code, errb.String()
}

// scriptedHandoffs plays the owner's wrapper: ordered, then (at endTurn)
// launched and working, then (at endPaneTurn) idle and the idle handback. A cancel from open at any
// point gives the attempt back, as the real wrapper does: aborted,
// transferred once the pane had launched.
type scriptedHandoffs struct {
	release, paneDone chan struct{}
	once, paneOnce    sync.Once
	// focus answers as for an agent of fully inspectable mode: its tab
	// focused, nothing handed off.
	focus bool
	// leftOpen is what the handback says stays open in Herdr.
	leftOpen string
	// joined answers as for an ask that joined a handoff another asked
	// for first: leaving it gives nothing up, and the wrapper says so.
	joined bool
	// refuse, when set, answers the order as the owner's wrapper does when
	// the owner no longer runs the attempt, after running (the attempt
	// settles meanwhile, say).
	refuse func() error
	// ownerCancels: the owner gives the order up before the turn
	// boundary, with these words.
	ownerCancels string
	// endedMeanwhile: the handoff ends by itself (its pane's Pi went idle)
	// as open leaves it, so the answer is that handback, not open's.
	endedMeanwhile bool
	// follower answers as the owner's wrapper does an ask that joins a
	// handoff whose pane has been working since workingSince: where it
	// stands first (joined), then its changes (at endPaneTurn, idle and
	// the handback).
	follower     bool
	workingSince time.Time
	// Set on the server's goroutine; read once open returned, which the
	// race detector cannot see through the socket.
	mu       sync.Mutex
	launched bool
	cause    error // why the handoff was given up; nil when it ran to its handback
}

func newScriptedHandoffs() *scriptedHandoffs {
	return &scriptedHandoffs{release: make(chan struct{}), paneDone: make(chan struct{})}
}

// endTurn lets the attempt's turn end: the pane launches.
func (h *scriptedHandoffs) endTurn() { h.once.Do(func() { close(h.release) }) }

// endPaneTurn lets the pane's turn end: it goes idle and hands back.
func (h *scriptedHandoffs) endPaneTurn() { h.paneOnce.Do(func() { close(h.paneDone) }) }

// outcome is whether a pane launched and why the handoff was given up.
func (h *scriptedHandoffs) outcome() (launched bool, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.launched, h.cause
}

func (h *scriptedHandoffs) Handoff(ctx context.Context, ask control.HandoffAsk, progress func(control.Progress)) (control.Progress, error) {
	launched := false
	given := func() (control.Progress, error) {
		if h.endedMeanwhile {
			return control.Progress{Event: control.ProgressHandback, Reason: control.HandbackIdle, Transferred: launched, LastStopReason: "stop", RunID: ask.RunID, Handoff: "h1"}, nil
		}
		if h.joined {
			// The words of the owner's wrapper (handoff/live) to a follower
			// that leaves: the handoff goes on.
			return control.Progress{}, fmt.Errorf("stopped following handoff h1, which goes on for the owner's /workflow menu that asked for it first (no pane has opened yet); herdr-pi close %s gives the attempt back now", ask.RunID)
		}
		h.mu.Lock()
		h.cause = context.Cause(ctx)
		h.mu.Unlock()
		return control.Progress{Event: control.ProgressHandback, Reason: control.HandbackAborted, Transferred: launched,
			NeedsContinue: launched, Continued: launched}, nil
	}
	if h.focus {
		return control.Progress{Event: control.ProgressFocused, PaneID: "w2:p1", TabID: "w2:t2", WorkspaceID: "w2"}, nil
	}
	if h.follower {
		progress(control.Progress{Event: control.ProgressWorking, RunID: ask.RunID, Label: "docs", Handoff: "h1", PaneID: "w1:p2", AgentPID: 4242,
			Joined: true, Since: h.workingSince, AskedBy: "herdr-pi open (pid 4711)"})
		select {
		case <-ctx.Done():
			return control.Progress{}, fmt.Errorf("stopped following handoff h1, which goes on for herdr-pi open (pid 4711) that asked for it first (pane w1:p2 runs the attempt); herdr-pi close %s gives the attempt back now", ask.RunID)
		case <-h.paneDone:
		}
		progress(control.Progress{Event: control.ProgressIdle, RunID: ask.RunID, Label: "docs", Handoff: "h1", PaneID: "w1:p2"})
		return control.Progress{Event: control.ProgressHandback, Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop",
			RunID: ask.RunID, Label: "docs", Handoff: "h1"}, nil
	}
	progress(control.Progress{Event: control.ProgressOrdered, RunID: ask.RunID, Label: "docs", Handoff: "h1"})
	if h.refuse != nil {
		return control.Progress{}, h.refuse()
	}
	if h.ownerCancels != "" {
		return control.Progress{Event: control.ProgressHandback, Reason: control.HandbackAborted, RunID: ask.RunID, Handoff: "h1",
			Error: (&control.HandoffCancelled{Reason: h.ownerCancels}).Error()}, nil
	}
	// The turn ends when the test says so, or never: a cancel must end it.
	select {
	case <-ctx.Done():
		return given()
	case <-h.release:
	}
	launched = true
	h.mu.Lock()
	h.launched = true
	h.mu.Unlock()
	progress(control.Progress{Event: control.ProgressLaunched, PaneID: "w1:p2", AgentPID: 4242})
	progress(control.Progress{Event: control.ProgressWorking, PaneID: "w1:p2"})
	select {
	case <-ctx.Done():
		return given()
	case <-h.paneDone:
	}
	progress(control.Progress{Event: control.ProgressIdle, PaneID: "w1:p2"})
	return control.Progress{Event: control.ProgressHandback, Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop", LeftOpen: h.leftOpen,
		RunID: ask.RunID, Handoff: "h1"}, nil
}

type noEvents struct{}

func (noEvents) ProbeEvent(control.Event) {}

type noRequests struct{}

func (noRequests) Wait(control.WaitRequest) error { return errors.New("no waits here") }
func (noRequests) Status() control.Status         { return control.Status{} }

// failingAfter takes n writes, then fails every one as a terminal that
// went away does.
type failingAfter struct {
	n     int
	wrote bytes.Buffer
}

var errTerminalGone = &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EIO}

func (w *failingAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errTerminalGone
	}
	w.n--
	return w.wrote.Write(p)
}

// The harness itself: with its output written, open follows the scripted
// handoff to its handback and exits 0.
func TestOpenLiveFollowsTheHandoffToItsHandback(t *testing.T) {
	w := newLiveWorld(t)
	w.handoffs.endTurn()
	w.handoffs.endPaneTurn()
	var out bytes.Buffer
	code, stderr := w.open(t, &out, "--json")
	if _, cause := w.handoffs.outcome(); code != exitOK || strings.Count(out.String(), "\n") != 5 || !strings.Contains(out.String(), `"reason":"idle"`) || cause != nil {
		t.Fatalf("exit %d, cause %v\n%s%s", code, cause, out.String(), stderr)
	}
}

// open's lines about a live handoff are what the person follows it by:
// when they cannot be written (a full disk, a terminal gone) nobody sees
// the handoff, so open gives it up as on a hangup — the wrapper gives the
// attempt back to its owner (before any pane opened, if the first line
// already failed) — and exits 1 naming the write error, rather than follow
// a handoff nobody sees and exit 0.
func TestOpenLiveGivesTheHandoffUpWhenItsLinesCannotBeWritten(t *testing.T) {
	for _, c := range []struct {
		name     string
		json     bool
		written  int // lines written before the failure
		launched bool
	}{
		{"text, /dev/full", false, 0, false},
		{"json, /dev/full", true, 0, false},
		{"text, the terminal gone after the first line", false, 1, true},
		{"json, the terminal gone after the first line", true, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newLiveWorld(t)
			var out io.Writer = devFull(t)
			want := "no space left on device"
			if c.written > 0 {
				// The turn ends once the first line is out: the failure
				// then comes with the pane's launch.
				out = &releasing{w: &failingAfter{n: c.written}, after: map[int]func(){1: w.handoffs.endTurn}}
				want = errTerminalGone.Error()
			}
			var args []string
			if c.json {
				args = append(args, "--json")
			}
			code, stderr := w.open(t, out, args...)
			launched, cause := w.handoffs.outcome()
			if code != exitError || !strings.Contains(stderr, want) || !strings.Contains(stderr, "gave the attempt back") ||
				!errors.Is(cause, control.ErrAskerGone) || launched != c.launched {
				t.Fatalf("exit %d; the wrapper's handoff launched %v, given up for %v; stderr:\n%s\nwant exit %d, the write error and the attempt given back",
					code, launched, cause, stderr, exitError)
			}
		})
	}
}

// An open that joined a handoff another asked for first (the owner's menu,
// another open) gives nothing up when its lines cannot be written: it only
// stops following, the handoff goes on, and open must not claim it gave
// the handoff up or that the attempt is on its way back.
func TestOpenLiveThatJoinedAHandoffDoesNotClaimToGiveItUp(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		w := newLiveWorld(t)
		w.handoffs.joined = true
		var args []string
		if asJSON {
			args = append(args, "--json")
		}
		code, stderr := w.open(t, devFull(t), args...)
		if code != exitError || !strings.Contains(stderr, "no space left on device") || strings.Contains(stderr, "gave the handoff up") ||
			strings.Contains(stderr, "gave it up") || strings.Contains(stderr, "gave the attempt back") || !strings.Contains(stderr, "goes on") ||
			!strings.Contains(stderr, "herdr-pi close") {
			t.Fatalf("--json %v: exit %d; stderr:\n%s\nwant exit 1, the write error, and that the handoff it joined goes on (herdr-pi close gives it back), not that open gave it up", asJSON, code, stderr)
		}
	}
}

// When the handoff ends by itself (its pane's Pi went idle) just as open,
// unable to write its lines, leaves it, the handback is not open's doing:
// open must not say it gave the handoff up; it says how it ended.
func TestOpenLiveWhoseHandoffEndedMeanwhileDoesNotClaimToGiveItUp(t *testing.T) {
	w := newLiveWorld(t)
	w.handoffs.endedMeanwhile = true
	code, stderr := w.open(t, devFull(t))
	if code != exitError || !strings.Contains(stderr, "no space left on device") || strings.Contains(stderr, "gave it up") ||
		strings.Contains(stderr, "gave the handoff up") || !strings.Contains(stderr, "idle") {
		t.Fatalf("exit %d; stderr:\n%s\nwant exit 1, the write error and the handback as it was (idle), not that open gave the handoff up", code, stderr)
	}
}

// The handback line is open's result: when it cannot be written, open
// exits 1 with the write error, after a handback that went as usual. So
// is the line saying an agent's tab was focused.
func TestOpenLiveHandbackThatCannotBeWrittenFails(t *testing.T) {
	w := newLiveWorld(t)
	// ordered, launched, working and idle go through.
	out := &releasing{w: &failingAfter{n: 4}, after: map[int]func(){1: w.handoffs.endTurn, 3: w.handoffs.endPaneTurn}}
	code, stderr := w.open(t, out, "--json")
	if launched, cause := w.handoffs.outcome(); code != exitError || !launched || cause != nil ||
		!strings.Contains(stderr, "(handed back: ") || !strings.Contains(stderr, errTerminalGone.Error()) {
		t.Fatalf("exit %d, launched %v, given up for %v; stderr:\n%s", code, launched, cause, stderr)
	}
	// The one line on an agent of fully inspectable mode: its tab focused.
	w = newLiveWorld(t)
	w.handoffs.focus = true
	code, stderr = w.open(t, devFull(t))
	if code != exitError || !strings.Contains(stderr, "focused it") || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("the focused line > /dev/full: exit %d; stderr:\n%s", code, stderr)
	}
}

// releasing moves the scripted handoff on as lines are written: after
// the nth write that went through it calls after[n].
type releasing struct {
	w     *failingAfter
	after map[int]func()
	n     int
}

func (r *releasing) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err == nil {
		r.n++
		if f := r.after[r.n]; f != nil {
			f()
		}
	}
	return n, err
}

// A handback after which Herdr would not close the pane succeeded (exit
// 0, nothing on stderr), and its line says what stays open and how to
// close it: the person learns it from open, not from the wrapper's log.
// With --json the handback line carries it as left_open, in the schema.
func TestOpenLiveSaysWhatAHandbackLeftOpen(t *testing.T) {
	const left = "pane w1:p2 stays open in Herdr (boom): herdr-pi close 3f0c closes it"
	schema := compileSchema(t, "open")
	for _, asJSON := range []bool{false, true} {
		w := newLiveWorld(t)
		w.handoffs.leftOpen = left
		w.handoffs.endTurn()
		w.handoffs.endPaneTurn()
		var out bytes.Buffer
		var args []string
		if asJSON {
			args = append(args, "--json")
		}
		code, stderr := w.open(t, &out, args...)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		if code != exitOK || stderr != "" || !strings.Contains(last, left) {
			t.Fatalf("--json %v: exit %d, last line %q, stderr %q; want exit 0 and the handback saying %q", asJSON, code, last, stderr, left)
		}
		if asJSON {
			validate(t, schema, last)
			if !strings.Contains(last, `"left_open":`) || strings.Contains(last, `"error"`) {
				t.Fatalf("the handback line %s: want left_open, and no error", last)
			}
		}
	}
}

// The attempt finishes between open's look at the store and its owner's
// answer (a race of a few milliseconds: open read the store as the engine
// wrote it): the owner says it runs no such attempt. open says what
// happened in the person's terms — the attempt finished meanwhile — and
// how to open it now, not only the owner's words about a session id.
func TestOpenLiveOnAnAttemptThatFinishedMeanwhileSaysHowToOpenIt(t *testing.T) {
	w := newLiveWorld(t)
	st := store.New(w.home, w.cwd)
	w.handoffs.refuse = func() error {
		r, err := st.FindRun(w.run)
		if err != nil {
			return err
		}
		path := filepath.Join(r.Dir, "state.json")
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			return err
		}
		for _, ag := range rec["agents"].([]any) {
			ag.(map[string]any)["state"] = "completed"
		}
		b, _ = json.Marshal(rec)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		return errors.New("the workflow owner refused the handoff: no live attempt with session s1 in this workflow owner (pid 42)")
	}
	code, stderr := w.open(t, io.Discard)
	for _, want := range []string{"docs#1", "finished while open asked its owner for it", "herdr-pi open " + w.run[:8] + " 'docs#1'"} {
		if code != exitError || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stderr does not say %q:\n%s", code, want, stderr)
		}
	}
}

// The owner gives the order up before the attempt's turn boundary (its
// run cancelled): nothing was handed off. open's last line says so — in
// words "not handed off", with --json the handback (aborted, not
// transferred, with its error_code, also from a wrapper older than
// error_code, as this fake is) and nothing after it — stderr says where to
// look, and open exits 1, not 0 as after a handback.
func TestOpenLiveOrderTheOwnerGaveUpIsNoHandback(t *testing.T) {
	schema := compileSchema(t, "open")
	for _, asJSON := range []bool{false, true} {
		w := newLiveWorld(t)
		w.handoffs.ownerCancels = "the workflow run was cancelled"
		var out bytes.Buffer
		var args []string
		if asJSON {
			args = append(args, "--json")
		}
		code, stderr := w.open(t, &out, args...)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		last := lines[len(lines)-1]
		want := "not handed off: the workflow owner cancelled the handoff: the workflow run was cancelled"
		if asJSON {
			validate(t, schema, last)
			want = `"reason":"aborted"`
			if !strings.Contains(last, `"error_code":"cancelled"`) {
				t.Fatalf("the handback line %s has no error_code cancelled", last)
			}
		}
		if code != exitError || !strings.Contains(last, want) || strings.Contains(last, "handed back") ||
			!strings.Contains(stderr, "docs#1: nothing was handed off") || !strings.Contains(stderr, "herdr-pi open --list "+w.run[:8]) {
			t.Fatalf("--json %v: exit %d, last line %q, stderr %q", asJSON, code, last, stderr)
		}
	}
}

// An open that joins a handoff whose pane has long been working (asked
// for by another open, or the owner's menu) says where it stands — whose
// handoff it follows, the pane, working since when — and then each
// change; not "handing off … at the end of its current turn", which
// reads as the handoff starting now. --json says the same: its first line
// is that state, marked joined, with since and asked_by.
func TestOpenLiveThatJoinsAHandoffSaysWhereItStands(t *testing.T) {
	since := time.Now().Add(-7 * time.Minute)
	t.Run("text", func(t *testing.T) {
		w := newLiveWorld(t)
		w.handoffs.follower, w.handoffs.workingSince = true, since
		w.handoffs.endPaneTurn()
		var out bytes.Buffer
		code, stderr := w.open(t, &out)
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		first := lines[0]
		for _, want := range []string{"following handoff h1", "asked for by herdr-pi open (pid 4711)", "docs#1 runs in pane w1:p2: working for 7m", "(since "} {
			if !strings.Contains(first, want) {
				t.Errorf("open's first line %q does not say %q", first, want)
			}
		}
		if code != exitOK || len(lines) != 3 || strings.Contains(out.String(), "handing off") || lines[1] != "pane w1:p2: idle" || !strings.HasPrefix(lines[2], "handed back: ") {
			t.Fatalf("exit %d\n%s%s\nwant where the handoff stands, then idle and the handback", code, out.String(), stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		w := newLiveWorld(t)
		w.handoffs.follower, w.handoffs.workingSince = true, since
		w.handoffs.endPaneTurn()
		var out bytes.Buffer
		code, stderr := w.open(t, &out, "--json")
		schema := compileSchema(t, "open")
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		for _, l := range lines {
			validate(t, schema, l)
		}
		var first struct {
			Event, PaneID string
			Joined        bool
			Since         time.Time
			AskedBy       string `json:"asked_by"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || code != exitOK || len(lines) != 3 {
			t.Fatalf("exit %d (%v)\n%s%s", code, err, out.String(), stderr)
		}
		if first.Event != "working" || !first.Joined || !first.Since.Equal(since) || first.AskedBy != "herdr-pi open (pid 4711)" {
			t.Fatalf("first line %s; want working, joined, since %v, asked_by herdr-pi open (pid 4711)", lines[0], since)
		}
	})
}
