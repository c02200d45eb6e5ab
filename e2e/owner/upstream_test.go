package owner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// The launch describes what the engine's own Herdr extension (@piewf/herdr)
// would run from the same prepared session: the same flags in the same
// order, word for word once paths are named by role. Both carry the
// engine's tool-timing extension, last: theirs as the source text of its
// factory in their inline extensions module (with the prepared inline
// factories before it), ours as a module that imports that factory from
// the engine (after our inline extensions module, when the engine
// prepared any). This agent has no prepared inline factory, so their
// module holds the timing factory alone and stands where our timing
// module stands. The differences are deliberate: herdr-pi starts the Pi
// the owner runs (the engine's extension picks the engine's own copy),
// does not set the extension's pane-reporting variable (the pane runs
// under herdr-pi wrap), and says "continue" in its own words.
func TestLaunchMatchesTheEnginesHerdrExtension(t *testing.T) {
	theirs, theirEnv, theirEntry, theirInline := upstreamLaunch(t)

	wd := newWorld(t, "gate")
	o := startOwner(t, wd, wd.ownerEnv(herdrEnv...))
	l := o.handOff(t, "h1")
	var ours []string
	for _, a := range l.Argv {
		switch {
		case a.ToolBridge:
			ours = append(ours, "<tool-bridge>")
		case a.File != "":
			ours = append(ours, "<"+strings.TrimSuffix(strings.TrimSuffix(a.File, ".md"), ".mjs")+">")
		case a.Text == l.SessionFile:
			ours = append(ours, "<session>")
		case strings.HasPrefix(a.Text, "You now run in a Herdr pane."):
			ours = append(ours, "<continue>")
		default:
			ours = append(ours, a.Text)
		}
	}

	// Executable: the same node; entrypoint: theirs is the engine's Pi.
	if ours[0] != theirs[0] {
		t.Errorf("executable: ours %s, theirs %s", ours[0], theirs[0])
	}
	if !strings.Contains(theirEntry, filepath.Join("workflows", "node_modules")) || ours[1] != l.Entrypoint || strings.Contains(l.Entrypoint, "workflows") {
		t.Errorf("entrypoints: ours %s (want the owner's Pi), theirs %s (the engine's copy)", ours[1], theirEntry)
	}
	// Their inline module is the engine's timing factory alone (no
	// inline factory was prepared: ours carries no inline module).
	if slices.Contains(ours, "<inline-extensions>") {
		t.Fatalf("the engine prepared inline extensions for this agent; the comparison below assumes none: %q", ours)
	}
	if !strings.Contains(theirInline, `"pi-workflows:tool-timing"`) || strings.Count(theirInline, "tool_execution_end") != 1 {
		t.Errorf("their inline extensions module is not the engine's timing factory alone:\n%s", theirInline)
	}
	want := slices.Clone(theirs[2:])
	if i := slices.Index(want, "<inline-extensions>"); i > 0 && want[i-1] == "--extension" {
		want[i] = "<tool-timing>"
	} else {
		t.Errorf("the engine's extension carried no inline extension file: %q", theirs)
	}
	if !slices.Equal(ours[2:], want) {
		t.Errorf("launch words differ\nours:   %q\ntheirs: %q", ours[2:], want)
	}
	if len(l.Notes) != 0 {
		t.Errorf("the launch has notes %q", l.Notes)
	}
	if theirEnv["PI_EXTENSIBLE_WORKFLOWS_HERDR_OWNER"] != "1" || len(l.Env) == 0 || l.Env["PI_CODING_AGENT_DIR"] != wd.agent.AgentDir || !strings.HasSuffix(theirEnv["PI_CODING_AGENT_DIR"], "/agent") {
		t.Errorf("environment: ours %v, theirs %v", l.Env, theirEnv)
	}
}

