package owner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

var herdrEnv = []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=/tmp/herdr-test.sock", "HERDR_PANE_ID=w1:p1"}

// A guard against hangs on a loaded machine, not a measurement.
const long = 90 * time.Second

// owner is a running workflow owner with its run started and its agent's
// turn held open by the gated tool.
type owner struct {
	wd      *world
	tm      *pitest.Term
	link    *control.OwnerLink
	attempt control.Attempt
	engine  control.EngineStatus
}

func startOwner(t *testing.T, wd *world, env []string) *owner {
	t.Helper()
	tm := pitest.StartTerm(t, wd.ownerArgv(t), env, wd.agent.Project, 40, 120)
	eng := wd.w.next(t, "the engine status", long, func(m control.OwnerMessage) bool { _, ok := m.(control.EngineStatus); return ok }).(control.EngineStatus)
	if !eng.Registered {
		t.Fatalf("the probe did not register with the engine: %+v", eng)
	}
	tm.WaitFor(t, "the editor", long, func(s string) bool { return strings.Count(s, "────────") >= 2 })
	tm.Type(t, ownerPrompt)
	at := wd.w.next(t, "a live attempt", long, func(m control.OwnerMessage) bool { a, ok := m.(control.Attempt); return ok && a.Live }).(control.Attempt)
	waitFor(t, "the agent's tool call", func() bool {
		return slices.ContainsFunc(wd.toolLines(), func(l string) bool { return strings.HasPrefix(l, "start alpha") })
	})
	return &owner{wd: wd, tm: tm, link: wd.w.owner(), attempt: at, engine: eng}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(long)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, long)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type launched struct {
	l   control.Launch
	err error
}

// order sends a handoff order and returns where its launch will arrive.
func (o *owner) order(ctx context.Context, id string) <-chan launched {
	ch := make(chan launched, 1)
	go func() {
		l, err := o.link.Handoff(ctx, control.HandoffOrder{ID: id, RunID: o.attempt.RunID, SessionID: o.attempt.SessionID})
		ch <- launched{l, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan launched) control.Launch {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("handoff: %v", r.err)
		}
		return r.l
	case <-time.After(long):
		t.Fatalf("no launch within %v", long)
	}
	return control.Launch{}
}

// holding is the owner's status line while an order waits for the turn
// boundary.
const holding = "finder: handing off at the end of this turn"

// handOff orders a handoff, waits until the owner holds the order while the
// agent's turn is still open (the gated tool runs), checks no launch came
// yet, lets the turn end and returns the launch.
func (o *owner) handOff(t *testing.T, id string) control.Launch {
	t.Helper()
	ch := o.order(context.Background(), id)
	o.tm.WaitText(t, holding, long)
	select {
	case r := <-ch:
		t.Fatalf("the launch came before the turn ended: %+v", r)
	default:
	}
	o.openGate(t)
	return receive(t, ch)
}

func (o *owner) openGate(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(o.wd.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// entry is one message of a session file; transcript reads them in order.
type entry = pitest.Message

func transcript(t *testing.T, path string) []entry {
	t.Helper()
	return pitest.Transcript(t, path)
}

func roles(es []entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s(%s%s) ", e.Role, e.StopReason, strings.Join(e.ToolCalls, ","))
	}
	return b.String()
}

// runPane starts the launch the way the wrapper would (files written 0600,
// their paths put in), with a stub in place of the tool bridge's client
// (unless the world's paneCallsTool says so the pane's model calls no
// tool; a test calls the bridged tool over the owner link itself).
func runPane(t *testing.T, wd *world, l control.Launch) *pitest.Term {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for _, f := range l.Files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Content), 0o600); err != nil {
			t.Fatal(err)
		}
		paths[f.Name] = p
	}
	var argv []string
	for _, a := range l.Argv {
		switch {
		case a.ToolBridge:
			argv = append(argv, stubBridge(t, dir, l.Tools, wd.paneCallsTool && !wd.paneToolAnswers, wd.paneToolAnswers))
		case a.File != "":
			argv = append(argv, a.Prefix+paths[a.File])
		default:
			argv = append(argv, a.Text)
		}
	}
	env := wd.agent.With(herdrEnv...)
	for k, v := range l.Env {
		env = append(env, k+"="+v)
	}
	return pitest.StartTerm(t, argv, env, l.Cwd, 40, 120)
}

