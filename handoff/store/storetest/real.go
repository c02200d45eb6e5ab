// Package storetest produces workflow stores for tests: real ones, written
// by the real workflow engine (pi-extensible-workflows 5.7.0) running under
// a real Pi 1.6.0 against the fake model, and synthetic ones of any size
// for benchmarks. It never imports the package under test: the fixtures
// are found by reading the engine's files directly.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// EngineEnv names the directory the engine is installed in
// (.ci/install-pi sets it; .ci/cache/workflows otherwise).
const EngineEnv = "HERDR_PI_TEST_WORKFLOWS"

// Engine returns the entry of the installed engine's core extension, the
// file to load with `pi -e`, or ends the test through testenv.Missing.
//
// Only the core is loaded, not the whole package directory: the package
// also starts the Trajectory web server, a detached process that outlives
// its Pi by minutes, and its subagent tools, which the fixtures do not use.
func Engine(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EngineEnv)
	if dir == "" {
		dir = filepath.Join(testenv.ModuleRoot(), ".ci", "cache", "workflows")
	}
	entry := filepath.Join(dir, "packages", "core", "dist", "src", "index.js")
	if _, err := os.Stat(entry); err != nil {
		testenv.Missing(t, "the workflow engine pi-extensible-workflows 5.7.0 ("+entry+")",
			"install it with `eval \"$(.ci/install-pi)\"` (needs ../shared/tools/install-workflows.sh; sets "+EngineEnv+")")
	}
	return entry
}

// Workflow names of the real fixtures.
const (
	CompletedWorkflow = "fx-complete" // agents api and docs, in parallel, both complete
	RetriedWorkflow   = "fx-retry"    // agent fixer: #1 fails after a tool call, #2 completes
	FailedWorkflow    = "fx-fail"     // agent lint fails after a tool call: the run fails
	KilledWorkflow    = "fx-killed"   // agent api hangs in its second turn; its Pi is SIGKILLed
)

// Real is a store written by the real engine.
type Real struct {
	Agent *pitest.Agent // Home holds the store, AgentDir the transcripts, Project is the owners' cwd
	// Run ids by workflow name.
	Completed, Retried, Failed, Killed string
	// KilledPID is the owner Pi that was SIGKILLed (its lease is left).
	KilledPID int
	// Took is how long producing the store took.
	Took time.Duration
}

// Home is the $HOME the store lives under.
func (r *Real) Home() string { return r.Agent.Home }

// Env is a throw-away Pi set-up with the engine and the fake model, for
// tests that start owners themselves (StartOwner).
type Env struct {
	Agent  *pitest.Agent
	Engine string
	Model  *fakellm.Server

	hung chan string // the agent prompt of every request held by a Hang reply
}

// NewEnv prepares Pi 1.6.0, the engine and a fake model whose replies
// follow the task markers in agent prompts (see respond). The server is
// closed when the test ends.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	engine := Engine(t)
	pi := pitest.Current(t)
	e := &Env{Engine: engine, hung: make(chan string, 16)}
	e.Model = fakellm.Start(e.respond)
	t.Cleanup(e.Model.Close)
	e.Agent = pitest.NewAgent(t, pi, e.Model.BaseURL())
	return e
}

// The parent prompts: the model answers each with the workflow launches of
// its plan, one foreground `workflow` tool call after another.
const (
	finishedPlan = "FIXTURE-PLAN finished"
	killedPlan   = "FIXTURE-PLAN killed"
)

type launch struct{ name, script string }

var plans = map[string][]launch{
	finishedPlan: {
		{CompletedWorkflow, `const r = await parallel("review", {
  api: () => agent("TASK-OK review the api", { label: "api" }),
  docs: () => agent("TASK-OK review the docs", { label: "docs" }),
});
return r;`},
		{RetriedWorkflow, `return await agent("TASK-RETRY fix the bug", { label: "fixer", retries: 1 });`},
		{FailedWorkflow, `return await agent("TASK-FAIL lint the code", { label: "lint" });`},
	},
	killedPlan: {
		{KilledWorkflow, `return await agent("TASK-HANG refactor the api", { label: "api" });`},
	},
}

