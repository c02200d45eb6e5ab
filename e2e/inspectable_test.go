package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// These tests run fully inspectable mode whole: the engine's global
// settings turn it on; a real workflow owner (Pi 1.6.0, the real engine)
// runs under the real `herdr-pi wrap` in a pty; every prompt of every
// workflow agent runs in a tab of the run's workspace in the fake Herdr
// (real tmux panes), each under `herdr-pi wrap` with a real Pi 1.6.0; the
// fake model scripts every turn.

const (
	fiOwnerPrompt = "RUN-FI"
	fiFlow        = "fi-flow"
	fiTask1       = "TASK-FIND find the word"
	fiTask2       = "TASK-SEEK seek the other word"
	fiReply1      = "finder: the word is alpha"
	fiReply2      = "seeker: the word is gamma"
	fiTaskReport  = "TASK-REPORT report the word"
	fiTaskHang    = "TASK-HANG wait forever"
	fiStop        = "STOP-RUN"
	fiSubmit      = "Submit the final result now"
	fiTaskAsk     = "TASK-ASK ask which word"
	fiQuestion    = "asker: which word do you mean?\n:input_needed:"
	fiAnswer      = "ANSWER-WORD the word is epsilon"
	fiReplyAsk    = "asker: the word is epsilon"
)

// fiRig is a liveRig whose model plays fully inspectable turns.
type fiRig struct {
	*liveRig
	script string
	// longTask pads the seeker's task to this many characters.
	longTask int
	// stopRun is the run the owner's model stops when asked to (fiStop).
	stopRun atomic.Value
}