// A hanging stub never returns from a call (its Pi is killed meanwhile); an
// answering one returns a result at once.
func stubBridge(t *testing.T, dir string, tools []control.ToolSpec, hangs, answers bool) string {
	t.Helper()
	specs, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	body := `throw new Error("no bridge in this test");`
	switch {
	case hangs:
		body = `await new Promise(() => {});`
	case answers:
		body = `return { content: [{ type: "text", text: "stub answer" }], details: {} };`
	}
	src := fmt.Sprintf("const tools = %s;\nexport default function (pi) { for (const t of tools) pi.registerTool({ ...t, async execute() { %s } }); }\n", specs, body)
	p := filepath.Join(dir, "bridge-stub.mjs")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The live handoff as `herdr-pi open` from another pane drives it: the
// order reaches the owner mid-turn; the launch comes only once the turn has
// ended; the launch continues the same session with what the engine
// prepared; bridged tool calls run in the owner (one update, one result;
// an abort reaches the tool's signal); the pane's Pi continues the
// session; after the handback the owner resumes the same session file and
// the workflow completes with the pane's reply.
func TestLiveHandoffAtTheTurnBoundary(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	ctx := context.Background()
	l := o.handOff(t, "h1")

	// The turn ended before the launch: the tool returned, its result is in
	// the transcript, and the local agent started no further turn.
	if lines := wd.toolLines(); !slices.Contains(lines, "end alpha") {
		t.Fatalf("launch before the tool's turn ended; tool log %q", lines)
	}
	// (Cutting the turn catches the next model request just started: Pi
	// records it as an empty reply that stopped on an error.)
	before := transcript(t, l.SessionFile)
	cut := before
	if n := len(cut); n > 0 && cut[n-1].Role == "assistant" && cut[n-1].Text == "" && len(cut[n-1].ToolCalls) == 0 && (cut[n-1].StopReason == "error" || cut[n-1].StopReason == "aborted") {
		cut = cut[:n-1]
	}
	if n := len(cut); n < 2 || cut[n-2].Role != "assistant" || !slices.Contains(cut[n-2].ToolCalls, "herdr_lookup") || cut[n-1].Role != "toolResult" {
		b, _ := os.ReadFile(l.SessionFile)
		t.Fatalf("at the launch the transcript should end with the tool call and its result: %s\n%s", roles(before), b)
	}
	checkLaunch(t, wd, o.attempt, l)

	// Bridged tool calls run in the owner.
	var updates []string
	res, err := o.link.CallTool(ctx, "h1", control.ToolCall{ToolCallID: "pane-call-1", Name: "herdr_lookup", Params: json.RawMessage(`{"query":"beta"}`)},
		func(u json.RawMessage) { updates = append(updates, string(u)) })
	if err != nil {
		t.Fatalf("bridged tool call: %v", err)
	}
	if len(updates) != 1 || !strings.Contains(updates[0], "looking up beta") || !strings.Contains(string(res), "answer for beta") {
		t.Fatalf("bridged tool call: updates %q, result %s", updates, res)
	}
	abortCtx, cancel := context.WithCancel(ctx)
	aborted := make(chan error, 1)
	go func() {
		_, err := o.link.CallTool(abortCtx, "h1", control.ToolCall{ToolCallID: "pane-call-2", Name: "herdr_lookup", Params: json.RawMessage(`{"query":"gamma","mode":"abort"}`)}, nil)
		aborted <- err
	}()
	waitFor(t, "the second tool call to start", func() bool { return slices.Contains(wd.toolLines(), "start gamma abort cwd="+wd.agent.Project) })
	cancel()
	if err := <-aborted; err != context.Canceled {
		t.Fatalf("aborted tool call returned %v", err)
	}
	waitFor(t, "the tool's signal to abort", func() bool { return slices.Contains(wd.toolLines(), "aborted gamma") })

	// The owner's status line follows the pane.
	if err := o.link.PaneState("h1", control.PaneLaunched); err != nil {
		t.Fatal(err)
	}
	o.tm.WaitText(t, "finder: working", long)

	// The pane: the launched command continues the session.
	pane := runPane(t, wd, l)
	waitFor(t, "the pane's reply in the session file", func() bool {
		es := transcript(t, l.SessionFile)
		return len(es) > 0 && es[len(es)-1].Text == paneReply
	})
	pane.Close()

	r, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackExited, Transferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Transferred || r.Continued || r.Error != "" {
		t.Fatalf("resumed %+v, want transferred, not continued", r)
	}
	result := waitRunResult(t, wd, o.attempt.RunID)
	if result != paneReply {
		t.Fatalf("the workflow's result is %q, want the pane's reply %q", result, paneReply)
	}
	after := transcript(t, l.SessionFile)
	if len(after) <= len(before) || after[len(after)-1].Text != paneReply {
		t.Fatalf("the session file should end with the pane's turn: %s", roles(after))
	}
	o.tm.WaitFor(t, "the status line to clear", long, func(s string) bool { return !strings.Contains(s, "finder: ") })
}

// A turn aborted in the pane (Escape while it works) comes back with needsContinue:
// the owner continues its local session, and the workflow completes there.
func TestAbortedPaneTurnContinuesLocally(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.paneHangs = true
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	pane := runPane(t, wd, l)
	waitFor(t, "the pane's model request", func() bool {
		return slices.ContainsFunc(wd.llm.Requests(), func(r fakellm.Request) bool { return strings.Contains(r.LastUser(), "Carry on with the workflow task") })
	})
	pane.WaitText(t, "Working", long)
	if err := pane.Send(keyEsc); err != nil {
		t.Fatal(err)
	}
	pane.WaitFor(t, "the pane's turn to stop", long, func(s string) bool { return !strings.Contains(s, "Working") })
	waitFor(t, "the aborted turn in the session file", func() bool {
		return slices.ContainsFunc(transcript(t, l.SessionFile), func(e entry) bool { return e.Role == "assistant" && e.StopReason == "aborted" })
	})
	pane.Close()
	r, err := o.link.Handback(context.Background(), "h1", control.Handback{Reason: control.HandbackIdle, Transferred: true, NeedsContinue: true, LastStopReason: "aborted"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Transferred || !r.Continued {
		t.Fatalf("resumed %+v, want transferred and continued", r)
	}
	if got := waitRunResult(t, wd, o.attempt.RunID); got != localReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, localReply)
	}
}

// checkLaunch compares the launch with what the engine prepared, as far as
// the store and the installation tell it independently of the probe.
func checkLaunch(t *testing.T, wd *world, at control.Attempt, l control.Launch) {
	t.Helper()
	st := readState(t, wd, at.RunID)
	setup := st.attempt(t, at.SessionID).Setup
	want := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("launch %s = %v, want %v", what, got, want)
		}
	}
	want("run", l.RunID, at.RunID)
	want("session file", l.SessionFile, at.SessionFile)
	want("cwd", l.Cwd, setup.Cwd)
	model := setup.Model.Provider + "/" + setup.Model.Model
	if setup.Model.Thinking != "" {
		model += ":" + setup.Model.Thinking
	}
	want("model", l.Model, model)
	want("label", l.Label, agentLabel)
	// The Pi the owner runs, not the engine's own copy of Pi.
	node, _ := filepath.EvalSymlinks(filepath.Join(wd.agent.Pi.NodeDir, "node"))
	entry, _ := filepath.EvalSymlinks(wd.agent.Pi.Bin)
	want("executable", l.Executable, node)
	want("entrypoint", l.Entrypoint, entry)
	if strings.HasPrefix(l.Entrypoint, filepath.Dir(filepath.Dir(wd.engine))) {
		t.Errorf("launch entrypoint %s is the engine's own Pi", l.Entrypoint)
	}
	tools := append([]string(nil), setup.Tools...)
	if !slices.Contains(tools, "herdr_lookup") {
		tools = append(tools, "herdr_lookup")
	}
	slices.Sort(tools)
	got := slices.Clone(l.ToolNames)
	slices.Sort(got)
	want("tools", got, tools)
	if len(l.Tools) != 1 || l.Tools[0].Name != "herdr_lookup" || l.Tools[0].Description == "" || !bytes.Contains(l.Tools[0].Parameters, []byte(`"query"`)) {
		t.Errorf("launch bridged tools %+v, want herdr_lookup with its schema", l.Tools)
	}
	want("needs continue", l.NeedsContinue, true)
	want("env", l.Env["PI_CODING_AGENT_DIR"], wd.agent.AgentDir)

	// The command line, word by word where the engine decides.
	argv := l.Argv
	text := func(i int) string { return argv[i].Text }
	if text(0) != l.Executable || text(1) != l.Entrypoint {
		t.Errorf("argv starts %v %v", argv[0], argv[1])
	}
	flag := func(name string) (control.Arg, bool) {
		for i := 0; i+1 < len(argv); i++ {
			if argv[i].Text == name {
				return argv[i+1], true
			}
		}
		return control.Arg{}, false
	}
	if a, _ := flag("--session"); a.Text != at.SessionFile {
		t.Errorf("--session %v", a)
	}
	if a, _ := flag("--model"); a.Text != model {
		t.Errorf("--model %v", a)
	}
	if a, _ := flag("--tools"); a.Text != strings.Join(l.ToolNames, ",") {
		t.Errorf("--tools %v", a)
	}
	bridge := 0
	for i, a := range argv {
		if a.ToolBridge {
			bridge++
			if i == 0 || argv[i-1].Text != "--extension" {
				t.Errorf("the tool bridge is not an --extension")
			}
		}
	}
	if bridge != 1 {
		t.Errorf("the tool bridge appears %d times", bridge)
	}
	if last := argv[len(argv)-1].Text; !strings.Contains(last, "Carry on with the workflow task") {
		t.Errorf("the last word is %q, want the continue message", last)
	}
	// Resource policy and trust as the store records them.
	if st.policy(t, at.SessionID) {
		for _, f := range []string{"--no-skills", "--no-extensions"} {
			if !slices.ContainsFunc(argv, func(a control.Arg) bool { return a.Text == f }) {
				t.Errorf("argv lacks %s though the agent has a resource policy", f)
			}
		}
	}
	t.Logf("launch argv: %s", dump(argv))
}

