package owner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/probe"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// These tests run a real workflow owner: Pi 1.6.0 with the real workflow
// engine (pi-extensible-workflows 5.7.0) and herdr-pi's probe, against the
// fake model, with a control server standing in for `herdr-pi wrap` (the
// wrapper's Go handoff code is not under test here: the stand-in plays its
// part of the owner link by hand).

// The texts the fake model keys on.
const (
	ownerPrompt = "RUN-FLOW"
	agentTask   = "TASK-LOOKUP find the word"
	flowName    = "handoff-flow"
	agentLabel  = "finder"
	paneReply   = "pane: the word is alpha"
	localReply  = "local: finished after the handback"
	agentReply  = "agent: finished locally"
	// paneChat is what a person types in a pane whose Pi has nothing to
	// carry on with; paneChatReply the pane's model's answer.
	paneChat      = "PANE-CHAT what else?"
	paneChatReply = "pane: nothing else, the task is done"
	// paneToolCall is the id of the pane's tool call (paneCallsTool).
	paneToolCall = "call_pane_lookup"
)

// flowScript is the workflow: one agent with the owner-only tool.
var flowScript = fmt.Sprintf(`return await agent(%q, { label: %q });`, agentTask, agentLabel)

// world is one owner set-up: the fake model, the stand-in wrapper, the
// owner-only tool's log and gate.
type world struct {
	t      *testing.T
	agent  *pitest.Agent
	engine string
	llm    *fakellm.Server
	w      *standIn

	toolLog string
	gate    string
	// toolMode is the mode the agent's first tool call asks for.
	toolMode string
	// extra are more Pi arguments, after the engine's.
	extra []string
	// paneHangs makes the model never answer the pane's Pi (so a test can
	// abort its turn).
	paneHangs bool
	// viaLauncher starts Pi the way wrap does when it can: through the
	// probe's launcher, the probe a hidden inline extension.
	viaLauncher bool
	// probeLast loads the probe after the engine (as an extension loaded
	// from settings or Pi's inline extensions may come), not first.
	probeLast bool
	// script replaces flowScript when set.
	script string
	// paneCallsTool makes the pane's model answer with a call of the
	// bridged tool, and the pane's stub of it never return.
	paneCallsTool bool
	// paneToolAnswers makes that stub answer the call at once instead.
	paneToolAnswers bool
	// finalHeld, when set, holds the agent's last reply (the one after its
	// tool's result) until it is closed.
	finalHeld chan struct{}
}

// flow is the workflow script the owner's model runs.
func (wd *world) flow() string {
	if wd.script != "" {
		return wd.script
	}
	return flowScript
}

func newWorld(t *testing.T, toolMode string) *world {
	t.Helper()
	pi := pitest.Current(t)
	engine := storetest.Engine(t)
	wd := &world{t: t, engine: engine, toolMode: toolMode}
	wd.llm = fakellm.Start(wd.respond)
	t.Cleanup(wd.llm.Close)
	wd.agent = pitest.NewAgent(t, pi, wd.llm.BaseURL())
	wd.toolLog = filepath.Join(wd.agent.Home, "tool.log")
	wd.gate = filepath.Join(wd.agent.Home, "gate")
	wd.w = newStandIn(t)
	return wd
}

// respond plays the model for the owner, the workflow agent, the pane's Pi
// and the owner's local continuation, telling them apart by their last
// user message.
func (wd *world) respond(req fakellm.Request) fakellm.Reply {
	u := req.LastUser()
	switch {
	case u == ownerPrompt && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow", Args: map[string]any{"name": flowName, "script": wd.flow()}}}
	case u == ownerPrompt:
		return fakellm.Reply{Text: "owner: the flow runs"}
	case strings.Contains(u, agentTask) && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "herdr_lookup", Args: map[string]any{"query": "alpha", "mode": wd.toolMode}}}
	case strings.Contains(u, agentTask):
		// The agent's second turn: only when no handoff cut it.
		if wd.finalHeld != nil {
			<-wd.finalHeld
		}
		return fakellm.Reply{Text: agentReply}
	case u == paneChat:
		return fakellm.Reply{Text: paneChatReply}
	case strings.Contains(u, "Carry on with the workflow task from where this session stopped") && wd.paneCallsTool && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{ID: paneToolCall, Name: "herdr_lookup", Args: map[string]any{"query": "delta"}}}
	case strings.Contains(u, "Carry on with the workflow task from where this session stopped"):
		return fakellm.Reply{Text: paneReply, Hang: wd.paneHangs}
	case strings.Contains(u, "Carry on with the task from where the session now stands"):
		return fakellm.Reply{Text: localReply}
	}
	return fakellm.Reply{Text: "owner: noted"}
}