func newFIRig(t *testing.T, script string) *fiRig {
	t.Helper()
	pi := pitest.Current(t)
	fi := &fiRig{liveRig: &liveRig{t: t, engine: storetest.Engine(t)}, script: script}
	fi.llm = fakellm.Start(fi.respond)
	t.Cleanup(fi.llm.Close)
	agent := pitest.NewAgent(t, pi, fi.llm.BaseURL())
	t.Setenv("NODE_DISABLE_COMPILE_CACHE", "1")
	fi.openRig = newOpenRig(t, agent)
	fi.toolLog = filepath.Join(agent.Home, "tool.log")
	fi.gate = filepath.Join(agent.Home, "gate")
	fi.settings(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`)
	return fi
}

// settings writes the engine's global settings file and returns its path.
func (lr *liveRig) settings(text string) string {
	lr.t.Helper()
	p := filepath.Join(lr.agent.AgentDir, "pi-extensible-workflows", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		lr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		lr.t.Fatal(err)
	}
	return p
}

func (fi *fiRig) task2() string {
	if fi.longTask <= len(fiTask2) {
		return fiTask2
	}
	return fiTask2 + " " + strings.Repeat("x", fi.longTask-len(fiTask2)-1)
}

// respond: the owner runs the flow; in the panes, the finder's first
// attempt never gets an answer (its timeout retries it), its retry and
// the seeker answer, a word at a time.
func (fi *fiRig) respond(req fakellm.Request) fakellm.Reply {
	u := req.LastUser()
	switch {
	case u == fiOwnerPrompt && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow", Args: map[string]any{"name": fiFlow, "script": fi.script}}}
	case u == fiOwnerPrompt:
		return fakellm.Reply{Text: "owner: the flow runs"}
	case strings.Contains(u, fiTask1) && strings.Contains(u, "Retry attempt 2"):
		return fakellm.Reply{Text: fiReply1, WordDelay: 40 * time.Millisecond}
	case strings.Contains(u, fiTask1):
		return fakellm.Reply{Hang: true}
	case strings.Contains(u, fiTask2):
		return fakellm.Reply{Text: fiReply2, WordDelay: 40 * time.Millisecond}
	case u == fiStop && !req.AnsweredTool():
		id, _ := fi.stopRun.Load().(string)
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow_stop", Args: map[string]any{"runId": id}}}
	case u == fiStop:
		return fakellm.Reply{Text: "owner: stopped"}
	case strings.Contains(u, fiTaskReport):
		// The first turn answers in prose: the engine asks again for
		// the structured result, in a second prompt.
		return fakellm.Reply{Text: "reporter: I believe the word is delta", WordDelay: 40 * time.Millisecond}
	case strings.Contains(u, fiSubmit) && !req.AnsweredTool():
		return fakellm.Reply{Tool: &fakellm.ToolCall{Name: "workflow_result", Args: map[string]any{"word": "delta"}}}
	case strings.Contains(u, fiSubmit):
		return fakellm.Reply{Text: "reporter: submitted", WordDelay: 40 * time.Millisecond}
	case strings.Contains(u, fiTaskHang):
		return fakellm.Reply{Hang: true}
	case strings.Contains(u, fiAnswer):
		return fakellm.Reply{Text: fiReplyAsk, WordDelay: 40 * time.Millisecond}
	case strings.Contains(u, fiTaskAsk):
		return fakellm.Reply{Text: fiQuestion, WordDelay: 40 * time.Millisecond}
	}
	return fakellm.Reply{Text: "owner: noted"}
}

// start starts the fake Herdr and the owner under herdr-pi wrap, and asks
// for the flow.
func (fi *fiRig) start() {
	t := fi.t
	t.Helper()
	fi.startOwner()
	fi.owner.Type(t, fiOwnerPrompt)
	lvWait(t, "the run's state.json", func() bool {
		paths, _ := filepath.Glob(filepath.Join(fi.agent.Home, ".pi", "workflows", "projects", "*", "sessions", "*", "runs", "*", "state.json"))
		return len(paths) == 1
	})
}

// startOwner starts the fake Herdr and the owner under herdr-pi wrap.
func (fi *fiRig) startOwner() {
	fi.t.Helper()
	fi.launchOwner()
	fi.t.Cleanup(func() {
		if fi.t.Failed() {
			fi.t.Logf("Herdr calls: %q", fi.s.Methods())
		}
	})
}

// tabs are the tab.create calls so far: label → how many, and the root
// pane each opened (from the fake Herdr's replies).
func (fi *fiRig) tabs(t *testing.T) (labels []string, panes []string, workspaces []string) {
	t.Helper()
	for _, q := range lvCalls(fi.s, "tab.create") {
		p := paramsOf(t, q)
		labels = append(labels, fmt.Sprint(p["label"]))
		workspaces = append(workspaces, fmt.Sprint(p["workspace_id"]))
		var reply struct {
			Result struct {
				RootPane struct {
					PaneID string `json:"pane_id"`
				} `json:"root_pane"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(q.Reply), &reply)
		panes = append(panes, reply.Result.RootPane.PaneID)
	}
	return
}

// tabIDs are the tabs tab.create opened, in order.
func (fi *fiRig) tabIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, q := range lvCalls(fi.s, "tab.create") {
		var r struct {
			Result struct {
				Tab struct {
					TabID string `json:"tab_id"`
				} `json:"tab"`
			} `json:"result"`
		}
		_ = json.Unmarshal([]byte(q.Reply), &r)
		ids = append(ids, r.Result.Tab.TabID)
	}
	return ids
}

// firstUser is the first user message the model got from the Pi whose
// messages contain marker, and whether there was one.
func (fi *fiRig) firstUser(marker string) (string, bool) {
	for _, r := range fi.llm.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Text, marker) {
				return m.Text, true
			}
		}
	}
	return "", false
}