// Replies of the fake model, also the text a fork's history holds.
const (
	ReplyOK      = "fixture: task done"
	ReplyRetried = "fixture: done on the retry"
	refusal      = "fixture: the fake model refuses this request"
	// InspectMarker in a prompt asks for ReplyInspected, streamed a word
	// every 150 ms: a turn long enough that its working reaches Herdr,
	// whose reports keep only the latest state a loaded wrapper had no
	// time to send.
	InspectMarker  = "INSPECT"
	ReplyInspected = "fixture: I looked around and fixed the bug, nothing else"
)

func count(req fakellm.Request, role string) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == role {
			n++
		}
	}
	return n
}

// respond answers the owners (by plan) and the workflow agents (by the task
// marker in their prompt). A failing agent first makes a bash tool call, so
// its transcript exists and holds history, then gets a 400 (Pi does not
// retry 4xx; the engine fails the attempt, and retries it when asked).
func (e *Env) respond(req fakellm.Request) fakellm.Reply {
	u := req.LastUser()
	if plan, ok := plans[u]; ok {
		if i := count(req, "tool"); i < len(plan) {
			return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow", Args: map[string]any{"name": plan[i].name, "script": plan[i].script, "foreground": true}}}
		}
		return fakellm.Reply{Text: "fixtures done"}
	}
	toolFirst := func(then fakellm.Reply) fakellm.Reply {
		if !req.AnsweredTool() {
			return fakellm.Reply{ToolCommand: "echo looked around"}
		}
		return then
	}
	switch {
	case strings.Contains(u, InspectMarker):
		return fakellm.Reply{Text: ReplyInspected, WordDelay: 150 * time.Millisecond}
	case strings.Contains(u, "TASK-OK"):
		return fakellm.Reply{Text: ReplyOK}
	case strings.Contains(u, "TASK-RETRY") && strings.Contains(u, "Retry attempt"):
		return fakellm.Reply{Text: ReplyRetried}
	case strings.Contains(u, "TASK-RETRY"), strings.Contains(u, "TASK-FAIL"):
		return toolFirst(fakellm.Reply{Status: 400, Text: refusal})
	case strings.Contains(u, "TASK-HANG"):
		r := toolFirst(fakellm.Reply{Hang: true})
		if r.Hang {
			select {
			case e.hung <- u:
			default:
			}
		}
		return r
	}
	return fakellm.Reply{Text: "fixture: unexpected request"}
}

// deadline bounds one Pi run of the helper: a guard against a hang, not a
// measurement (a loaded CI box takes seconds for what an idle one does in
// one).
const deadline = 3 * time.Minute

// RunFinished runs one Pi (print mode) that launches the completed, retried
// and failed workflows in the foreground and exits cleanly, so no lease is
// left. It returns the run ids by workflow name.
func (e *Env) RunFinished(t testing.TB) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Agent.Pi.Bin, "-e", e.Engine, "-p", finishedPlan)
	cmd.Env, cmd.Dir = e.Agent.Env, e.Agent.Project
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "fixtures done") {
		t.Fatalf("%s with the workflow engine: %v\n%s", e.Agent.Describe(), err, out.String())
	}
	return e.runIDs()
}

// Owner is a Pi that owns a run whose agent is held mid-attempt: its first
// turn (a tool call) is in the transcript, the model never answers the
// second.
type Owner struct {
	PID   int
	RunID string
	Env   *Env // the set-up it runs in (Env.Agent.Home holds the store)
	cmd   *exec.Cmd
	done  chan struct{}
}

