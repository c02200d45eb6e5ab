package owner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
)

// Seed 001, "What the handoff preserves": the extensions and the project
// trust policy. The engine decides which extensions a workflow agent's
// session loads (its resource policy: the settings' and the role's
// extension selectors, and project-local extensions only in a trusted
// project); the pane's Pi must load exactly those. Each extension here
// registers a tool of its own, so what was loaded shows in the model
// request as the tools offered: the local agent's first request and the
// pane's first one must offer the same.

// writeToolExtension writes an extension at path that registers one tool,
// name.
func writeToolExtension(t *testing.T, path, name string) {
	t.Helper()
	src := fmt.Sprintf(`export default function (pi) {
	pi.registerTool({
		name: %[1]q,
		label: %[1]q,
		description: "The tool of the extension that registers %[1]s.",
		parameters: { type: "object", properties: {}, additionalProperties: false },
		async execute() { return { content: [{ type: "text", text: %[1]q }], details: {} }; },
	});
}
`, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// handedOffRequests hands the world's agent off, lets the pane's Pi answer
// and returns the local agent's first model request and the pane's first
// one.
func handedOffRequests(t *testing.T, wd *world) (local, pane *fakellm.Request) {
	t.Helper()
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	t.Logf("launch argv: %s", dump(l.Argv))
	p := runPane(t, wd, l)
	// On the pane's screen, the test fails with what stopped it (a dialog).
	p.WaitFor(t, "the pane's reply in the session file", long, func(string) bool {
		es := transcript(t, l.SessionFile)
		return len(es) > 0 && es[len(es)-1].Text == paneReply
	})
	p.Close()
	var lr, pr *fakellm.Request
	for _, r := range wd.llm.Requests() {
		switch u := r.LastUser(); {
		case lr == nil && strings.Contains(u, agentTask) && !r.AnsweredTool():
			lr = &r
		case pr == nil && strings.Contains(u, "Carry on with the workflow task"):
			pr = &r
		}
	}
	if lr == nil || pr == nil {
		t.Fatalf("the local agent's request (%v) or the pane's (%v) is missing", lr != nil, pr != nil)
	}
	return lr, pr
}

// tools are the names of the tools a request offers.
func tools(t *testing.T, r *fakellm.Request) []string {
	t.Helper()
	return names(asked(t, r.Body).Tools)
}

// An agent whose role narrows its extensions to one of the two the agent
// directory offers: the local session loads that one only (its tool is
// offered, the other's is not), and so must the pane's Pi, which on its own
// would discover both.
func TestThePanesPiLoadsTheExtensionsTheRoleSelected(t *testing.T) {
	wd := newWorld(t, "gate")
	wd.script = fmt.Sprintf(`return await agent(%q, { label: %q, role: "picker" });`, agentTask, agentLabel)
	writeToolExtension(t, filepath.Join(wd.agent.AgentDir, "extensions", "ext_a.js"), "tool_a")
	writeToolExtension(t, filepath.Join(wd.agent.AgentDir, "extensions", "ext_b.js"), "tool_b")
	role := "---\ndescription: Picks one extension\nextensions: [\"!*\", \"**/ext_a.js\"]\n---\nYou use tool_a.\n"
	path := filepath.Join(wd.agent.AgentDir, "pi-extensible-workflows", "roles", "picker.md")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(role), 0o600); err != nil {
		t.Fatal(err)
	}

	lr, pr := handedOffRequests(t, wd)
	local, pane := tools(t, lr), tools(t, pr)
	// The set-up took: the role's selector narrowed the local agent's
	// extensions (both tools are the owner's, so the agent may ask for
	// both; only the selected extension registers its tool).
	if !slices.Contains(local, "tool_a") || slices.Contains(local, "tool_b") {
		t.Fatalf("the local agent offers %q: want tool_a and not tool_b (the test's set-up did not take)", local)
	}
	if !slices.Equal(local, pane) {
		t.Errorf("the pane's Pi offers %q, the local agent offered %q", pane, local)
	}
}

// A project-local extension (<project>/.pi/extensions) and a project-local
// appended prompt (<project>/.pi/APPEND_SYSTEM.md) are used only in a
// trusted project. The engine takes the agent's trust from the owner's Pi
// (--approve or --no-approve here): trusted, both the local agent and the
// pane offer the extension's tool and have the prompt; untrusted, neither
// does. The tool is also pinned by the launch's tool allow-list and
// extension list; the prompt only by the pane's trust.
func TestThePanesPiTrustsTheProjectAsTheLocalAgentDid(t *testing.T) {
	for _, c := range []struct {
		flag    string
		trusted bool
	}{{"--approve", true}, {"--no-approve", false}} {
		t.Run(strings.TrimPrefix(c.flag, "--"), func(t *testing.T) {
			wd := newWorld(t, "gate")
			wd.extra = []string{c.flag}
			writeToolExtension(t, filepath.Join(wd.agent.Project, ".pi", "extensions", "ext_p.js"), "tool_p")
			const marker = "PROJECT-APPEND-MARKER: a trusted project's own words."
			if err := os.WriteFile(filepath.Join(wd.agent.Project, ".pi", "APPEND_SYSTEM.md"), []byte(marker+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}

			lr, pr := handedOffRequests(t, wd)
			local, pane := tools(t, lr), tools(t, pr)
			if slices.Contains(local, "tool_p") != c.trusted || strings.Contains(lr.System(), marker) != c.trusted {
				t.Fatalf("the local agent offers %q and its system prompt has the project's appended prompt %v: want tool_p and the prompt %v (the test's set-up did not take)\n%s",
					local, strings.Contains(lr.System(), marker), c.trusted, lr.System())
			}
			if !slices.Equal(local, pane) {
				t.Errorf("the pane's Pi offers %q, the local agent offered %q", pane, local)
			}
			if n, want := strings.Count(pr.System(), marker), strings.Count(lr.System(), marker); n != want {
				t.Errorf("the pane's system prompt has the project's appended prompt %d times, the local agent's %d:\n%s", n, want, pr.System())
			}
		})
	}
}