// ownerArgv is the owner's command line as wrap would build it: the probe
// first, then the engine and the test's tool extension (which must load
// after the engine).
func (wd *world) ownerArgv(t *testing.T) []string {
	t.Helper()
	path, err := probe.Write(wd.w.run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := filepath.Abs(filepath.Join("testdata", "owner-tool.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-e", wd.engine}, wd.extra...), "-e", ext)
	if wd.viaLauncher {
		if !probe.Launchable(wd.agent.Pi.Bin) {
			t.Fatalf("the launcher cannot start %s", wd.agent.Pi.Bin)
		}
		l, err := probe.WriteLauncher(wd.w.run.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return append([]string{filepath.Join(wd.agent.Pi.NodeDir, "node")}, probe.LauncherArgs(l, wd.agent.Pi.Bin, args)...)
	}
	if wd.probeLast {
		return append(append([]string{wd.agent.Pi.Bin}, args...), "-e", path)
	}
	return append([]string{wd.agent.Pi.Bin}, probe.Inject(path, args)...)
}

func (wd *world) ownerEnv(extra ...string) []string {
	return wd.agent.With(append(append(wd.w.run.Env(),
		"HERDR_PI_TEST_TOOL_LOG="+wd.toolLog, "HERDR_PI_TEST_GATE="+wd.gate), extra...)...)
}

// path is the PATH the owner runs with.
func (wd *world) path() string {
	for _, e := range wd.agent.Env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			return p
		}
	}
	return ""
}

// upstreamHerdr is the entry of the engine's own Herdr extension
// (@piewf/herdr), installed with the engine.
func upstreamHerdr(t *testing.T, wd *world) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(wd.engine)))), "extensions", "herdr", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the engine's Herdr extension: %v", err)
	}
	return p
}

// fakeHerdr puts a `herdr` command on a directory of its own that logs its
// arguments (one call a line) and answers what the engine's Herdr extension
// asks for a split pane; `pane run` also keeps a copy of the command file
// the text names (log.command, which appears whole and last) and of the
// inline extensions module that command names (log.extensions). It
// returns the log's path (in that directory).
func fakeHerdr(t *testing.T, wd *world) string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "herdr.log")
	script := `#!/bin/sh
printf '%s
' "$*" >> ` + log + `
case "$1 $2" in
"pane layout") echo '{"result":{"layout":{"panes":[{"pane_id":"w1:p1","rect":{"width":120,"height":40}}]}}}' ;;
"pane split") echo '{"result":{"pane":{"pane_id":"w1:p2"}}}' ;;
"pane run") f=$(printf '%s' "$4" | sed -n "s/.* sh '\(.*\)'$/\1/p"); e=$(grep -o "[^' ]*pi-herdr-extensions-[^' ]*[.]mjs" "$f" | head -n 1); [ -z "$e" ] || cp "$e" ` + log + `.extensions; printf '%s' "$4" > ` + log + `.run; cp "$f" ` + log + `.command.part; mv ` + log + `.command.part ` + log + `.command; echo '{}' ;;
"pane process-info") echo '{"result":{"process_info":{"foreground_processes":[]}}}' ;;
*) echo '{}' ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "herdr"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return log
}

func (wd *world) toolLines() []string {
	b, _ := os.ReadFile(wd.toolLog)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// standIn is the test's wrapper: a control run whose owner link the test
// drives, recording what the owner says unasked.
type standIn struct {
	run *control.Run

	mu     sync.Mutex
	link   *control.OwnerLink
	said   []control.OwnerMessage
	events chan control.OwnerMessage
	probe  []control.Event
}

func newStandIn(t *testing.T) *standIn {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "hpo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	s := &standIn{events: make(chan control.OwnerMessage, 256)}
	s.run, err = control.Start(control.RunConfig{RuntimeBase: filepath.Join(base, "rt"), Events: s, Requests: s, Owner: s, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.run.Close() })
	return s
}

func (s *standIn) ProbeEvent(ev control.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probe = append(s.probe, ev)
}
func (s *standIn) Wait(control.WaitRequest) error { return nil }
func (s *standIn) Status() control.Status         { return control.Status{} }

func (s *standIn) OwnerEvent(l *control.OwnerLink, m control.OwnerMessage) {
	s.mu.Lock()
	if _, ok := m.(control.OwnerConnected); ok {
		s.link = l
	}
	s.said = append(s.said, m)
	s.mu.Unlock()
	s.events <- m
}

func (s *standIn) owner() *control.OwnerLink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.link
}

// next waits for the next unasked owner message that match accepts.
func (s *standIn) next(t *testing.T, what string, timeout time.Duration, match func(control.OwnerMessage) bool) control.OwnerMessage {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-s.events:
			if match(m) {
				return m
			}
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("no %s within %v; the owner said %s", what, timeout, dump(s.said))
			return nil
		}
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