// upstreamLaunch runs the same workflow in an owner with the engine's own
// Herdr extension instead of herdr-pi's probe, chooses its live action, and
// returns the command line it asked Herdr to run (words, paths by role),
// the variables it set, its entrypoint and its inline extensions module.
func upstreamLaunch(t *testing.T) (argv []string, env map[string]string, entry, inline string) {
	t.Helper()
	wd := newWorld(t, "gate")
	herdrLog := fakeHerdr(t, wd)
	ext, err := filepath.Abs(filepath.Join("testdata", "owner-tool.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := []string{wd.agent.Pi.Bin, "-e", wd.engine, "-e", upstreamHerdr(t, wd), "-e", ext}
	tm := pitest.StartTerm(t, cmd, wd.agent.With(append(herdrEnv, "HERDR_PI_TEST_TOOL_LOG="+wd.toolLog, "HERDR_PI_TEST_GATE="+wd.gate, "PATH="+filepath.Dir(herdrLog)+":"+wd.path())...), wd.agent.Project, 40, 120)
	tm.WaitFor(t, "the editor", long, func(s string) bool { return strings.Count(s, "────────") >= 2 })
	time.Sleep(500 * time.Millisecond) // no probe tells when Pi takes input; Type retries once anyway
	tm.Type(t, ownerPrompt)
	waitFor(t, "the agent's tool call", func() bool {
		return slices.ContainsFunc(wd.toolLines(), func(l string) bool { return strings.HasPrefix(l, "start alpha") })
	})
	list := actionList(agentActions(t, tm))
	if count(list, liveLabel) != 1 || list[0] != liveLabel {
		t.Fatalf("the engine's Herdr extension offers %q", list)
	}
	if err := tm.Send(keyEnter); err != nil {
		t.Fatal(err)
	}
	// The action has asked for the handoff once its list is gone.
	tm.WaitFor(t, "the action to start", long, func(s string) bool { return !strings.Contains(s, "Agent actions") })
	if err := os.WriteFile(wd.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the extension's pane command", func() bool {
		if _, err := os.Stat(herdrLog + ".command"); err == nil {
			return true
		}
		if strings.Contains(tm.Screen(), "Agent attempt action failed") {
			calls, _ := os.ReadFile(herdrLog)
			ents, _ := os.ReadDir(filepath.Dir(herdrLog))
			t.Fatalf("the engine's Herdr extension failed; herdr calls:\n%s\n%v\nscreen:\n%s", calls, ents, tm.Screen())
		}
		return false
	})
	b, err := os.ReadFile(herdrLog + ".command")
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.ReadFile(herdrLog + ".extensions")
	if err != nil {
		t.Fatalf("their inline extensions module: %v", err)
	}
	inline = string(ib)
	words := shellWords(t, strings.TrimSpace(string(b)))
	env = map[string]string{}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "/") {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = v
		words = words[1:]
	}
	entry = words[1]
	session := ""
	for i, w := range words {
		if w == "--session" && i+1 < len(words) {
			session = words[i+1]
		}
	}
	for _, w := range words {
		base := filepath.Base(w)
		switch {
		case w == session:
			argv = append(argv, "<session>")
		case strings.HasPrefix(base, "pi-herdr-tools-"):
			argv = append(argv, "<tool-bridge>")
		case strings.HasPrefix(base, "pi-herdr-extensions-"):
			argv = append(argv, "<inline-extensions>")
		case strings.HasPrefix(base, "pi-herdr-system-prompt-"):
			argv = append(argv, "<system-prompt>")
		case strings.HasPrefix(base, "pi-herdr-append-prompt-"):
			argv = append(argv, "<append-system-prompt>")
		case strings.HasPrefix(base, "pi-herdr-context-prompt-"):
			argv = append(argv, "<context>")
		case w == "Continue the current workflow task from this session.":
			argv = append(argv, "<continue>")
		default:
			argv = append(argv, w)
		}
	}
	tm.Close()
	return argv, env, entry, inline
}

// shellWords splits a command line of bare and single-quoted words (the
// only quoting the engine's Herdr extension writes).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, has := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			cur.WriteByte(c)
		case c == '\'':
			in, has = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			has = true
		case c == ' ':
			if has {
				words = append(words, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(c)
			has = true
		}
	}
	if in {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if has {
		words = append(words, cur.String())
	}
	return words
}