// state is what the tests read from the engine's state.json.
type state struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Agents []struct {
		AttemptDetails []struct {
			Session struct {
				SessionID string `json:"sessionId"`
			} `json:"session"`
			Setup struct {
				Model struct {
					Provider string `json:"provider"`
					Model    string `json:"model"`
					Thinking string `json:"thinking"`
				} `json:"model"`
				Tools             []string        `json:"tools"`
				Cwd               string          `json:"cwd"`
				ResourceSelectors json.RawMessage `json:"resourceSelectors"`
			} `json:"setup"`
		} `json:"attemptDetails"`
	} `json:"agents"`
	dir string
}

func (s *state) attempt(t *testing.T, sessionID string) (a struct {
	Setup struct {
		Model struct{ Provider, Model, Thinking string }
		Tools []string
		Cwd   string
	}
}) {
	t.Helper()
	for _, ag := range s.Agents {
		for _, at := range ag.AttemptDetails {
			if at.Session.SessionID == sessionID {
				a.Setup.Model.Provider, a.Setup.Model.Model, a.Setup.Model.Thinking = at.Setup.Model.Provider, at.Setup.Model.Model, at.Setup.Model.Thinking
				a.Setup.Tools, a.Setup.Cwd = at.Setup.Tools, at.Setup.Cwd
				return a
			}
		}
	}
	t.Fatalf("run %s has no attempt with session %s", s.ID, sessionID)
	return a
}