// The acceptance: a workflow of two agents, one of them retried, runs in
// one workspace "workflow fi-flow" (its root tab renamed alike), one tab
// per prompt — "#1 finder", "#2 seeker" and the finder's retry, "#1
// finder" again — each running a real Pi under herdr-pi wrap that reports
// to Herdr. Each pane's Pi gets the prompt the engine framed for the local
// session (Workflow/Agent/Task, the retry's state), through a prompt file;
// the seeker's 5,000-character prompt leaves the typed command short. The
// run completes with both results, the workspace closes once, and nothing
// is left behind.
func TestFullyInspectableTwoAgentsWithARetry(t *testing.T) {
	script := fmt.Sprintf(`const [a, b] = await Promise.all([agent(%q, { label: "finder", retries: 1, timeoutMs: 45000 }), agent(TASK2, { label: "seeker" })]); return a + " | " + b;`, fiTask1)
	fi := newFIRig(t, "")
	fi.longTask = 5000
	fi.script = "const TASK2 = " + jsString(fi.task2()) + "; " + script
	fi.start()

	if got := fi.result(); got != fiReply1+" | "+fiReply2 {
		t.Fatalf("the run's result is %q", got)
	}
	// One workspace, labelled for the flow, its root tab renamed alike.
	creates := lvCalls(fi.s, "workspace.create")
	if len(creates) != 1 || paramsOf(t, creates[0])["label"] != "workflow "+fiFlow {
		t.Fatalf("workspace.create calls %v", creates)
	}
	var created struct {
		Result struct {
			Workspace struct {
				WorkspaceID string `json:"workspace_id"`
			} `json:"workspace"`
			Tab struct {
				TabID string `json:"tab_id"`
			} `json:"tab"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(creates[0].Reply), &created); err != nil || created.Result.Workspace.WorkspaceID == "" {
		t.Fatalf("workspace.create reply %q: %v", creates[0].Reply, err)
	}
	ws := created.Result.Workspace.WorkspaceID
	renames := lvCalls(fi.s, "tab.rename")
	if len(renames) != 1 || paramsOf(t, renames[0])["tab_id"] != created.Result.Tab.TabID || paramsOf(t, renames[0])["label"] != "workflow "+fiFlow {
		t.Fatalf("tab.rename calls %v", renames)
	}
	// Three tabs there: the finder's two attempts and the seeker.
	// The dashboard numbers the agents in the order they start, which the
	// parallel flow leaves open.
	labels, panes, wss := fi.tabs(t)
	count := map[string]int{}
	for _, l := range labels {
		count[l]++
	}
	if len(labels) != 3 || !(count["#1 finder"] == 2 && count["#2 seeker"] == 1 || count["#2 finder"] == 2 && count["#1 seeker"] == 1) {
		t.Fatalf("tab labels %q", labels)
	}
	for i, w := range wss {
		if w != ws {
			t.Fatalf("tab %d (%s) opened in workspace %s, not the run's %s", i, labels[i], w, ws)
		}
	}
	// Each tab ran a real Pi under herdr-pi wrap, which reported to Herdr.
	for i, p := range panes {
		if len(fi.s.Reports(p)) == 0 {
			t.Errorf("pane %s (%s) never reported an agent state", p, labels[i])
		}
	}
	// Typed into each pane: the short command that runs its command file.
	in := fi.s.Inputs()
	if len(in) != 3 {
		t.Fatalf("typed into %d panes, want 3: %+v", len(in), in)
	}
	for _, x := range in {
		if len(x.Text) >= 4096 || !strings.HasPrefix(x.Text, "exec sh '") {
			t.Fatalf("typed %d characters into pane %s: %.200q", len(x.Text), x.PaneID, x.Text)
		}
	}
	// The panes' Pis got the engine's framed prompts, in a prompt file.
	first, ok := fi.firstUser(fiTask1)
	if !ok || !strings.Contains(first, "Workflow: "+fiFlow) || !strings.Contains(first, "Agent: finder") || !strings.Contains(first, "Task:\n"+fiTask1) ||
		!strings.Contains(first, "<file name=") || !strings.Contains(first, "prompt.md") {
		t.Fatalf("the finder's pane got %q", first)
	}
	retry, ok := fi.firstUser("Retry attempt 2")
	if !ok || !strings.Contains(retry, fiTask1) {
		t.Fatalf("the finder's retry got %q", retry)
	}
	long, ok := fi.firstUser(fiTask2)
	if !ok || !strings.Contains(long, fi.task2()) || !strings.Contains(long, "prompt.md") {
		t.Fatalf("the seeker's pane did not get its %d-character task whole (%d characters)", len(fi.task2()), len(long))
	}
	// The attempts ran on the Herdr transport; the owner's transcripts
	// hold the panes' turns.
	st := fi.run()
	if got := fi.transports(t); !slices.Equal(got, []string{"herdr", "herdr", "herdr"}) {
		t.Fatalf("attempt transports %q", got)
	}
	if ts := lvTranscript(t, st.sessionFile(t, "seeker")); len(ts) == 0 || ts[len(ts)-1].Text != fiReply2 {
		t.Fatalf("the seeker's transcript %+v", ts)
	}
	// The workspace closes once, when the run completed; every tab was
	// closed after its turn.
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	closes := lvCalls(fi.s, "workspace.close")
	if len(closes) != 1 || paramsOf(t, closes[0])["workspace_id"] != ws {
		t.Fatalf("workspace.close calls %v", closes)
	}
	if c := lvCalls(fi.s, "tab.close"); len(c) != 3 {
		t.Fatalf("tab.close calls %d, want one per turn", len(c))
	}
	fi.owner.WaitFor(t, "the status lines to clear", lvLong, func(s string) bool {
		for _, who := range []string{"finder", "seeker"} {
			for _, st := range []string{"opening a Herdr", "working", "idle", "completed"} {
				if strings.Contains(s, who+": "+st) {
					return false
				}
			}
		}
		return true
	})
	fi.quitOwner()
	if c := lvCalls(fi.s, "workspace.close"); len(c) != 1 {
		t.Fatalf("workspace.close calls after /quit: %d", len(c))
	}
	fi.wantNothingLeft()
}

// transports are the transports of every attempt of the run, in order.
func (fi *fiRig) transports(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fi.run().dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Agents []struct {
			AttemptDetails []struct {
				Transport string `json:"transport"`
			} `json:"attemptDetails"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range st.Agents {
		for _, d := range a.AttemptDetails {
			out = append(out, d.Transport)
		}
	}
	return out
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sequence is the Herdr requests that open and close tabs and
// workspaces, in order, with their main parameter.
func (fi *fiRig) sequence(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, q := range fi.s.Requests() {
		p := map[string]any{}
		_ = json.Unmarshal(q.Params, &p)
		switch q.Method {
		case "workspace.create":
			out = append(out, "workspace.create "+fmt.Sprint(p["label"]))
		case "tab.create":
			out = append(out, "tab.create "+fmt.Sprint(p["label"]))
		case "tab.close":
			out = append(out, "tab.close "+fmt.Sprint(p["tab_id"]))
		case "workspace.close":
			out = append(out, "workspace.close "+fmt.Sprint(p["workspace_id"]))
		}
	}
	return out
}

// waitPaneAsked waits until the model was asked by a pane's Pi for a task.
func (fi *fiRig) waitPaneAsked(marker string) {
	fi.t.Helper()
	lvWait(fi.t, "a pane's Pi to ask the model about "+marker, func() bool { _, ok := fi.firstUser(marker); return ok })
}

// §10.3, sequential prompts: an agent with an output schema that answers
// its first prompt in prose gets a second prompt from the engine; each
// prompt runs in a tab of its own, opened only once the one before was
// closed (its session suspended for the turn and resumed after it), the
// second pane's Pi continuing the same transcript; the structured result
// comes through the bridged workflow_result tool; then the workspace
// closes.
func TestFullyInspectableSequentialPrompts(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`const r = await agent(%q, { label: "reporter", outputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } }); return r.word;`, fiTaskReport))
	fi.start()
	if got := fi.result(); got != "delta" {
		t.Fatalf("the run's result is %q", got)
	}
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	labels, _, _ := fi.tabs(t)
	tabs := lvCalls(fi.s, "tab.create")
	ids := fi.tabIDs(t)
	ws := lvCalls(fi.s, "workspace.create")
	if len(tabs) != 2 || len(ws) != 1 || labels[0] != "#1 reporter" || labels[1] != "#1 reporter" {
		t.Fatalf("tabs %q, workspaces %d", labels, len(ws))
	}
	var wsID struct {
		Result struct {
			Workspace struct {
				WorkspaceID string `json:"workspace_id"`
			} `json:"workspace"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(ws[0].Reply), &wsID)
	want := []string{"workspace.create workflow " + fiFlow, "tab.create #1 reporter", "tab.close " + ids[0], "tab.create #1 reporter", "tab.close " + ids[1],
		"workspace.close " + wsID.Result.Workspace.WorkspaceID}
	if got := fi.sequence(t); !slices.Equal(got, want) {
		t.Fatalf("Herdr saw %q\nwant %q", got, want)
	}
	// The second pane's Pi went on from the first turn's transcript.
	second, ok := fi.firstUser(fiSubmit)
	if !ok {
		t.Fatal("no pane's Pi was asked for the structured result")
	}
	if !slices.ContainsFunc(fi.llm.Requests(), func(r fakellm.Request) bool {
		return strings.Contains(r.LastUser(), fiSubmit) && slices.ContainsFunc(r.Messages, func(m fakellm.Message) bool {
			return m.Role == "assistant" && strings.Contains(m.Text, "I believe the word is delta")
		})
	}) {
		t.Fatalf("the second turn's Pi did not see the first turn (%q)", second)
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}

// A stopped run closes its workspace: the owner stops the run while its
// agent's turn runs in a tab; the tab closes (the turn is aborted and the
// session comes back), then the workspace; the run ends stopped.
func TestFullyInspectableStoppedRunClosesItsWorkspace(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "waiter" });`, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	lvWait(t, "the turn's tab", func() bool { return len(fi.tabIDs(t)) == 1 })
	// herdr-pi open --hold on it cannot have its --hold (the turn's tab
	// closes when the turn ends): refused, naming the flag and the tab,
	// and nothing focused — not the tab focused with --hold dropped.
	held, code := fi.herdrPi(t, "open", fi.run().ID[:8], "waiter", "--hold", "--json")
	var refusal struct {
		Format string `json:"format"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(held), &refusal); err != nil || code != 1 || refusal.Format != "herdr-pi.open-live/1" ||
		!strings.Contains(refusal.Error.Message, "this open cannot have --hold") || !strings.Contains(refusal.Error.Message, "tab "+fi.tabIDs(t)[0]) {
		t.Fatalf("open --hold on a turn's tab: exit %d (%v)\n%s", code, err, held)
	}
	validateJSON(t, docSchema(t, "open"), []byte(held))
	if f := lvCalls(fi.s, "tab.focus"); len(f) != 0 {
		t.Fatalf("open --hold, refused, focused the tab: %v", f)
	}
	// herdr-pi open on the working agent focuses its tab.
	out, code := fi.herdrPi(t, "open", fi.run().ID[:8], "waiter", "--json")
	var line lvLine
	if err := json.Unmarshal([]byte(out), &line); err != nil || code != 0 {
		t.Fatalf("open: exit %d (%v)\n%s", code, err, out)
	}
	validateJSON(t, docSchema(t, "open"), []byte(out))
	_, opened, _ := fi.tabs(t)
	tabIDs := fi.tabIDs(t)
	if line.Event != "focused" || line.PaneID != opened[0] || line.TabID != tabIDs[0] {
		t.Fatalf("open printed %+v", line)
	}
	if f := lvCalls(fi.s, "tab.focus"); len(f) != 1 || paramsOf(t, f[0])["tab_id"] != tabIDs[0] {
		t.Fatalf("tab.focus calls %v", f)
	}
	fi.stopRun.Store(fi.run().ID)
	fi.owner.Type(t, fiStop)
	lvWait(t, "the run to stop", func() bool { return fi.run().State == "stopped" })
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	got := fi.sequence(t)
	if len(got) != 4 || !strings.HasPrefix(got[1], "tab.create #1 waiter") || !strings.HasPrefix(got[2], "tab.close ") || !strings.HasPrefix(got[3], "workspace.close ") {
		t.Fatalf("Herdr saw %q", got)
	}
	_, panes, _ := fi.tabs(t)
	if ex := fi.s.WaitExited(t, panes[0], 30*time.Second); !ex.Closed {
		t.Fatalf("the turn's pane ended %+v", ex)
	}
	fi.quitOwner()
	if c := lvCalls(fi.s, "workspace.close"); len(c) != 1 {
		t.Fatalf("workspace.close calls %d", len(c))
	}
	fi.wantNothingLeft()
}

// A failed run closes its workspace too.
func TestFullyInspectableFailedRunClosesItsWorkspace(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`await agent(%q, { label: "seeker" }); throw new Error("the flow broke");`, fiTask2))
	fi.start()
	lvWait(t, "the run to fail", func() bool { return fi.run().State == "failed" })
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	got := fi.sequence(t)
	if len(got) != 4 || got[1] != "tab.create #1 seeker" || !strings.HasPrefix(got[2], "tab.close ") || !strings.HasPrefix(got[3], "workspace.close ") {
		t.Fatalf("Herdr saw %q", got)
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}

// The owner's /quit while an agent's turn runs in a tab closes everything:
// the tab, the workspace; nothing is left behind.
func TestFullyInspectableQuitClosesEverything(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "waiter" });`, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	_, panes, _ := fi.tabs(t)
	fi.quitOwner()
	fi.wantEverythingClosed(t, panes[0])
}

// wantEverythingClosed waits for the turn's pane to close and then the
// run's workspace, and checks that Herdr saw exactly the workspace and tab
// open and close, and that nothing is left in the runtime directory.
func (fi *fiRig) wantEverythingClosed(t *testing.T, pane string) {
	t.Helper()
	if ex := fi.s.WaitExited(t, pane, 30*time.Second); !ex.Closed {
		t.Fatalf("the turn's pane ended %+v", ex)
	}
	lvWait(t, "the run's workspace to close", func() bool { return len(lvCalls(fi.s, "workspace.close")) > 0 })
	got := fi.sequence(t)
	if len(got) != 4 || !strings.HasPrefix(got[2], "tab.close ") || !strings.HasPrefix(got[3], "workspace.close ") {
		t.Fatalf("Herdr saw %q", got)
	}
	fi.wantNothingLeft()
}

// A settings file fully inspectable mode cannot use is shown in the
// owner's TUI, naming the file and the key: the obsolete extensions.herdr
// shape with its migration when the owner starts, an unknown key when a
// workflow is asked for. Nothing opens in Herdr.
func TestFullyInspectableBadSettingsAreShown(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "seeker" });`, fiTask2))
	fi.settings(`{"extensions": {"herdr": {"enableFullyInspectableMode": true}}}`)
	fi.startOwner()
	file := filepath.Join(fi.agent.AgentDir, "pi-extensible-workflows", "settings.json")
	fi.owner.WaitFor(t, "the migration notice", lvLong, func(s string) bool {
		return screenSays(s, file) && screenSays(s, "old place") && screenSays(s, `move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`)
	})
	fi.settings(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true, "tabs": 2}}}`)
	fi.owner.Type(t, fiOwnerPrompt)
	fi.owner.WaitFor(t, "the unknown key's notice", lvLong, func(s string) bool {
		return screenSays(s, `unknown key "extensionSettings.herdr.tabs"`)
	})
	if m := fi.s.Methods(); slices.Contains(m, "workspace.create") || slices.Contains(m, "tab.create") {
		t.Fatalf("Herdr was asked %q", m)
	}
}

// screenSays reports whether the screen holds text, however the TUI
// wrapped it.
func screenSays(screen, text string) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strings.Contains(squeeze(screen), squeeze(text))
}