// StartOwner starts the owner of the killed workflow and returns once the
// agent's transcript holds its first turn and state.json records the
// attempt. The owner is killed when the test ends, if it still runs.
func (e *Env) StartOwner(t testing.TB) *Owner {
	t.Helper()
	before := e.runIDs()
	cmd := exec.Command(e.Agent.Pi.Bin, "-e", e.Engine, "-p", killedPlan)
	cmd.Env, cmd.Dir = e.Agent.Env, e.Agent.Project
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so Kill reaches anything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &Owner{PID: cmd.Process.Pid, Env: e, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(o.done) }()
	t.Cleanup(o.Kill)

	timeout := time.After(deadline)
	select {
	case <-e.hung:
	case <-o.done:
		t.Fatalf("the owner Pi exited before its agent's second turn:\n%s", out.String())
	case <-timeout:
		o.Kill()
		t.Fatalf("the owner's agent never reached its second turn:\n%s", out.String())
	}
	// The engine records the attempt and Pi the first turn before the
	// second request goes out; wait until both are on disk.
	for {
		if id, ok := e.heldRun(before); ok {
			o.RunID = id
			return o
		}
		select {
		case <-timeout:
			o.Kill()
			t.Fatalf("the held attempt never showed up in the store")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill SIGKILLs the owner's process group (the way a crash or `kill -9`
// leaves a store: lease in place, run still running) and reaps it.
func (o *Owner) Kill() {
	select {
	case <-o.done:
		return
	default:
	}
	_ = syscall.Kill(-o.PID, syscall.SIGKILL)
	<-o.done
}

// heldRun finds the killed workflow's run, not among before, whose running
// attempt has a transcript holding a tool result.
func (e *Env) heldRun(before map[string]string) (string, bool) {
	for _, st := range e.states() {
		if st.WorkflowName != KilledWorkflow || before[KilledWorkflow] == st.ID {
			continue
		}
		for _, ag := range st.Agents {
			for _, at := range ag.AttemptDetails {
				if at.Session.Locator.SessionFile == "" {
					continue
				}
				data, err := os.ReadFile(at.Session.Locator.SessionFile)
				if err == nil && bytes.Contains(data, []byte(`"role":"toolResult"`)) {
					return st.ID, true
				}
			}
		}
	}
	return "", false
}

// MakeReal produces the four real runs in one store (two owner sessions of
// one project): completed, retried and failed by a Pi that exits cleanly,
// then killed by a Pi SIGKILLed mid-attempt. whileOwned functions run
// while that last owner is still alive, before the kill: the one moment a
// live attempt can be observed.
func MakeReal(t testing.TB, whileOwned ...func(*Owner)) *Real {
	t.Helper()
	start := time.Now()
	e := NewEnv(t)
	ids := e.RunFinished(t)
	o := e.StartOwner(t)
	for _, f := range whileOwned {
		f(o)
	}
	o.Kill()
	r := &Real{Agent: e.Agent, Completed: ids[CompletedWorkflow], Retried: ids[RetriedWorkflow], Failed: ids[FailedWorkflow],
		Killed: o.RunID, KilledPID: o.PID, Took: time.Since(start)}
	for name, id := range map[string]string{CompletedWorkflow: r.Completed, RetriedWorkflow: r.Retried, FailedWorkflow: r.Failed, KilledWorkflow: r.Killed} {
		if id == "" {
			t.Fatalf("the engine left no %s run in %s", name, e.Agent.Home)
		}
	}
	return r
}

// state is the little of state.json the helper needs to find its runs.
type state struct {
	ID           string `json:"id"`
	WorkflowName string `json:"workflowName"`
	Agents       []struct {
		AttemptDetails []struct {
			Session struct {
				Locator struct {
					SessionFile string `json:"sessionFile"`
				} `json:"locator"`
			} `json:"session"`
		} `json:"attemptDetails"`
	} `json:"agents"`
}

func (e *Env) states() []state {
	paths, _ := filepath.Glob(filepath.Join(e.Agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", "*", "state.json"))
	var out []state
	for _, p := range paths {
		var st state
		if data, err := os.ReadFile(p); err == nil && json.Unmarshal(data, &st) == nil {
			out = append(out, st)
		}
	}
	return out
}

// runIDs maps workflow names to run ids (the last one read wins).
func (e *Env) runIDs() map[string]string {
	ids := map[string]string{}
	for _, st := range e.states() {
		ids[st.WorkflowName] = st.ID
	}
	return ids
}

// String describes the fixture for failure messages.
func (r *Real) String() string {
	return fmt.Sprintf("real store in %s (completed %s, retried %s, failed %s, killed %s)", r.Agent.Home, r.Completed, r.Retried, r.Failed, r.Killed)
}
