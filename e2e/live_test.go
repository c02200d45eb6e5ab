package e2e

import (
	"bytes"
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/internal/procstat"
)

// These tests run the live handoff whole: a real workflow owner (Pi 1.6.0
// with the real engine, pi-extensible-workflows 5.7.0) under the real
// `herdr-pi wrap` in a pty, whose workflow agent has an owner-only custom
// tool; `herdr-pi open` as a process, or the owner's /workflow menu,
// asks for the handoff; the attempt continues in a real pane of the fake
// Herdr (a tmux pane) under `herdr-pi wrap` with a real Pi 1.6.0, the fake
// model scripting every turn.

// The texts the fake model keys on.
const (
	lvOwnerPrompt = "RUN-FLOW"
	lvTask        = "TASK-LOOKUP find the word"
	lvTask2       = "TASK-SEEK find another word"
	lvFlow        = "live-flow"
	lvLabel       = "finder"
	lvLabel2      = "seeker"
	lvPaneReply   = "pane: the word is beta"
	lvLocalReply  = "local: finished after the handback"
	lvInPane      = "Carry on with the workflow task from where this session stopped"
	lvBackHome    = "Carry on with the task from where the session now stands"
	lvStop        = "STOP-RUN"
)

// A guard against hangs on a loaded machine, not a measurement.
const lvLong = 3 * time.Minute

// liveRig is one owner set-up: the fake model and Herdr, the person's
// private directories, the owner under herdr-pi wrap.
type liveRig struct {
	*openRig
	t      *testing.T
	engine string
	llm    *fakellm.Server
	s      *herdrtest.Server
	owner  *pitest.Term

	toolLog, gate string
	// paneHangs makes the model never answer the pane's Pi; paneTool makes
	// the pane's Pi call the bridged tool first.
	paneHangs, paneTool bool
	// two runs a flow of two agents in parallel, both gated.
	two bool
	// outside starts the owner outside Herdr: a plain terminal whose
	// environment names Herdr's socket but no pane (not a complete Herdr
	// environment).
	outside bool
	// stopRun is the run the owner's model stops when asked to (lvStop).
	stopRun atomic.Value
	// lifeLog, when set, is where every agent session's lifecycle is
	// logged (owner-tool.mjs, HERDR_PI_TEST_LIFE_LOG).
	lifeLog string
	// ownerPi, when set, is the Pi entry the owner is started from
	// (else the test's Pi).
	ownerPi string
	// retried fails the finder's first model request with a provider
	// error (failed is set then).
	retried bool
	failed  atomic.Bool
	// more, when set, answers a request first (ok false: the usual
	// answers below).
	more func(req fakellm.Request) (r fakellm.Reply, ok bool)
	// ownerArgs are added to the owner Pi's command line (a restarted
	// owner's --continue, say).
	ownerArgs []string
	// ownerAsks, when set, is what the owner asks the person as it starts,
	// before its session starts: launchOwner returns once it shows.
	ownerAsks string
}

func newLiveRig(t *testing.T, configure ...func(*liveRig)) *liveRig {
	t.Helper()
	pi := pitest.Current(t)
	lr := &liveRig{t: t, engine: storetest.Engine(t), paneTool: true}
	for _, c := range configure {
		c(lr)
	}
	lr.llm = fakellm.Start(lr.respond)
	t.Cleanup(lr.llm.Close)
	agent := pitest.NewAgent(t, pi, lr.llm.BaseURL())
	// Node writes its compile cache into the test's temporary directory
	// when a Pi exits, which may be while the directory is removed.
	t.Setenv("NODE_DISABLE_COMPILE_CACHE", "1")
	lr.openRig = newOpenRig(t, agent)
	lr.toolLog = filepath.Join(agent.Home, "tool.log")
	lr.gate = filepath.Join(agent.Home, "gate")
	return lr
}

func (lr *liveRig) flowScript() string {
	if lr.two {
		return fmt.Sprintf(`const [a, b] = await Promise.all([agent(%q, { label: %q }), agent(%q, { label: %q })]); return a + " | " + b;`,
			lvTask, lvLabel, lvTask2, lvLabel2)
	}
	return fmt.Sprintf(`return await agent(%q, { label: %q });`, lvTask, lvLabel)
}

// respond plays the model for the owner, the workflow agents, the pane's
// Pi and the owner's local continuation, by their last user message.
func (lr *liveRig) respond(req fakellm.Request) fakellm.Reply {
	if lr.more != nil {
		if r, ok := lr.more(req); ok {
			return r
		}
	}
	u := req.LastUser()
	switch {
	case u == lvOwnerPrompt && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow", Args: map[string]any{"name": lvFlow, "script": lr.flowScript()}}}
	case u == lvOwnerPrompt:
		return fakellm.Reply{Text: "owner: the flow runs"}
	case lr.retried && strings.Contains(u, lvTask) && lr.failed.CompareAndSwap(false, true):
		return fakellm.Reply{Status: 400, Text: "the first attempt's model refuses the request"}
	case (strings.Contains(u, lvTask) || strings.Contains(u, lvTask2)) && !req.AnsweredTool():
		q := "alpha"
		if strings.Contains(u, lvTask2) {
			q = "gamma"
		}
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "herdr_lookup", Args: map[string]any{"query": q, "mode": "gate"}}}
	case strings.Contains(u, lvTask) || strings.Contains(u, lvTask2):
		return fakellm.Reply{Text: "agent: finished locally"}
	case strings.Contains(u, lvInPane) && lr.paneHangs:
		return fakellm.Reply{Hang: true}
	case strings.Contains(u, lvInPane) && lr.paneTool && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "herdr_lookup", Args: map[string]any{"query": "beta"}}}
	case strings.Contains(u, lvInPane):
		// Streamed a word at a time, as a model does: the pane's Pi works
		// long enough for its reports to say so.
		return fakellm.Reply{Text: lvPaneReply, WordDelay: 40 * time.Millisecond}
	case strings.Contains(u, lvBackHome):
		return fakellm.Reply{Text: lvLocalReply}
	case u == lvStop && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow_stop", Args: map[string]any{"runId": lr.stopRun.Load()}}}
	}
	return fakellm.Reply{Text: "owner: noted"}
}

// startOwner starts the fake Herdr (the owner's pane is w1:p1, wider than
// tall) and the owner under herdr-pi wrap, runs the flow and returns once
// every agent's first tool call holds its turn open at the gate.
func (lr *liveRig) startOwner() {
	lr.t.Helper()
	lr.launchOwner()
	lr.runFlow()
}

// runFlow has the owner run the flow and returns once every agent's
// first tool call holds its turn open at the gate.
func (lr *liveRig) runFlow() {
	t := lr.t
	t.Helper()
	lr.owner.Type(t, lvOwnerPrompt)
	want := []string{"start alpha gate"}
	if lr.two {
		want = append(want, "start gamma gate")
	}
	lvWait(t, "the agents' tool calls", func() bool {
		lines := lr.toolLines()
		return !slices.ContainsFunc(want, func(w string) bool {
			return !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) })
		})
	})
}

