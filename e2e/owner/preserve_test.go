package owner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Seed 001, "What the handoff preserves": the model and thinking level,
// the allowed built-in and custom tools, the system prompt, the appended
// prompt, the selected context files and skills. The pane's Pi must ask
// the model exactly as the local agent did, so this compares the model
// requests themselves — the local agent's first one and the pane's first
// one — rather than the launch's words: a flag the pane's Pi reads
// differently, a prompt that goes twice or not at all, shows here.
//
// The agent runs a role (its prompt is the engine's appended prompt; its
// model carries a thinking level; it selects a skill, so the agent has a
// resource policy, and only the context file of its directory), in a project
// with an AGENTS.md, with another in the agent directory and two skills
// there, one the role's.
func TestThePanesPiAsksTheModelAsTheLocalAgentDid(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.script = fmt.Sprintf(`return await agent(%q, { label: %q, role: "scout" });`, agentTask, agentLabel)
	const (
		contextMarker = "CONTEXT-MARKER: indent with tabs in this project."
		roleMarker    = "ROLE-MARKER: you are a careful scout."
		skillMarker   = "SKILL-MARKER finds words in indexes"
		globalMarker  = "GLOBAL-CONTEXT-MARKER: not for this role."
		otherSkill    = "OTHER-SKILL-MARKER lists nothing"
	)
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(wd.agent.Project, "AGENTS.md"), contextMarker+"\n")
	// The role selects the cwd's context file only: the global one stays out.
	write(filepath.Join(wd.agent.AgentDir, "AGENTS.md"), globalMarker+"\n")
	write(filepath.Join(wd.agent.AgentDir, "skills", "marker-skill", "SKILL.md"),
		"---\nname: marker-skill\ndescription: "+skillMarker+"\n---\nLook the word up in the index.\n")
	write(filepath.Join(wd.agent.AgentDir, "skills", "other-skill", "SKILL.md"),
		"---\nname: other-skill\ndescription: "+otherSkill+"\n---\nNot selected by the role.\n")
	write(filepath.Join(wd.agent.AgentDir, "pi-extensible-workflows", "roles", "scout.md"),
		"---\ndescription: Scout for the handoff test\nmodel: fake/fake-model:high\nskills: [marker-skill]\ncontextFiles: [cwd]\n---\n"+roleMarker+"\n")
	// A model that reasons, so its thinking level reaches the request.
	models := map[string]any{"providers": map[string]any{"fake": map[string]any{
		"baseUrl": wd.llm.BaseURL(), "api": "openai-completions", "apiKey": "fake-key",
		"models": []any{map[string]any{"id": "fake-model", "name": "Fake Model", "reasoning": true, "contextWindow": 32000, "maxTokens": 4096}},
	}}}
	b, err := json.Marshal(models)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(wd.agent.AgentDir, "models.json"), string(b))

	local, remote := handedOffRequests(t, wd)
	// The set-up took: the local agent's request has what the test put in.
	sys := local.System()
	for _, m := range []string{contextMarker, roleMarker, skillMarker} {
		if !strings.Contains(sys, m) {
			t.Fatalf("the local agent's system prompt lacks %q (the test's set-up did not take):\n%s", m, sys)
		}
	}
	if strings.Contains(sys, globalMarker) {
		t.Fatalf("the local agent's system prompt has the global context file its role leaves out:\n%s", sys)
	}
	lw, rw := asked(t, local.Body), asked(t, remote.Body)
	if lw.Reasoning == "" {
		t.Fatalf("the local agent asked without a thinking level: %s", local.Body)
	}
	// The owner's Pi (1.6) runs the pane while the engine's agent session
	// runs the engine's own copy of Pi (0.84): the prompts' wording and
	// layout differ by version, so what the test put in is compared, each
	// once: a flag the pane's Pi read differently would lose one or bring
	// one twice (its own context file beside the launch's, say).
	ps := remote.System()
	for _, m := range []string{contextMarker, roleMarker, skillMarker, "<location>" + filepath.Join(wd.agent.AgentDir, "skills", "marker-skill", "SKILL.md") + "</location>"} {
		if n := strings.Count(ps, m); n != 1 {
			t.Errorf("the pane's system prompt has %q %d times, want once (as the local agent's has)", m, n)
		}
	}
	if strings.Contains(ps, globalMarker) {
		t.Errorf("the pane's system prompt has the global context file the role leaves out")
	}
	// The engine 5.7 still gives the agent every skill it finds (the
	// role's selector does not narrow them): the pane must offer the same.
	if strings.Contains(sys, otherSkill) != strings.Contains(ps, otherSkill) {
		t.Errorf("the skill the role does not select: in the local agent's prompt %v, in the pane's %v", strings.Contains(sys, otherSkill), strings.Contains(ps, otherSkill))
	}
	if a, b := strings.Count(sys, "<skill>"), strings.Count(ps, "<skill>"); a != b {
		t.Errorf("the pane's system prompt lists %d skills, the local agent's %d", b, a)
	}
	if t.Failed() {
		t.Logf("local system prompt:\n%s\npane system prompt:\n%s", sys, ps)
	}
	if lw.Model != rw.Model || lw.Reasoning != rw.Reasoning {
		t.Errorf("the pane asks %s with thinking %q, the local agent asked %s with %q", rw.Model, rw.Reasoning, lw.Model, lw.Reasoning)
	}
	// Tools: the same names; the custom tool, bridged, word for word.
	if !slices.Equal(names(lw.Tools), names(rw.Tools)) {
		t.Errorf("the pane's tools %q, the local agent's %q", names(rw.Tools), names(lw.Tools))
	}
	custom := func(tools []string) string {
		for _, x := range tools {
			if strings.HasPrefix(x, "herdr_lookup ") {
				return x
			}
		}
		return ""
	}
	if c := custom(lw.Tools); c == "" || c != custom(rw.Tools) {
		t.Errorf("the bridged tool as the pane offers it:\n%s\nas the local agent did:\n%s", custom(rw.Tools), c)
	}
}

func names(tools []string) []string {
	var out []string
	for _, x := range tools {
		n, _, _ := strings.Cut(x, " ")
		out = append(out, n)
	}
	return out
}

// request is what a model request asks for, beyond its messages.
type request struct {
	Model     string
	Reasoning string
	// Tools are "name parameters-as-JSON", sorted.
	Tools []string
}

func asked(t *testing.T, body []byte) request {
	t.Helper()
	var b struct {
		Model           string `json:"model"`
		ReasoningEffort string `json:"reasoning_effort"`
		Reasoning       struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	r := request{Model: b.Model, Reasoning: b.ReasoningEffort}
	if r.Reasoning == "" {
		r.Reasoning = b.Reasoning.Effort
	}
	for _, tl := range b.Tools {
		r.Tools = append(r.Tools, tl.Function.Name+" "+tl.Function.Description+" "+string(tl.Function.Parameters))
	}
	slices.Sort(r.Tools)
	return r
}