func (s *state) policy(t *testing.T, sessionID string) bool {
	for _, ag := range s.Agents {
		for _, at := range ag.AttemptDetails {
			if at.Session.SessionID == sessionID {
				return len(at.Setup.ResourceSelectors) > 0 && string(at.Setup.ResourceSelectors) != "null"
			}
		}
	}
	return false
}

func readState(t *testing.T, wd *world, runID string) *state {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(wd.agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", runID, "state.json"))
	if len(paths) != 1 {
		t.Fatalf("state.json of run %s: found %q", runID, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	st := &state{dir: filepath.Dir(paths[0])}
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitRunResult waits until the run completed and returns its result (a
// string for an agent without an output schema).
func waitRunResult(t *testing.T, wd *world, runID string) string {
	t.Helper()
	var st *state
	waitFor(t, "the run to complete", func() bool {
		st = readState(t, wd, runID)
		return st.State == "completed" || st.State == "failed" || st.State == "stopped"
	})
	b, err := os.ReadFile(filepath.Join(st.dir, "result.json"))
	if err != nil {
		t.Fatalf("run %s ended %s without a result: %v", runID, st.State, err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("result.json of run %s (%s): %v\n%s", runID, st.State, err, b)
	}
	return s
}

// The probe registers with the engine whichever loads first: loaded after
// it, the probe finds the registry open while it loads (the engine closes
// it only in its session_start), and a handoff works the same.
func TestHandoffWithTheProbeLoadedAfterTheEngine(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.probeLast = true
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	if l := o.handOff(t, "h1"); l.SessionFile != o.attempt.SessionFile {
		t.Fatalf("launch of %s, want %s", l.SessionFile, o.attempt.SessionFile)
	}
}

// Started the way wrap starts Pi when it can (the probe a hidden inline
// extension of the launcher), the probe registers and hands off the same,
// and the launch names the Pi entry the owner runs.
func TestHandoffThroughTheLauncher(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.viaLauncher = true
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	entry, _ := filepath.EvalSymlinks(wd.agent.Pi.Bin)
	if l.SessionFile != o.attempt.SessionFile || l.Entrypoint != entry {
		t.Fatalf("launch of %s with entrypoint %s, want %s and %s", l.SessionFile, l.Entrypoint, o.attempt.SessionFile, entry)
	}
}

// A handoff the wrapper withdraws before the turn boundary changes
// nothing: the turn goes on locally and the agent finishes there. A second
// order for the same attempt meanwhile is refused as busy (one launch per
// handoff).
func TestHandoffWithdrawnBeforeTheBoundary(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	ctx := context.Background()
	ch := o.order(ctx, "h1")
	o.tm.WaitText(t, holding, long)

	var refused *control.HandoffRefused
	if _, err := o.link.Handoff(ctx, control.HandoffOrder{ID: "h2", RunID: o.attempt.RunID, SessionID: o.attempt.SessionID}); !errors.As(err, &refused) || refused.Code != control.HandoffErrBusy {
		t.Fatalf("a second order for the attempt: %v, want refused as busy", err)
	}
	r, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackAborted})
	if err != nil {
		t.Fatal(err)
	}
	if r.Transferred || r.Continued {
		t.Fatalf("resumed %+v after a withdrawn order", r)
	}
	var cancelled *control.HandoffCancelled
	if res := <-ch; !errors.As(res.err, &cancelled) {
		t.Fatalf("the withdrawn order's Handoff returned %+v", res)
	}
	o.openGate(t)
	if got := waitRunResult(t, wd, o.attempt.RunID); got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q, want the agent's own second turn", got)
	}
	o.tm.WaitFor(t, "the status line to clear", long, func(s string) bool { return !strings.Contains(s, "finder: ") })
}

// A launch that fails (or is cancelled before the pane runs) gives the
// session back untransferred: the owner resumes it and, since its turn was
// cut mid-task, continues it locally; the workflow completes there.
func TestFailedLaunchRestoresLocalOwnership(t *testing.T) {
	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	ctx := context.Background()
	l := o.handOff(t, "h1")
	r, err := o.link.Handback(ctx, "h1", control.Handback{Reason: control.HandbackFailed, Error: "the pane did not start"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Transferred || !r.Continued || r.Error != "" {
		t.Fatalf("resumed %+v, want untransferred and continued locally", r)
	}
	if got := waitRunResult(t, wd, o.attempt.RunID); got != localReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, localReply)
	}
	es := transcript(t, l.SessionFile)
	if last := es[len(es)-1]; last.Text != localReply {
		t.Fatalf("the session file should end with the local continuation: %s", roles(es))
	}
	for _, e := range es {
		if e.Text == paneReply {
			t.Fatalf("no pane ran, yet the transcript has its reply: %s", roles(es))
		}
	}
}

// Seed 001: "If the last assistant message … ended on a tool call without
// the expected result, the workflow asks the local session to continue."
// The pane's Pi calls the bridged tool and dies before its result (a
// crash, double Ctrl-C): the handback, exited after working, does not say
// needs_continue (the pane worked), yet the owner finds the reply ending
// on a tool call and continues locally; the continuation asks the model
// with a result for that call (a provider refuses a call without one), and
// the workflow completes with the local reply.
func TestPaneDeadOnAToolCallContinuesLocally(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.paneCallsTool = true
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	pane := runPane(t, wd, l)
	waitFor(t, "the pane's tool call in the session file", func() bool {
		es := transcript(t, l.SessionFile)
		return len(es) > 0 && es[len(es)-1].Role == "assistant" && slices.Contains(es[len(es)-1].ToolCalls, "herdr_lookup")
	})
	pane.Close()
	es := transcript(t, l.SessionFile)
	if last := es[len(es)-1]; last.Role != "assistant" || !slices.Contains(last.ToolCalls, "herdr_lookup") {
		t.Fatalf("the pane's Pi should have died on its tool call: %s", roles(es))
	}
	r, err := o.link.Handback(context.Background(), "h1", control.Handback{Reason: control.HandbackExited, Transferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Transferred || !r.Continued || r.Error != "" {
		t.Fatalf("resumed %+v, want transferred and continued", r)
	}
	if got := waitRunResult(t, wd, o.attempt.RunID); got != localReply {
		t.Fatalf("the workflow's result is %q, want the local continuation %q", got, localReply)
	}
	var cont *fakellm.Request
	for _, req := range wd.llm.Requests() {
		if strings.Contains(req.LastUser(), "Carry on with the task from where the session now stands") {
			cont = &req
			break
		}
	}
	if cont == nil {
		t.Fatal("no local continuation reached the model")
	}
	if !answered(t, cont.Body, paneToolCall) {
		t.Fatalf("the local continuation asks the model with the pane's tool call %s unanswered:\n%s", paneToolCall, cont.Body)
	}
}

// answered says whether a request's messages carry a tool result for the
// tool call id, after the assistant message that made it.
func answered(t *testing.T, body []byte, id string) bool {
	t.Helper()
	var b struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v", err)
	}
	called := false
	for _, m := range b.Messages {
		for _, c := range m.ToolCalls {
			called = called || c.ID == id
		}
		if called && m.Role == "tool" && m.ToolCallID == id {
			return true
		}
	}
	return false
}

// Seed 001: the handoff preserves the worktree cwd. An agent the workflow
// runs in a worktree (withWorktree) is handed off into that worktree, not
// the project: the launch's cwd is the attempt's, under the run's
// worktrees, and the pane's Pi, started there, tells its model so.
func TestHandoffOfAWorktreeAgentKeepsItsWorktree(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.script = fmt.Sprintf(`return await withWorktree("wt", async () => agent(%q, { label: %q }));`, agentTask, agentLabel)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = wd.agent.Project
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	setup := readState(t, wd, o.attempt.RunID).attempt(t, o.attempt.SessionID).Setup
	if setup.Cwd == wd.agent.Project || !strings.Contains(setup.Cwd, string(filepath.Separator)+"worktrees"+string(filepath.Separator)) {
		t.Fatalf("the engine prepared the agent in %s, not a worktree of the run (the test's set-up did not take)", setup.Cwd)
	}
	if l.Cwd != setup.Cwd {
		t.Fatalf("the launch runs in %s, the agent's worktree is %s", l.Cwd, setup.Cwd)
	}
	pane := runPane(t, wd, l)
	defer pane.Close()
	waitFor(t, "the pane's model request", func() bool {
		return slices.ContainsFunc(wd.llm.Requests(), func(r fakellm.Request) bool {
			return strings.Contains(r.LastUser(), "Carry on with the workflow task") && strings.Contains(r.System(), setup.Cwd)
		})
	})
}