// The owner's /workflow menu for a run in fully inspectable mode (seed:
// the manual live-session action is hidden because the session is already
// in Herdr; completed-session inspection remains available), as the engine
// builds it: the seeker has finished in its tab, the waiter works in its
// own. The waiter offers no live session; the seeker offers its
// inspection.
func TestFullyInspectableMenu(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`await agent(%q, { label: "seeker" }); return await agent(%q, { label: "waiter" });`, fiTask2, fiTaskHang))
	fi.start()
	fi.waitPaneAsked(fiTaskHang)
	const live, inspect = "Open live session in Herdr pane", "Open session in Herdr pane"
	if list := lvActionList(pitest.AgentActions(t, fi.owner, fiFlow, "waiter", lvLong)); lvCount(list, live)+lvCount(list, inspect) != 0 {
		t.Fatalf("the working agent's actions %q: want neither %q nor %q", list, live, inspect)
	}
	if list := lvActionList(pitest.AgentActions(t, fi.owner, fiFlow, "seeker", lvLong)); lvCount(list, inspect) != 1 || lvCount(list, live) != 0 {
		t.Fatalf("the finished agent's actions %q: want %q once", list, inspect)
	}
	fi.quitOwner()
}

// Seed 001: the integration activates only in a Herdr-managed pane;
// outside Herdr, loading it is inert. With fully inspectable mode on in
// the global settings, an owner under herdr-pi wrap in a plain terminal
// (Herdr's socket named, but no pane: not a complete Herdr environment)
// keeps its agent on the engine's local transport: the run completes
// with the agent's reply, and Herdr is never asked for a workspace, tab
// or pane.
func TestFullyInspectableModeOutsideHerdrStaysLocal(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "seeker" });`, fiTask2))
	fi.outside = true
	fi.start()
	if got := fi.result(); got != fiReply2 {
		t.Fatalf("the run's result is %q, want the seeker's reply %q", got, fiReply2)
	}
	if got := fi.transports(t); !slices.Equal(got, []string{"local"}) {
		t.Fatalf("attempt transports %q, want the engine's local one", got)
	}
	for _, m := range fi.s.Methods() {
		if m == "workspace.create" || m == "tab.create" || m == "pane.split" {
			t.Fatalf("outside Herdr, fully inspectable mode asked Herdr %q", fi.s.Methods())
		}
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}

// Seed 001: fully inspectable mode is set in the global workflow settings
// only. The same setting in the project's settings file (where the engine
// reads its project settings, in the directory the owner and its agents
// work in) leaves it off: the agent works in the owner and no workspace,
// tab or pane opens.
func TestFullyInspectableModeIsNotTakenFromTheProject(t *testing.T) {
	fi := newFIRig(t, fmt.Sprintf(`return await agent(%q, { label: "seeker" });`, fiTask2))
	fi.settings(`{}`)
	project := filepath.Join(fi.agent.Project, ".pi", "pi-extensible-workflows", "settings.json")
	if err := os.MkdirAll(filepath.Dir(project), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(project, []byte(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fi.start()
	if got := fi.result(); got != fiReply2 {
		t.Fatalf("the run's result is %q, want the seeker's reply %q", got, fiReply2)
	}
	for _, m := range fi.s.Methods() {
		if m == "workspace.create" || m == "tab.create" || m == "pane.split" {
			t.Fatalf("a project settings file turned fully inspectable mode on: Herdr was asked %q", fi.s.Methods())
		}
	}
	fi.quitOwner()
	fi.wantNothingLeft()
}