// launchOwner starts the fake Herdr (the owner's pane is w1:p1, wider than
// tall) and the owner under herdr-pi wrap, and returns once its probe has
// heard the session start.
func (lr *liveRig) launchOwner() {
	t := lr.t
	t.Helper()
	// A restarted owner runs in the Herdr of the first.
	if lr.s == nil {
		lr.s = lr.herdr(t, 200, 50)
		t.Cleanup(lr.logPanes)
	}
	tool, err := filepath.Abs(filepath.Join("owner", "testdata", "owner-tool.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	pi := lr.agent.Pi.Bin
	if lr.ownerPi != "" {
		pi = lr.ownerPi
	}
	argv := append([]string{lr.hp, "wrap", pi, "-e", lr.engine, "-e", tool}, lr.ownerArgs...)
	env := lr.env(lr.s)
	if lr.outside {
		env = append(lr.env(nil), "HERDR_SOCKET_PATH="+lr.s.SocketPath())
	}
	env = append(env, "HERDR_PI_TEST_TOOL_LOG="+lr.toolLog, "HERDR_PI_TEST_GATE="+lr.gate)
	if lr.lifeLog != "" {
		env = append(env, "HERDR_PI_TEST_LIFE_LOG="+lr.lifeLog)
	}
	env = append(env, "NODE_DISABLE_COMPILE_CACHE=1")
	starts := lr.sessionStarts()
	// After the owner's wrapper is closed (below), its Pi goes too, before
	// the test's directories are removed.
	t.Cleanup(lr.killOwnerPi)
	lr.owner = pitest.StartTerm(t, argv, env, lr.agent.Project, 40, 120)
	t.Cleanup(lr.owner.Close)
	lr.owner.WaitFor(t, "the owner's editor", lvLong, func(s string) bool { return strings.Count(s, "────────") >= 2 })
	if lr.ownerAsks != "" {
		// The owner's start waits for the person first (the engine's
		// question about an interrupted run, say): the test answers it.
		lr.owner.WaitText(t, lr.ownerAsks, lvLong)
		return
	}
	lvWait(t, "the owner's probe to hear session_start", func() bool { return lr.sessionStarts() > starts })
}

// logPanes logs, when the test failed, what the handoffs' panes reported
// and herdr-pi's log.
func (lr *liveRig) logPanes() {
	t := lr.t
	if !t.Failed() {
		return
	}
	for _, p := range []string{"w1:p2", "w1:p3", "w2:p1", "w2:p2"} {
		if calls := lr.s.Reports(p); len(calls) > 0 {
			var st []string
			for _, c := range calls {
				st = append(st, fmt.Sprintf("%s(%v)", c.State, c.Accepted))
			}
			t.Logf("pane %s reported %s", p, strings.Join(st, " "))
		}
	}
	if b, err := os.ReadFile(filepath.Join(lr.private, "herdr-pi", "herdr-pi.log")); err == nil {
		t.Logf("herdr-pi.log:\n%s", b)
	}
}

func (lr *liveRig) sessionStarts() int {
	b, _ := os.ReadFile(filepath.Join(lr.private, "herdr-pi", "herdr-pi.log"))
	return strings.Count(string(b), "probe: session_start (")
}

func (lr *liveRig) toolLines() []string {
	b, _ := os.ReadFile(lr.toolLog)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (lr *liveRig) openGate() {
	lr.t.Helper()
	if err := os.WriteFile(lr.gate, nil, 0o600); err != nil {
		lr.t.Fatal(err)
	}
}

func lvWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(lvLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, lvLong)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lvState is the part of the engine's state.json these tests read.
type lvState struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Agents []struct {
		Label          string `json:"label"`
		AttemptDetails []struct {
			Session struct {
				SessionID string `json:"sessionId"`
				Locator   struct {
					SessionFile string `json:"sessionFile"`
				} `json:"locator"`
			} `json:"session"`
			Setup struct {
				Model struct {
					Provider string `json:"provider"`
					Model    string `json:"model"`
					Thinking string `json:"thinking"`
				} `json:"model"`
				Tools []string `json:"tools"`
				Cwd   string   `json:"cwd"`
			} `json:"setup"`
		} `json:"attemptDetails"`
	} `json:"agents"`
	dir string
}

// run reads the one run of the store. The engine replaces a run's
// directory whole (written as runs/.<id>.<pid>.<random>.tmp, then
// renamed), so for a moment there may be no run directory, or only the
// temporary one, which is never read: run waits that moment out.
func (lr *liveRig) run() *lvState {
	lr.t.Helper()
	var paths []string
	var b []byte
	lvWait(lr.t, "the run's state.json", func() bool {
		all, _ := filepath.Glob(filepath.Join(lr.agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", "*", "state.json"))
		paths = slices.DeleteFunc(all, func(p string) bool { return strings.HasPrefix(filepath.Base(filepath.Dir(p)), ".") })
		if len(paths) > 1 {
			lr.t.Fatalf("state.json: found %q", paths)
		}
		if len(paths) == 0 {
			return false
		}
		var err error
		b, err = os.ReadFile(paths[0])
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			lr.t.Fatal(err)
		}
		return err == nil
	})
	st := &lvState{dir: filepath.Dir(paths[0])}
	if err := json.Unmarshal(b, st); err != nil {
		lr.t.Fatal(err)
	}
	return st
}

// sessionFile is the transcript of the agent labelled label.
func (st *lvState) sessionFile(t *testing.T, label string) string {
	t.Helper()
	for _, a := range st.Agents {
		if a.Label == label && len(a.AttemptDetails) > 0 {
			return a.AttemptDetails[len(a.AttemptDetails)-1].Session.Locator.SessionFile
		}
	}
	t.Fatalf("run %s has no agent %s", st.ID, label)
	return ""
}

// result waits until the run completed and returns its result.
func (lr *liveRig) result() string {
	lr.t.Helper()
	var st *lvState
	lvWait(lr.t, "the run to end", func() bool {
		st = lr.run()
		return st.State == "completed" || st.State == "failed" || st.State == "stopped"
	})
	b, err := os.ReadFile(filepath.Join(st.dir, "result.json"))
	if err != nil {
		lr.t.Fatalf("run %s ended %s without a result: %v", st.ID, st.State, err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		lr.t.Fatalf("result.json (%s): %v\n%s", st.State, err, b)
	}
	return s
}

func lvTranscript(t *testing.T, path string) []pitest.Message { return pitest.Transcript(t, path) }

// lvLine is one line of `open --json` on a live attempt.
type lvLine struct {
	Format         string   `json:"format"`
	Attempt        string   `json:"attempt"`
	Event          string   `json:"event"`
	Run            string   `json:"run"`
	Handoff        string   `json:"handoff"`
	PaneID         string   `json:"pane_id"`
	TabID          string   `json:"tab_id"`
	WorkspaceID    string   `json:"workspace_id"`
	Command        []string `json:"command"`
	Env            []string `json:"env"`
	Cwd            string   `json:"cwd"`
	AgentPID       int      `json:"agent_pid"`
	Reason         string   `json:"reason"`
	Transferred    bool     `json:"transferred"`
	LastStopReason string   `json:"last_stop_reason"`
	NeedsContinue  bool     `json:"needs_continue"`
	Continued      bool     `json:"continued"`
	Error          string   `json:"error"`
	ErrorCode      string   `json:"error_code"`
	LeftOpen       string   `json:"left_open"`
	OwnerGone      bool     `json:"owner_gone"`
}

// lines decodes what a running open has printed so far, each line
// checked against docs/open.schema.json.
func (ro *runningOpen) lines(t *testing.T) []lvLine {
	t.Helper()
	var out []lvLine
	schema := docSchema(t, "open")
	for _, l := range strings.Split(strings.TrimSpace(ro.out.String()), "\n") {
		if l == "" {
			continue
		}
		validateJSON(t, schema, []byte(l))
		var x lvLine
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("open --json printed %q: %v", l, err)
		}
		out = append(out, x)
	}
	return out
}

func events(ls []lvLine) string {
	var e []string
	for _, l := range ls {
		e = append(e, l.Event)
	}
	return strings.Join(e, " ")
}

// waitEvent waits until open printed a line with event.
func (ro *runningOpen) waitEvent(t *testing.T, event string) lvLine {
	t.Helper()
	var found lvLine
	lvWait(t, "open's "+event+" line", func() bool {
		ro.running(t)
		for _, l := range ro.lines(t) {
			if l.Event == event {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// handOff starts `herdr-pi open <run> <attempt> --json args…`, checks the
// order is held while the turn still runs (no pane yet), opens the gate
// and returns open with its launched line.
func (lr *liveRig) handOff(attempt string, args ...string) (*runningOpen, lvLine) {
	t := lr.t
	t.Helper()
	st := lr.run()
	ro := lr.start(t, lr.s, nil, append([]string{st.ID, attempt, "--json"}, args...)...)
	ordered := ro.waitEvent(t, "ordered")
	if ordered.Format != "herdr-pi.open-live/1" || ordered.Run != st.ID || ordered.Handoff == "" {
		t.Fatalf("the ordered line: %+v", ordered)
	}
	lr.owner.WaitText(t, attempt+": handing off at the end of this turn", lvLong)
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") || slices.Contains(m, "tab.create") {
		t.Fatalf("a pane opened before the turn ended: %q", m)
	}
	lr.openGate()
	return ro, ro.waitEvent(t, "launched")
}

// runtimeFiles lists what is left under the private runtime directory
// other than directories.
func (lr *liveRig) runtimeFiles() []string {
	var left []string
	root := filepath.Join(lr.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// wantPrivate fails the test unless everything under the private runtime
// directory is private: directories 0700, files and sockets 0600, nothing
// else (a symlink, say).
func (lr *liveRig) wantPrivate() {
	lr.t.Helper()
	root := filepath.Join(lr.private, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed as the walk went
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		m := fi.Mode()
		switch {
		case m.IsDir() && m.Perm() == 0o700:
		case (m.IsRegular() || m&fs.ModeSocket != 0) && m.Perm() == 0o600:
		default:
			lr.t.Errorf("not private in the runtime directory: %s (%v)", p, m)
		}
		return nil
	})
}

// wantOnly fails the test unless the files under the private runtime
// directory come back to want (given lvLong: a wrapper Herdr just closed
// may still be removing its own).
func (lr *liveRig) wantOnly(want []string) {
	lr.t.Helper()
	deadline := time.Now().Add(lvLong)
	for {
		got := lr.runtimeFiles()
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			lr.t.Fatalf("the runtime directory holds %q after %v, want %q as before the handoff", got, lvLong, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantNothingLeft fails the test unless the private runtime directory
// empties.
func (lr *liveRig) wantNothingLeft() {
	lr.t.Helper()
	lr.wantLeft("nothing", func(left []string) bool { return len(left) == 0 })
}

// wantLeft fails the test unless what is left in the private runtime
// directory comes to be what (as ok has it): a wrapper Herdr just closed,
// or one that lost Herdr, may still be removing its socket and
// registration as the test looks, so it is given lvLong to finish.
func (lr *liveRig) wantLeft(what string, ok func(left []string) bool) {
	lr.t.Helper()
	deadline := time.Now().Add(lvLong)
	for {
		left := lr.runtimeFiles()
		if ok(left) {
			return
		}
		if time.Now().After(deadline) {
			lr.t.Fatalf("left in the runtime directory after %v: %q, want %s", lvLong, left, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quitOwner quits the owner's Pi and waits for its wrapper to end.
func (lr *liveRig) quitOwner() {
	lr.t.Helper()
	// The /workflow menu can reopen by itself after an action later than
	// leaveMenu looked (a loaded machine) and swallow the keys: leave it
	// again and type again until the command shows in the editor.
	for try := 0; ; try++ {
		if try == 5 {
			lr.t.Fatalf("typed /quit %d times, it never showed up; screen:\n%s", try, lr.owner.Screen())
		}
		lr.leaveMenu()
		before := strings.Count(lr.owner.Screen(), "/quit")
		if err := lr.owner.Send("/quit"); err != nil {
			lr.t.Fatal(err)
		}
		echoed := false
		for deadline := time.Now().Add(5 * time.Second); !echoed && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			echoed = strings.Count(lr.owner.Screen(), "/quit") > before
		}
		if echoed {
			break
		}
	}
	// Enter as a key of its own (pi-agent.md §4.3).
	time.Sleep(50 * time.Millisecond)
	if err := lr.owner.Send("\r"); err != nil {
		lr.t.Fatal(err)
	}
	if code, err := lr.owner.ExitCode(lvLong); err != nil || code != 0 {
		lr.t.Fatalf("the owner ended %d (%v):\n%s", code, err, lr.owner.Screen())
	}
}

// leaveMenu closes the owner's /workflow menu, if open, and returns once
// the editor shows.
func (lr *liveRig) leaveMenu() {
	lr.t.Helper()
	// The /workflow menu may still be open (it reopens after an action);
	// the editor flashes between its screens, so it must stay a moment.
	for i := 0; ; i++ {
		if i == 20 {
			lr.t.Fatalf("the menu does not close:\n%s", lr.owner.Screen())
		}
		if s := lr.owner.Screen(); lvMenuHint(s) == "" && lvEditorShown(s) {
			time.Sleep(300 * time.Millisecond)
			if s := lr.owner.Screen(); lvMenuHint(s) == "" && lvEditorShown(s) {
				break
			}
			continue
		}
		if lvMenuHint(lr.owner.Screen()) != "" {
			lvSend(lr.t, lr.owner, lvEsc)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestLiveHandoffFromOpen is the acceptance: `herdr-pi open` from another
// pane hands the live attempt off at its turn boundary; the pane's Pi
// calls the owner-only tool, which runs in the owner (one update, one
// result) and answers the pane's Pi; after the reply the pane goes idle
// after working, the owner resumes the same session file with the pane's
// turn in it and the workflow completes with the pane's reply; nothing is
// left in the runtime directory.
func TestLiveHandoffFromOpen(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	before := lvTranscript(t, lr.run().sessionFile(t, lvLabel))
	ro, launched := lr.handOff(lvLabel)
	if launched.PaneID != "w1:p2" || launched.Cwd != lr.agent.Project || launched.AgentPID == 0 ||
		len(launched.Command) < 6 || launched.Command[0] != lr.hp || launched.Command[1] != "wrap" {
		t.Fatalf("launched %+v", launched)
	}
	split := lvCalls(lr.s, "pane.split")
	if len(split) != 1 || paramsOf(t, split[0])["target_pane_id"] != "w1:p1" || paramsOf(t, split[0])["direction"] != "right" {
		t.Fatalf("pane.split %v", split)
	}
	in := lr.s.Inputs()
	if len(in) != 1 || len(in[0].Text) > 200 || !strings.HasPrefix(in[0].Text, "exec sh '") {
		t.Fatalf("typed into the pane: %+v", in)
	}
	// The pane is named for the attempt, as the engine's own transport
	// names its agent: workflow, number and label.
	md := lvCalls(lr.s, "pane.report_metadata")
	if len(md) != 1 || paramsOf(t, md[0])["pane_id"] != "w1:p2" || !strings.HasPrefix(paramsOf(t, md[0])["title"].(string), lvFlow+" #") ||
		!strings.HasSuffix(paramsOf(t, md[0])["title"].(string), " "+lvLabel) {
		t.Fatalf("pane.report_metadata %v", md)
	}

	res := ro.wait(t)
	ls := ro.lines(t)
	if res.code != 0 || events(ls) != "ordered launched working idle handback" {
		t.Fatalf("exit %d, events %q\n%s%s", res.code, events(ls), res.stdout, res.stderr)
	}
	hb := ls[len(ls)-1]
	if hb.Reason != "idle" || !hb.Transferred || hb.NeedsContinue || hb.Continued || hb.LastStopReason != "stop" || hb.Error != "" {
		t.Fatalf("handback %+v", hb)
	}
	// The bridged tool ran once in the owner, with one update, and its
	// result reached the pane's Pi (it went on to the reply).
	lines := lr.toolLines()
	if strings.Count(strings.Join(lines, "\n"), "start beta") != 1 || !slices.Contains(lines, "end beta") {
		t.Fatalf("tool log %q", lines)
	}
	if !slices.ContainsFunc(lr.llm.Requests(), func(r fakellm.Request) bool {
		return strings.Contains(r.LastUser(), lvInPane) && r.AnsweredTool() && slices.ContainsFunc(r.Messages, func(m fakellm.Message) bool {
			return strings.Contains(m.Text, "answer for beta")
		})
	}) {
		t.Fatal("the pane's Pi never sent the bridged tool's result to its model")
	}
	// The owner resumed the same file, with the pane's turn in it, and the
	// workflow completed with the pane's reply.
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
	after := lvTranscript(t, lr.run().sessionFile(t, lvLabel))
	if len(after) <= len(before) || after[len(after)-1].Text != lvPaneReply ||
		!slices.ContainsFunc(after[len(before):], func(e pitest.Message) bool { return slices.Contains(e.ToolCalls, "herdr_lookup") }) {
		t.Fatalf("the session file should hold the pane's turn: %+v", after[len(before):])
	}
	// Each tool call, the local agent's and the pane's, has the engine's
	// timing entry, as the engine gives every local agent session: the
	// pane's Pi ran the engine's tool-timing extension too.
	calls := 0
	for _, e := range after {
		calls += len(slices.DeleteFunc(slices.Clone(e.ToolCalls), func(n string) bool { return n != "herdr_lookup" }))
	}
	timed := slices.DeleteFunc(pitest.ToolTimings(t, lr.run().sessionFile(t, lvLabel)), func(e pitest.ToolTiming) bool { return e.ToolName != "herdr_lookup" || e.IsError })
	if calls < 2 || len(timed) != calls {
		t.Fatalf("%d herdr_lookup calls in the session file, %d timing entries for them: %+v", calls, len(timed), timed)
	}
	// The pane was closed once (idle handback), and everything is gone.
	if ex := lr.s.WaitExited(t, "w1:p2", 30*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	if c := lvCalls(lr.s, "pane.close"); len(c) != 1 {
		t.Fatalf("pane.close calls %d", len(c))
	}
	lr.owner.WaitFor(t, "the status line to clear", lvLong, func(s string) bool { return !strings.Contains(s, lvLabel+": ") })
	lr.quitOwner()
	lr.wantNothingLeft()
}

// An owner under herdr-pi wrap outside Herdr (a plain terminal; its
// environment names Herdr's socket, but no pane). The probe is not inert
// there, unlike the engine's own Herdr extension (docs/open.md, "An owner
// outside Herdr"): the /workflow menu shows neither of herdr-pi's actions
// and nothing reaches Herdr while the run works, until `herdr-pi open`
// from a Herdr pane asks — then the attempt is handed off beside that
// pane and back, and the workflow completes with the pane's reply.
func TestLiveHandoffToAnOwnerOutsideHerdr(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.outside = true })
	lr.startOwner()
	if list := lvActionList(lvAgentActions(t, lr.owner)); lvCount(list, "Open live session in Herdr pane")+lvCount(list, "Open session in Herdr pane") != 0 {
		t.Fatalf("outside Herdr the running agent's actions %q show herdr-pi's", list)
	}
	lr.leaveMenu()
	if m := lr.s.Methods(); len(m) != 0 {
		t.Fatalf("outside Herdr, before any open, Herdr was sent %q", m)
	}
	ro, launched := lr.handOff(lvLabel)
	if launched.PaneID != "w1:p2" {
		t.Fatalf("launched %+v", launched)
	}
	if split := lvCalls(lr.s, "pane.split"); len(split) != 1 || paramsOf(t, split[0])["target_pane_id"] != "w1:p1" {
		t.Fatalf("pane.split %v: want a split of open's pane", split)
	}
	res := ro.wait(t)
	if ls := ro.lines(t); res.code != 0 || events(ls) != "ordered launched working idle handback" || !ls[len(ls)-1].Transferred {
		t.Fatalf("exit %d, events %q\n%s%s", res.code, events(ls), res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
	lr.quitOwner()
}

// Ctrl-C to open while the pane works gives the attempt back at once: the
// pane closes, open says so and exits 130, and the owner continues its
// cut turn locally, where the workflow completes.
func TestLiveHandoffInterruptedOpen(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	if err := ro.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 130 || hb.Event != "handback" || hb.Reason != "aborted" || !hb.Transferred || !strings.Contains(res.stderr, "interrupted") {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if ex := lr.s.WaitExited(t, launched.PaneID, 30*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	if got := lr.result(); got != lvLocalReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, lvLocalReply)
	}
}

// The owner's menu asked to hand off an attempt that open has handed off
// already: the owner shows where it is (its pane, who asked) and its
// status line goes on saying how the pane is doing; nothing else opens,
// and open's handoff carries on to its end (real Pi, real engine).
func TestLiveHandoffMenuOnAnAttemptInAPane(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.owner.WaitText(t, lvLabel+": working", lvLong)
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open live session in Herdr pane") != 1 {
		t.Fatalf("the handed-off agent's actions: %q", list)
	}
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitFor(t, "the owner to say where the attempt is", lvLong, func(s string) bool {
		return strings.Contains(s, "handed off already") && strings.Contains(s, "Herdr pane "+launched.PaneID)
	})
	lr.leaveMenu()
	if scr := lr.owner.Screen(); strings.Contains(scr, lvLabel+": handoff requested") || !strings.Contains(scr, lvLabel+": working") {
		t.Fatalf("the owner's status line:\n%s", scr)
	}
	if n := len(lvCalls(lr.s, "pane.split")); n != 1 {
		t.Fatalf("%d panes split for one attempt", n)
	}
	ro.running(t)
	if err := ro.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if res := ro.wait(t); res.code != 130 {
		t.Fatalf("open: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvLocalReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, lvLocalReply)
	}
}

// The owner's menu on a settled agent offers "Open session in Herdr pane":
// the wrapper opens a read-only fork of its session in a split of the
// owner's pane, as herdr-pi open does.
func TestMenuInspectionOpensAFork(t *testing.T) {
	lr := settledAgentsActions(t)
	lvSend(t, lr.owner, lvEnter)
	lr.s.WaitFor(t, lvLong, "the inspection's pane", func() bool { return len(lr.s.Inputs()) > 0 })
	pane := lr.s.Inputs()[0].PaneID
	waitStates(t, lr.s, pane, "the inspection's Pi at rest", "idle")
	split := lvCalls(lr.s, "pane.split")
	if len(split) != 1 || paramsOf(t, split[0])["target_pane_id"] != "w1:p1" {
		t.Fatalf("pane.split %v", split)
	}
	// The pane's wrapper says which session its Pi writes once Pi started
	// one (its probe's session_start may follow its first report).
	var fork string
	lvWait(t, "the inspection's session", func() bool { fork = paneSession(t, lr.private, lr.s, pane); return fork != "" })
	session := lr.run().sessionFile(t, lvLabel)
	if fork == session {
		t.Fatalf("the inspection's Pi writes %q; want a fork of %s", fork, session)
	}
}

// The menu's "Open session in Herdr pane" on a settled agent whose
// transcript was cut short inside its header (the engine passes that file
// itself): the owner's notice area says Pi cannot fork it, and no pane
// opens, as open refuses it. The menu made a pane in which Pi failed.
func TestMenuInspectionOfATranscriptPiCannotFork(t *testing.T) {
	lr := settledAgentsActions(t)
	session := lr.run().sessionFile(t, lvLabel)
	if err := os.WriteFile(session, []byte(`{"type":"session","version":3,"id":"01a2`), 0o600); err != nil {
		t.Fatal(err)
	}
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitText(t, "Pi cannot fork it", lvLong)
	// Whole, not cut: the transcript's full path is for the log.
	if scr := lr.owner.Screen(); !strings.Contains(scr, "or not Pi's)") {
		t.Fatalf("the notice is cut short:\n%s", scr)
	}
	if split := lvCalls(lr.s, "pane.split"); len(split) != 0 {
		t.Fatalf("a pane was split for a transcript Pi cannot fork: %v\n%s", split, lr.owner.Screen())
	}
}

// settledAgentsActions runs the flow to its end in an owner under
// herdr-pi wrap and opens its agent's actions in the /workflow menu, with
// "Open session in Herdr pane" (and no live action) offered, the one
// Enter chooses.
func settledAgentsActions(t *testing.T) *liveRig {
	t.Helper()
	lr := newLiveRig(t)
	lr.startOwner()
	lr.openGate()
	if got := lr.result(); got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q", got)
	}
	lr.owner.WaitText(t, "owner: noted", lvLong)
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open session in Herdr pane") != 1 || lvCount(list, "Open live session in Herdr pane") != 0 {
		t.Fatalf("the settled agent's actions: %q", list)
	}
	return lr
}

// lvCalls are the fake's requests of one method.
func lvCalls(s *herdrtest.Server, method string) []herdrtest.Request {
	var out []herdrtest.Request
	for _, q := range s.Requests() {
		if q.Method == method {
			out = append(out, q)
		}
	}
	return out
}

// With --hold the pane stays after its turn; what it runs is what the
// engine prepared (the Pi the owner runs, the session, model, tools and
// the continue message; the agent dir; the worktree cwd); /quit in the
// pane hands back as exited.
func TestLiveHandoffQuitInThePane(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel, "--hold")
	st := lr.run()
	checkLaunched(t, lr, st, launched)
	// Held: idle after working does not hand back.
	lvWait(t, "the pane's reply", func() bool {
		es := lvTranscript(t, st.sessionFile(t, lvLabel))
		return es[len(es)-1].Text == lvPaneReply
	})
	lvWait(t, "the pane at rest", func() bool { return strings.HasSuffix(events(ro.lines(t)), "working idle") })
	ro.running(t)
	// Seed: the originating Pi TUI reports the handed-off agent as
	// working, then idle or completed before handback. Held, the pane
	// rests and nothing is handed back, so the owner's status line must
	// say so now; open must still run while it does (a handback shows
	// "idle" too, for a moment, and must not pass for it).
	lr.owner.WaitFor(t, "the owner's status line to say the pane's turn ended", lvLong, func(s string) bool {
		select {
		case <-ro.done:
			t.Fatalf("herdr-pi open ended (%v) before the owner's status line said the held pane's turn ended; owner's screen:\n%s", ro.err, s)
		default:
		}
		return strings.Contains(s, lvLabel+": idle") || strings.Contains(s, lvLabel+": completed")
	})
	ro.running(t)
	waitPiReady(t, lr.private, lr.s, launched.PaneID)
	prompt(t, lr.s, launched.PaneID, "/quit")
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 0 || hb.Event != "handback" || hb.Reason != "exited" || !hb.Transferred || hb.NeedsContinue {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q", got)
	}
}

// checkLaunched compares the pane's Pi process with what the engine
// prepared (state.json) and the owner runs, word for word where the engine
// decides.
func checkLaunched(t *testing.T, lr *liveRig, st *lvState, launched lvLine) {
	t.Helper()
	var setup = st.Agents[0].AttemptDetails[0].Setup
	session := st.sessionFile(t, lvLabel)
	// Pi sets its process title over its argv; the small session leader
	// that herdr-pi wrap runs it under holds the argv and environment it
	// started Pi with ("herdr-pi-leader <path> <argv…>").
	leader := lvParent(t, launched.AgentPID)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", leader))
	if err != nil {
		t.Fatalf("the pane's Pi's leader (pid %d): %v", leader, err)
	}
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(argv) < 3 || argv[0] != "herdr-pi-leader" {
		t.Fatalf("pid %d is not the session leader: %q", leader, argv)
	}
	argv = argv[2:]
	node, _ := filepath.EvalSymlinks(filepath.Join(lr.agent.Pi.NodeDir, "node"))
	entry, _ := filepath.EvalSymlinks(lr.agent.Pi.Bin)
	model := setup.Model.Provider + "/" + setup.Model.Model
	if setup.Model.Thinking != "" {
		model += ":" + setup.Model.Thinking
	}
	tools := append(slices.Clone(setup.Tools), "herdr_lookup")
	after := func(flag string) string {
		for i := 0; i+1 < len(argv); i++ {
			if argv[i] == flag {
				return argv[i+1]
			}
		}
		return ""
	}
	if argv[0] != node || !slices.Contains(argv, entry) || after("--session") != session || after("--model") != model ||
		!sameSet(strings.Split(after("--tools"), ","), tools) || !strings.Contains(argv[len(argv)-1], lvInPane) {
		t.Fatalf("the pane's Pi runs %q\nwant %s %s --session %s --model %s --tools %v … %q", argv, node, entry, session, model, tools, lvInPane)
	}
	// The launched command is herdr-pi wrap around the same words.
	if i := slices.Index(launched.Command, "--"); i < 0 || !slices.Equal(launched.Command[i+1:i+3], []string{node, entry}) ||
		!slices.Equal(launched.Command[i+3:], argv[len(argv)-len(launched.Command[i+3:]):]) {
		t.Fatalf("launched %q, the pane's Pi runs %q", launched.Command, argv)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", leader))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(environ), "\x00"), "PI_CODING_AGENT_DIR="+lr.agent.AgentDir) ||
		!slices.Contains(launched.Env, "PI_CODING_AGENT_DIR="+lr.agent.AgentDir) {
		t.Fatalf("the pane's Pi lacks PI_CODING_AGENT_DIR=%s (launched env %q)", lr.agent.AgentDir, launched.Env)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", launched.AgentPID)); err != nil || cwd != setup.Cwd || launched.Cwd != setup.Cwd {
		t.Fatalf("the pane's Pi runs in %q (%v), launched in %q, the engine prepared %q", cwd, err, launched.Cwd, setup.Cwd)
	}
}

// lvParent is a process's parent.
func lvParent(t *testing.T, pid int) int {
	t.Helper()
	st, err := procstat.Read(pid)
	if err == nil && st.Fields < 2 {
		err = procstat.ErrMalformed
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.PPID
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Closing the pane hands back as closed; the owner goes on (the pane's
// turn had ended) and the workflow completes.
func TestLiveHandoffPaneClosed(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel, "--hold")
	lvWait(t, "the pane at rest", func() bool { return strings.HasSuffix(events(ro.lines(t)), "working idle") })
	if err := herdr.NewClient(lr.s.SocketPath()).PaneClose(t.Context(), launched.PaneID); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 0 || hb.Reason != "closed" || !hb.Transferred {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if c := lvCalls(lr.s, "pane.close"); len(c) != 1 {
		t.Fatalf("pane.close calls %d: the wrapper closed a closed pane", len(c))
	}
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q", got)
	}
}

// Killing the owner's Pi ends the handoff: the wrapper closes the pane
// and open says aborted.
func TestLiveHandoffOwnerKilled(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	owner := lr.ownerPID()
	if err := syscall.Kill(owner, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := lr.run()
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if hb.Event != "handback" || hb.Reason != "aborted" || !hb.Transferred || !hb.OwnerGone {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	// Nobody has the attempt back: not a success, and the way on is said.
	for _, want := range []string{"run " + st.ID[:8] + " attempt " + lvLabel + "#1", "owner Pi (pid " + strconv.Itoa(owner) + ") went away",
		"nobody has the attempt back", "herdr-pi open " + st.ID[:8] + " '" + lvLabel + "#1'"} {
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Fatalf("exit %d, stderr does not say %q:\n%s", res.code, want, res.stderr)
		}
	}
	if ex := lr.s.WaitExited(t, launched.PaneID, 30*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v, not closed", ex)
	}
}

// killOwnerPi SIGKILLs the owner's Pi if it still runs and waits for it
// to be gone.
func (lr *liveRig) killOwnerPi() {
	paths, _ := filepath.Glob(filepath.Join(lr.agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", "owner.json"))
	for _, p := range paths {
		var l struct{ PID int }
		if b, err := os.ReadFile(p); err != nil || json.Unmarshal(b, &l) != nil || l.PID <= 0 {
			continue
		}
		_ = syscall.Kill(l.PID, syscall.SIGKILL)
		for i := 0; i < 500 && syscall.Kill(l.PID, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// ownerPID is the owner Pi's pid, from its lease.
func (lr *liveRig) ownerPID() int {
	lr.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(lr.agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", "owner.json"))
	if len(paths) != 1 {
		lr.t.Fatalf("owner.json: %q", paths)
	}
	var l struct{ PID int }
	b, _ := os.ReadFile(paths[0])
	if err := json.Unmarshal(b, &l); err != nil || l.PID <= 0 {
		lr.t.Fatalf("owner.json %s: %v", b, err)
	}
	return l.PID
}

// Escape in the pane aborts its turn: the handback says needs_continue
// and the owner continues its local session, where the workflow completes.
func TestLiveHandoffAbortedTurnContinuesLocally(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	base := lr.runtimeFiles()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.WaitForText(t, launched.PaneID, "Working", lvLong)
	// Seed: temporary bridge files use private permissions. While the
	// pane works, the handoff's files (launch files, the tool bridge's
	// socket and client) are there, private.
	during := lr.runtimeFiles()
	if len(during) <= len(base) {
		t.Fatalf("while the pane works the runtime directory holds %q, no more than before the handoff (%q)", during, base)
	}
	lr.wantPrivate()
	if err := herdr.NewClient(lr.s.SocketPath()).PaneSendInput(t.Context(), launched.PaneID, "", "Escape"); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if res.code != 0 || hb.Reason != "idle" || !hb.NeedsContinue || !hb.Continued {
		t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	// Seed: "command, prompt, extension, and socket artifacts are cleaned
	// after the pane closes" — after the handback, not when the owner goes.
	if ex := lr.s.WaitExited(t, launched.PaneID, lvLong); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	lr.wantOnly(base)
	if got := lr.result(); got != lvLocalReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, lvLocalReply)
	}
}

// A single Ctrl-C in the handed-off pane is no handback (seed: a single
// Ctrl-C clears the editor, double Ctrl-C exits Pi, so Ctrl-C is not a
// handback signal): with the pane's Pi working, a draft in its editor and
// one Ctrl-C, the draft goes (Pi took the key), but the Pi keeps working,
// nothing is handed back and open stays; the handoff then ends the usual
// way (Escape aborts the turn, handed back idle).
func TestLiveHandoffCtrlCInThePaneIsNoHandback(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.WaitForText(t, launched.PaneID, "Working", lvLong)
	c := herdr.NewClient(lr.s.SocketPath())
	const draft = "a draft to clear"
	if err := c.PaneSendInput(t.Context(), launched.PaneID, draft); err != nil {
		t.Fatal(err)
	}
	lr.s.WaitForText(t, launched.PaneID, draft, lvLong)
	if err := c.PaneSendInput(t.Context(), launched.PaneID, "", "ctrl+c"); err != nil {
		t.Fatal(err)
	}
	var screen string
	cleared := lr.s.Await(lvLong, func() bool {
		select {
		case <-ro.done:
			return true // handed back: said below
		default:
		}
		screen, _ = lr.s.Screen(launched.PaneID)
		return !strings.Contains(screen, draft)
	})
	ro.running(t)
	if !cleared {
		t.Fatalf("Ctrl-C did not clear the pane's editor:\n%s", screen)
	}
	// Long past Pi's double-Ctrl-C window (500 ms) and Herdr's unpaced
	// events: a handback would have come by now.
	time.Sleep(2 * time.Second)
	ro.running(t)
	if got := events(ro.lines(t)); got != "ordered launched working" {
		t.Fatalf("after one Ctrl-C open printed %q", got)
	}
	if err := syscall.Kill(launched.AgentPID, 0); err != nil {
		t.Fatalf("the pane's Pi (pid %d) is gone after one Ctrl-C: %v", launched.AgentPID, err)
	}
	if screen, _ = lr.s.Screen(launched.PaneID); !strings.Contains(screen, "Working") {
		t.Fatalf("the pane's Pi stopped working after one Ctrl-C:\n%s", screen)
	}
	if err := c.PaneSendInput(t.Context(), launched.PaneID, "", "Escape"); err != nil {
		t.Fatal(err)
	}
	res := ro.wait(t)
	if ls := ro.lines(t); res.code != 0 || ls[len(ls)-1].Reason != "idle" || !ls[len(ls)-1].NeedsContinue {
		t.Fatalf("exit %d, events %q\n%s%s", res.code, events(ls), res.stdout, res.stderr)
	}
}

// `herdr-pi close <run>` after two handoffs of one run placed in the run's
// workspace (--workspace: a tab per attempt) closes the workspace once —
// its tabs go with it — and each handoff is handed back as closed, its
// bridge closed by its wrapper.
func TestCloseAfterTwoHandoffs(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.two = true })
	lr.startOwner()
	st := lr.run()
	first := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json", "--hold", "--workspace")
	first.waitEvent(t, "ordered")
	second := lr.start(t, lr.s, nil, st.ID, lvLabel2, "--json", "--hold", "--workspace")
	second.waitEvent(t, "ordered")
	lr.openGate()
	a, b := first.waitEvent(t, "launched"), second.waitEvent(t, "launched")
	if a.WorkspaceID == "" || a.WorkspaceID != b.WorkspaceID || a.TabID == b.TabID {
		t.Fatalf("launched %+v and %+v: want two tabs of one workspace", a, b)
	}
	lvWait(t, "both panes at rest", func() bool {
		return strings.HasSuffix(events(first.lines(t)), "idle") && strings.HasSuffix(events(second.lines(t)), "idle")
	})
	lr.s.ClearRecords()
	out, code := lr.herdrPi(t, "close", st.ID[:8], "--json")
	var rep struct {
		Format string `json:"format"`
		Run    string `json:"run"`
		Closed []struct{ Kind, ID, How string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("close: exit %d (%v)\n%s", code, err, out)
	}
	validateJSON(t, docSchema(t, "open"), []byte(out))
	var got []string
	for _, c := range rep.Closed {
		got = append(got, c.Kind+" "+c.ID+" "+c.How)
	}
	ws := "workspace " + a.WorkspaceID + " closed"
	want := []string{ws, "tab " + a.TabID + " with workspace " + a.WorkspaceID, "tab " + b.TabID + " with workspace " + a.WorkspaceID}
	if len(got) == 5 {
		// The two handoffs' records are in the order they were written.
		slices.Sort(got[1:3])
		slices.Sort(want[1:3])
	}
	if rep.Format != "herdr-pi.close/1" || rep.Run != st.ID || len(got) != 5 || !slices.Equal(got[:3], want) ||
		!strings.HasPrefix(got[3], "bridge ") || !strings.HasPrefix(got[4], "bridge ") || got[3] == got[4] {
		t.Fatalf("close reported %q (format %q, run %q, want %q)", got, rep.Format, rep.Run, st.ID)
	}
	for _, ro := range []*runningOpen{first, second} {
		res := ro.wait(t)
		ls := ro.lines(t)
		if hb := ls[len(ls)-1]; res.code != 0 || hb.Reason != "closed" || !hb.Transferred {
			t.Fatalf("exit %d, handback %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
		}
	}
	// Each thing once: one workspace.close, nothing else closed.
	var closes []string
	for _, q := range lr.s.Requests() {
		if strings.HasSuffix(q.Method, ".close") {
			closes = append(closes, q.Method)
		}
	}
	if !slices.Equal(closes, []string{"workspace.close"}) {
		t.Fatalf("close calls %q", closes)
	}
	// Nothing is left to close.
	out, code = lr.herdrPi(t, "close", st.ID)
	if code != 0 || !strings.Contains(out, "nothing herdr-pi opened for run") {
		t.Fatalf("close again: exit %d\n%s", code, out)
	}
}

// gatedInspection is `open --inspect --workspace` of the run's second
// agent whose Pi waits for a gate: it has made the run's workspace and
// typed into its pane, and the ledger does not name that workspace until
// the gate opens and the inspection records it. Another placement of the
// run meanwhile must wait for the placement lock, not make a workspace.
type gatedInspection struct {
	*runningOpen
	gate string
}

func (lr *liveRig) startGatedInspection(t *testing.T, run string) gatedInspection {
	t.Helper()
	gate := filepath.Join(lr.private, "pi-gate")
	cfg := lr.fakePi(t, "gated-pi", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done\nexec %s \"$@\"", lvShellQuote(gate), lvShellQuote(lr.agent.Pi.Bin)))
	g := gatedInspection{lr.start(t, lr.s, []string{"HERDR_PI_CONFIG=" + cfg}, run, lvLabel2, "--inspect", "--workspace", "--json"), gate}
	lvWait(t, "the inspection's workspace", func() bool {
		g.running(t)
		return len(lvCalls(lr.s, "workspace.create")) == 1 && len(lvCalls(lr.s, "pane.send_input")) == 1
	})
	return g
}

// releaseAfter waits until the other placement (what, with others still
// running) has made a workspace of its own or logged that it waits for
// the placement lock, then opens the gate and returns the inspection's
// report.
func (g gatedInspection) releaseAfter(t *testing.T, lr *liveRig, what string, others ...*runningOpen) openReport {
	t.Helper()
	lvWait(t, what+" to place its pane or wait for the placement lock", func() bool {
		g.running(t)
		for _, o := range others {
			o.running(t)
		}
		b, _ := os.ReadFile(filepath.Join(lr.private, "herdr-pi", "herdr-pi.log"))
		return len(lvCalls(lr.s, "workspace.create")) > 1 || strings.Contains(string(b), "waits for the placement lock")
	})
	if err := os.WriteFile(g.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := g.wait(t)
	var rep openReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); res.code != 0 || err != nil {
		t.Fatalf("the inspection: exit %d (%v)\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	return rep
}

// A live handoff and an inspection of another attempt of the run at once,
// both in the run's workspace (--workspace), share one workspace, as two
// inspections do: the handoff's placement takes the ledger's placement
// lock, so it waits while the inspection, which made the workspace, has
// not yet recorded it, and then finds it rather than opening a second
// "workflow <name>". The inspection's Pi waits for a gate of its own, so
// the handoff is sure to place within that window.
func TestLiveHandoffAndAnInspectionAtOnceShareTheRunsWorkspace(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.two = true })
	lr.startOwner()
	st := lr.run()
	live := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json", "--workspace")
	live.waitEvent(t, "ordered")

	inspection := lr.startGatedInspection(t, st.ID)
	lr.openGate()
	// The handoff's turn ends and its pane is placed: in a workspace of
	// its own (the defect), or after waiting for the inspection's.
	rep := inspection.releaseAfter(t, lr, "the handoff", live)
	launched := live.waitEvent(t, "launched")
	if created := lvCalls(lr.s, "workspace.create"); len(created) != 1 || launched.WorkspaceID != rep.WorkspaceID || launched.TabID == rep.TabID {
		t.Fatalf("%d workspaces created; the inspection opened in %s tab %s, the handoff in %s tab %s: want two tabs of one workspace",
			len(created), rep.WorkspaceID, rep.TabID, launched.WorkspaceID, launched.TabID)
	}
	if res := live.wait(t); res.code != 0 {
		t.Fatalf("the handoff: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// One workspace to close, the inspection's tab with it.
	out, code := lr.herdrPi(t, "close", st.ID, "--json")
	var closed struct{ Closed []struct{ Kind, ID string } }
	if err := json.Unmarshal([]byte(out), &closed); err != nil || code != 0 || len(closed.Closed) == 0 ||
		closed.Closed[0].Kind != "workspace" || closed.Closed[0].ID != rep.WorkspaceID {
		t.Fatalf("close: exit %d (%v)\n%s", code, err, out)
	}
}

// A menu inspection ("Open session in Herdr pane" in the owner's
// /workflow menu) and an inspection of another attempt of the run by
// `herdr-pi open` at once, both in the run's workspace, share one
// workspace: the menu's placement takes the ledger's placement lock, as
// open's and a live handoff's do, so it waits while open, which made the
// workspace, has not yet recorded it, and then opens a second tab of it
// rather than a second "workflow <name>". The menu places in the run's
// workspace because the engine's fully inspectable setting says so once
// the run has ended (the run itself ran its agents in the owner); open's
// Pi waits for a gate of its own, so the menu is sure to place within
// that window.
func TestMenuInspectionAndAnOpenAtOnceShareTheRunsWorkspace(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.two = true })
	lr.startOwner()
	lr.openGate()
	if got, want := lr.result(), "agent: finished locally | agent: finished locally"; got != want {
		t.Fatalf("the workflow's result is %q, want %q", got, want)
	}
	lr.owner.WaitText(t, "owner: noted", lvLong)
	st := lr.run()
	settings := filepath.Join(lr.agent.AgentDir, "pi-extensible-workflows", "settings.json")
	writeFile(t, settings, `{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`)

	inspection := lr.startGatedInspection(t, st.ID)
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open session in Herdr pane") != 1 || list[0] != "Open session in Herdr pane" {
		t.Fatalf("the settled agent's actions: %q", list)
	}
	lvSend(t, lr.owner, lvEnter)
	// The menu's inspection is placed: in a workspace of its own (the
	// defect), or after waiting for open's.
	rep := inspection.releaseAfter(t, lr, "the menu's inspection")
	lr.s.WaitFor(t, lvLong, "the menu's inspection's pane", func() bool { return len(lr.s.Inputs()) > 1 })
	pane := lr.s.Inputs()[1].PaneID
	if created := lvCalls(lr.s, "workspace.create"); len(created) != 1 {
		t.Fatalf("%d workspaces created (open's is %s, its tab %s; the menu's pane is %s): want one, with a tab for each",
			len(created), rep.WorkspaceID, rep.TabID, pane)
	}
	var tabs, workspaces []string
	for _, q := range lvCalls(lr.s, "tab.create") {
		var r struct {
			Result struct {
				Tab struct {
					TabID string `json:"tab_id"`
				} `json:"tab"`
				RootPane struct {
					PaneID string `json:"pane_id"`
				} `json:"root_pane"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(q.Reply), &r)
		tabs = append(tabs, r.Result.Tab.TabID+" "+r.Result.RootPane.PaneID)
		workspaces = append(workspaces, fmt.Sprint(paramsOf(t, q)["workspace_id"]))
	}
	if len(tabs) != 2 || tabs[0] != rep.TabID+" "+rep.PaneID || !strings.HasSuffix(tabs[1], " "+pane) ||
		workspaces[0] != rep.WorkspaceID || workspaces[1] != rep.WorkspaceID {
		t.Fatalf("tabs (tab pane) %q in workspaces %q: want open's tab %s and the menu's pane %s, both in %s",
			tabs, workspaces, rep.TabID, pane, rep.WorkspaceID)
	}
	// The menu's inspection is in the ledger once its Pi runs: then one
	// workspace is closed, both tabs with it.
	menuTab := strings.Fields(tabs[1])[0]
	ledger := handoff.LedgerAt(filepath.Join(lr.private, fmt.Sprintf("herdr-pi-%d", os.Getuid())))
	lvWait(t, "the menu's inspection in the ledger", func() bool {
		recs, _ := ledger.List()
		return slices.ContainsFunc(recs, func(r handoff.Record) bool { return r.Kind == "tab" && r.ID == menuTab })
	})
	out, code := lr.herdrPi(t, "close", st.ID, "--json")
	var closed struct{ Closed []struct{ Kind, ID string } }
	if err := json.Unmarshal([]byte(out), &closed); err != nil || code != 0 || len(closed.Closed) == 0 ||
		closed.Closed[0].Kind != "workspace" || closed.Closed[0].ID != rep.WorkspaceID {
		t.Fatalf("close: exit %d (%v)\n%s", code, err, out)
	}
	if c := lvCalls(lr.s, "workspace.close"); len(c) != 1 {
		t.Fatalf("workspace.close calls %d: want one", len(c))
	}
}

// lvShellQuote quotes s for sh.
func lvShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// herdrPi runs a herdr-pi command in the person's environment and returns
// its stdout and exit code (its stderr goes to the test log).
func (lr *liveRig) herdrPi(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(lr.hp, args...)
	cmd.Env, cmd.Dir = lr.env(lr.s), lr.agent.Project
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errb.Len() > 0 {
		t.Logf("herdr-pi %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), code
}

const (
	lvEnter = pitest.KeyEnter
	lvEsc   = pitest.KeyEsc
)

func lvAgentActions(t *testing.T, tm *pitest.Term) string {
	t.Helper()
	return pitest.AgentActions(t, tm, lvFlow, lvLabel, lvLong)
}

func lvSend(t *testing.T, tm *pitest.Term, keys string) {
	t.Helper()
	if err := tm.Send(keys); err != nil {
		t.Fatal(err)
	}
}

func lvCount(list []string, label string) int {
	n := 0
	for _, x := range list {
		if x == label {
			n++
		}
	}
	return n
}

var (
	lvActionList  = pitest.ActionList
	lvMenuHint    = pitest.MenuHint
	lvEditorShown = pitest.EditorShown
)

// The same as TestLiveHandoffFromOpen, asked from the owner's /workflow
// menu ("Open live session in Herdr pane", driven with keys): the wrapper
// runs the handoff itself; the owner's status line follows the pane; the
// workflow completes with the pane's reply; nothing is left behind.
func TestLiveHandoffFromTheMenu(t *testing.T) {
	lr := newLiveRig(t)
	lr.startOwner()
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open live session in Herdr pane") != 1 || list[0] != "Open live session in Herdr pane" {
		t.Fatalf("the running agent's actions: %q", list)
	}
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitText(t, lvLabel+": handing off at the end of this turn", lvLong)
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") {
		t.Fatalf("a pane opened before the turn ended: %q", m)
	}
	lr.openGate()
	lr.s.WaitFor(t, lvLong, "the handoff's pane", func() bool { return len(lr.s.Inputs()) > 0 })
	pane := lr.s.Inputs()[0].PaneID
	if got := lr.result(); got != lvPaneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", got, lvPaneReply)
	}
	if ex := lr.s.WaitExited(t, pane, 30*time.Second); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	if lines := lr.toolLines(); strings.Count(strings.Join(lines, "\n"), "start beta") != 1 || !slices.Contains(lines, "end beta") {
		t.Fatalf("tool log %q", lines)
	}
	lr.owner.WaitFor(t, "the status line to clear", lvLong, func(s string) bool { return !strings.Contains(s, lvLabel+": ") })
	lvWait(t, "the owner's answer to the run's end", func() bool { return strings.Contains(lr.owner.Screen(), "owner: noted") })
	lr.quitOwner()
	lr.wantNothingLeft()
}

// Seed: "Stopping or disposing the workflow closes active Herdr panes,
// bridges, and owned workspaces before the underlying local session is
// disposed." The owner stops the run (its model calls workflow_stop) while
// its agent works in a handed-off pane: the handoff is given up (aborted,
// not continued), the pane closes, the bridge and the launch's files go;
// the agent's local session, which the handoff suspended, is resumed and
// disposed only once the pane is gone — and not held open by a retry
// dialog for the request the pane's close cut. Its lifecycle is logged by an
// inline extension of the agent's, which the pane's Pi runs too (seed:
// inline extension factories are materialized as explicit extensions).
func TestLiveHandoffRunStopped(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.lifeLog = filepath.Join(lr.agent.Home, "life.log")
	lr.startOwner()
	base := lr.runtimeFiles()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.WaitForText(t, launched.PaneID, "Working", lvLong)
	owner := strconv.Itoa(lr.ownerPID())
	life := func() (own, pane []string) {
		b, _ := os.ReadFile(lr.lifeLog)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			pid, ev, _ := strings.Cut(l, " ")
			if pid == owner {
				own = append(own, ev)
			} else if l != "" {
				pane = append(pane, ev)
			}
		}
		return own, pane
	}
	if own, pane := life(); !slices.Equal(own, []string{"session_start startup", "session_shutdown resume"}) || len(pane) == 0 || !strings.HasPrefix(pane[0], "session_start") {
		t.Fatalf("while the pane works: the local session's lifecycle %q (want started, then suspended), the pane's %q (want its inline extension run)", own, pane)
	}
	lr.stopRun.Store(lr.run().ID)
	lr.owner.Type(t, lvStop)
	// When the local session is disposed, the pane must be gone.
	var paneGone bool
	lvWait(t, "the agent's local session to be disposed", func() bool {
		// The pane's Pi, closed mid-request, leaves a reply cut on an
		// error: the stopped run must not take it for a provider failure
		// (whose retry dialog would hold the session open).
		if scr := lr.owner.Screen(); strings.Contains(scr, `Subagent "`+lvLabel+`" failed`) {
			own, _ := life()
			t.Fatalf("the stopped run asks about a provider failure (the local session %q):\n%s", own, scr)
		}
		_, exited := lr.s.Exited(launched.PaneID)
		if own, _ := life(); !slices.Contains(own, "session_shutdown quit") {
			return false
		}
		paneGone = exited
		return true
	})
	if !paneGone {
		t.Errorf("the agent's local session was disposed while its handed-off pane %s still ran", launched.PaneID)
	}
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	if hb.Event != "handback" || hb.Reason != "aborted" || hb.Continued {
		t.Fatalf("exit %d, last line %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	if ex := lr.s.WaitExited(t, launched.PaneID, lvLong); !ex.Closed {
		t.Fatalf("the pane ended %+v", ex)
	}
	lr.wantOnly(base)
	lvWait(t, "the run to stop", func() bool { return lr.run().State == "stopped" })
	if own, _ := life(); !slices.Equal(own, []string{"session_start startup", "session_shutdown resume", "session_start resume", "session_shutdown quit"}) {
		t.Errorf("the local session's lifecycle %q: want it resumed after the pane, then disposed", own)
	}
	if slices.ContainsFunc(lr.llm.Requests(), func(r fakellm.Request) bool { return strings.Contains(r.LastUser(), lvBackHome) }) {
		t.Fatal("the stopped run's agent went on locally")
	}
}

// Seed: "Stopping or disposing the workflow closes active Herdr panes,
// bridges, and owned workspaces before the underlying local session is
// disposed." Disposing, as a person does it: /quit in the owner while its
// agent works in a handed-off pane. The pane is closed before the owner's
// Pi is gone (its wrapper, which ends after it, finds it closed), the
// bridge and the launch's files go, and open says the handoff ended with
// its owner; the cancelled run's agent does not go on locally.
func TestLiveHandoffOwnerQuitClosesThePaneFirst(t *testing.T) {
	lr := newLiveRig(t, func(lr *liveRig) { lr.paneHangs = true })
	lr.startOwner()
	ro, launched := lr.handOff(lvLabel)
	ro.waitEvent(t, "working")
	lr.s.WaitForText(t, launched.PaneID, "Working", lvLong)
	lr.quitOwner()
	if ex, exited := lr.s.Exited(launched.PaneID); !exited || !ex.Closed {
		t.Fatalf("the owner's Pi and its wrapper ended while the handed-off pane %s ran on (%+v, exited %v)", launched.PaneID, ex, exited)
	}
	res := ro.wait(t)
	ls := ro.lines(t)
	hb := ls[len(ls)-1]
	// The owner's engine interrupts the run as its session shuts down,
	// and the owner says so as it gives the handoff up: whether it is
	// still there to take the handback or already gone, nobody has the
	// attempt back.
	if hb.Event != "handback" || hb.Reason != "aborted" || hb.Continued || !hb.OwnerGone || hb.ErrorCode != "owner_gone" ||
		!strings.Contains(hb.Error, "nobody has the attempt back") || res.code != 1 || !strings.Contains(res.stderr, "went away or ended its session") {
		t.Fatalf("exit %d, last line %+v\n%s%s", res.code, hb, res.stdout, res.stderr)
	}
	t.Logf("the handback: %s", hb.Error)
	lr.wantNothingLeft()
	if slices.ContainsFunc(lr.llm.Requests(), func(r fakellm.Request) bool { return strings.Contains(r.LastUser(), lvBackHome) }) {
		t.Fatal("the cancelled run's agent went on locally")
	}
}
