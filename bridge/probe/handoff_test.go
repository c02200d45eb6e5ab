package probe

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"

	"github.com/herdr-pi/herdr-pi/internal/termtext"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// handoffOut is what testdata/handoff_harness.mjs prints.
type handoffOut struct {
	Error              string          `json:"error"`
	RegisteredAtLoad   int             `json:"registeredAtLoad"`
	Linked             bool            `json:"linked"`
	Registered         int             `json:"registered"`
	Keys               []string        `json:"keys"`
	Labels             []string        `json:"labels"`
	Hooks              []string        `json:"hooks"`
	Shown              []string        `json:"shown"`
	StatusLines        []string        `json:"statusLines"`
	Notes              []string        `json:"notes"`
	InspectVisible     []bool          `json:"inspectVisible"`
	LiveVisibleForeign bool            `json:"liveVisibleForeign"`
	Launch             json.RawMessage `json:"launch"`
	Quiet              []control.Arg   `json:"quiet"`
	InlineRan          []string        `json:"inlineRan"`
	Native             string          `json:"native"`
	Continuation       []bool          `json:"continuation"`
	Fits               []bool          `json:"fits"`
	LiveVisible        bool            `json:"liveVisible"`
	WrappedID          string          `json:"wrappedId"`
	Settings           []struct {
		On    bool   `json:"on"`
		Error string `json:"error"`
	} `json:"settings"`
	InspectionID string   `json:"inspectionId"`
	Reference    string   `json:"reference"`
	Results      []string `json:"results"`
	Log          []string `json:"log"`
	HeldStatus   *string  `json:"heldStatus"`
	// The timing scenario's launches: without the engine, with it, with
	// an engine whose index does not say where its factory is.
	UntimedLaunch json.RawMessage `json:"untimedLaunch"`
	TimedLaunch   json.RawMessage `json:"timedLaunch"`
	OddLaunch     json.RawMessage `json:"oddLaunch"`
	GoneRan       []string        `json:"goneRan"`
}

type ownerSink struct {
	mu   sync.Mutex
	msgs []control.OwnerMessage
	// react, when set, plays the wrapper's part for each message.
	react func(l *control.OwnerLink, m control.OwnerMessage)
}

func (s *ownerSink) OwnerEvent(l *control.OwnerLink, m control.OwnerMessage) {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	if s.react != nil {
		s.react(l, m)
	}
}

// runHandoffHarness runs the handoff module (as Write puts it beside the
// probe) under node against a real control socket with an owner sink.
func runHandoffHarness(t *testing.T, scenario string, env ...string) (handoffOut, []control.OwnerMessage) {
	return runHandoffHarnessWith(t, scenario, true, env...)
}

func runHandoffHarnessWith(t *testing.T, scenario string, withOwner bool, env ...string) (handoffOut, []control.OwnerMessage) {
	t.Helper()
	var s *ownerSink
	if withOwner {
		s = &ownerSink{}
	}
	return runHandoffHarnessSink(t, scenario, s, env...)
}

// runHandoffHarnessSink runs the harness with s as the wrapper's owner
// sink (nil: the wrapper takes no owner link).
func runHandoffHarnessSink(t *testing.T, scenario string, s *ownerSink, env ...string) (handoffOut, []control.OwnerMessage) {
	t.Helper()
	withOwner := s != nil
	bin := node(t)
	dir, _ := writtenProbe(t)
	if s == nil {
		s = &ownerSink{}
	}
	tok, _ := control.NewToken()
	probeSink := &sink{}
	cfg := control.Config{Path: filepath.Join(dir, "c.sock"), Token: tok, Events: probeSink, Requests: probeSink, Logf: t.Logf}
	if withOwner {
		cfg.Owner = s
	}
	srv, err := control.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "testdata/handoff_harness.mjs", "file://"+filepath.Join(dir, HandoffFileName))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SCENARIO=" + scenario, control.EnvSocket + "=" + srv.Path(), control.EnvToken + "=" + tok}
	if !withOwner {
		cmd.Env = append(cmd.Env, "NO_OWNER=1") // the link will not come up: do not wait for it long
	}
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.Output()
	// The link closes with node; let the server deliver what it read.
	time.Sleep(100 * time.Millisecond)
	srv.Close()
	var out handoffOut
	if jerr := json.Unmarshal(b, &out); jerr != nil || err != nil || out.Error != "" {
		t.Fatalf("harness: %v %v %s\n%s", err, jerr, out.Error, b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return out, s.msgs
}

func engineStatus(t *testing.T, msgs []control.OwnerMessage) control.EngineStatus {
	t.Helper()
	for _, m := range msgs {
		if e, ok := m.(control.EngineStatus); ok {
			return e
		}
	}
	t.Fatalf("no engine status among %#v", msgs)
	return control.EngineStatus{}
}

// When the engine loads first its registry is open while the probe loads:
// the probe registers right then, with a valid extension (the engine's
// checks: allowed keys, semver, headline), two actions and its setup hooks
// (fully inspectable at 10, live sessions last). The inspection action's visibility follows the reference's rules.
func TestHandoffRegistersWhenTheEngineLoadsFirst(t *testing.T) {
	out, msgs := runHandoffHarness(t, "engine-first")
	if out.RegisteredAtLoad != 1 || out.Registered != 1 {
		t.Fatalf("registered %d at load, %d after session_start; want once, at load", out.RegisteredAtLoad, out.Registered)
	}
	if !reflect.DeepEqual(out.Keys, []string{"agentAttemptActions", "agentSetupHooks", "description", "headline", "version"}) {
		t.Errorf("extension keys %q", out.Keys)
	}
	if !reflect.DeepEqual(out.Labels, []string{"Open session in Herdr pane", "Open live session in Herdr pane"}) {
		t.Errorf("action labels %q", out.Labels)
	}
	if !reflect.DeepEqual(out.Hooks, []string{"herdrPiFullyInspectable:10", "herdrPiLiveSessions:1000"}) {
		t.Errorf("setup hooks %q", out.Hooks)
	}
	if !out.Linked {
		t.Fatal("the wrapper never accepted the owner link")
	}
	// settled with the run's cwd; running; no session; no usable cwd; live.
	if !reflect.DeepEqual(out.InspectVisible, []bool{true, false, false, false, false}) {
		t.Errorf("inspection visible %v", out.InspectVisible)
	}
	if out.LiveVisibleForeign {
		t.Error("the live action shows for a session the probe does not hold")
	}
	if e := engineStatus(t, msgs); !e.Registered || e.Upstream || e.Error != "" {
		t.Errorf("engine status %+v", e)
	}
}

// A wrapper that takes no owner link gets no requests: the actions stay
// hidden.
func TestHandoffActionsNeedAWrapperThatTakesThem(t *testing.T) {
	out, _ := runHandoffHarnessWith(t, "engine-first", false)
	if out.Linked || out.Registered != 1 {
		t.Fatalf("linked %v, registered %d", out.Linked, out.Registered)
	}
	if !reflect.DeepEqual(out.InspectVisible, []bool{false, false, false, false, false}) {
		t.Errorf("inspection visible %v without a wrapper taking requests", out.InspectVisible)
	}
}

// Fully inspectable mode (seed: the manual live-session action is hidden
// because the session is already in Herdr; completed-session inspection
// remains available). An agent made the engine's way with the mode on runs
// on herdr-pi's transport: the menu does not offer to hand it off, and a
// settled attempt of the same run can still be inspected. With the mode
// off the same agent is offered live, so the hiding is the mode's. With
// the engine's own Herdr extension running the mode, a session left to
// herdr-pi's live hook is not offered either.
func TestHandoffLiveActionInFullyInspectableMode(t *testing.T) {
	dir := t.TempDir()
	off, _ := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+dir)
	if !off.LiveVisible || off.WrappedID != "local" || !reflect.DeepEqual(off.InspectVisible, []bool{false, true}) {
		t.Fatalf("mode off: live visible %v, transport %q, inspection visible (running, settled) %v", off.LiveVisible, off.WrappedID, off.InspectVisible)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pi-extensible-workflows"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pi-extensible-workflows", "settings.json"), []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	on, msgs := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+dir)
	if on.WrappedID != "herdr" {
		t.Fatalf("mode on: the agent runs on transport %q, not herdr-pi's", on.WrappedID)
	}
	if on.LiveVisible {
		t.Error("mode on: the live action is offered for an agent that runs in Herdr already")
	}
	if !reflect.DeepEqual(on.InspectVisible, []bool{false, true}) {
		t.Errorf("mode on: inspection visible (running, settled) %v, want a settled attempt still inspectable", on.InspectVisible)
	}
	if e := engineStatus(t, msgs); !e.FullyInspectable {
		t.Errorf("engine status %+v: the setting is on", e)
	}
	// Seed: outside Herdr the integration is inert. With the mode on, an
	// owner outside Herdr keeps its agents on the engine's local transport
	// and offers neither action (its wrapper still takes open's orders).
	outside, _ := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+dir, "OUTSIDE=1")
	if outside.WrappedID != "local" || outside.LiveVisible || !reflect.DeepEqual(outside.InspectVisible, []bool{false, false}) {
		t.Errorf("mode on outside Herdr: transport %q, live visible %v, inspection visible (running, settled) %v; want local, none", outside.WrappedID, outside.LiveVisible, outside.InspectVisible)
	}
	upstream, _ := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+dir, "UPSTREAM_HOOK=1", "HOOKS=live")
	if upstream.LiveVisible || upstream.WrappedID != "local" {
		t.Errorf("the engine's Herdr extension runs the mode: live visible %v, transport %q", upstream.LiveVisible, upstream.WrappedID)
	}
}

// paneWrapper plays the owner's wrapper for one live handoff: once the
// attempt is announced it orders the handoff, says the pane's states and
// hands it back for reason.
func paneWrapper(t *testing.T, states []string, reason string) func(*control.OwnerLink, control.OwnerMessage) {
	return func(l *control.OwnerLink, m control.OwnerMessage) {
		a, ok := m.(control.Attempt)
		if !ok || !a.Live {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !handOff(ctx, t, l, a, states...) {
				return
			}
			if _, err := l.Handback(ctx, "h1", control.Handback{Reason: reason, Transferred: true, LastStopReason: "stop"}); err != nil {
				t.Errorf("handback: %v", err)
			}
		}()
	}
}

// handOff plays the wrapper's part up to the pane: it orders handoff h1 of
// attempt a and says each pane state in turn. False when the order failed.
func handOff(ctx context.Context, t *testing.T, l *control.OwnerLink, a control.Attempt, states ...string) bool {
	if _, err := l.Handoff(ctx, control.HandoffOrder{ID: "h1", RunID: a.RunID, SessionID: a.SessionID}); err != nil {
		t.Errorf("handoff: %v", err)
		return false
	}
	for _, st := range states {
		if err := l.PaneState("h1", st); err != nil {
			t.Errorf("pane state %s: %v", st, err)
		}
	}
	return true
}

// launchedAndWorking hands a live attempt off, on a goroutine, to a pane
// that launched and works, as a wrapper would: the scenario goes on. An
// attempt that is not live is left alone.
func launchedAndWorking(t *testing.T, l *control.OwnerLink, a control.Attempt) {
	if !a.Live {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		handOff(ctx, t, l, a, control.PaneLaunched, control.PaneWorking)
	}()
}

// handBackSoon hands handoff id back, on a goroutine.
func handBackSoon(t *testing.T, l *control.OwnerLink, id string, hb control.Handback) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := l.Handback(ctx, id, hb); err != nil {
			t.Errorf("handback: %v", err)
		}
	}()
}

// The owner's status line while its attempt is handed off (seed: working,
// then idle or completed before handback; reference §5.10): working from
// the launch, then the pane's idle — completed when Herdr said done (the
// turn ended out of sight) — said again at the handback, idle after a pane
// that ended while it worked, the wait for a pane's Pi that outlived its
// pane, and cleared once the session is back.
func TestHandoffStatusLineFollowsThePane(t *testing.T) {
	start := []string{"finder: handing off at the end of this turn", "finder: opening a Herdr pane", "finder: working", "finder: working"}
	for _, c := range []struct {
		name   string
		states []string
		reason string
		want   []string
	}{
		{"idle", []string{control.PaneLaunched, control.PaneWorking, control.PaneIdle}, control.HandbackIdle, []string{"finder: idle", "finder: idle"}},
		{"done", []string{control.PaneLaunched, control.PaneWorking, control.PaneDone}, control.HandbackIdle, []string{"finder: completed", "finder: completed"}},
		{"exited while working", []string{control.PaneLaunched, control.PaneWorking}, control.HandbackExited, []string{"finder: idle"}},
		// The pane's Pi outlived its pane's close: the wait is said, and
		// how the pane's turn ended is still what the handback shows.
		{"done, then stopping its Pi", []string{control.PaneLaunched, control.PaneWorking, control.PaneDone, control.PaneStopping}, control.HandbackIdle,
			[]string{"finder: completed", "finder: handing back once its Herdr pane's Pi has stopped", "finder: completed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := runHandoffHarnessSink(t, "handed", &ownerSink{react: paneWrapper(t, c.states, c.reason)})
			if !slices.Equal(out.Log, []string{"create", "suspend", "resume"}) {
				t.Fatalf("the local session saw %q", out.Log)
			}
			want := append(append(slices.Clone(start), c.want...), "(cleared)")
			if !slices.Equal(out.StatusLines, want) {
				t.Errorf("status lines %q\nwant %q", out.StatusLines, want)
			}
		})
	}
}

// A handback after which Herdr would not close the pane (the wrapper's
// note, leftOpen) is a handback all the same: the session comes back.
// The owner's status line says what stays open and how to close it, and
// keeps saying it (the attempt goes on locally meanwhile), and a notice
// says it once: the person learns it without reading the wrapper's log.
func TestHandoffSaysWhatAHandbackLeftOpen(t *testing.T) {
	const left = "pane w1:p4 stays open in Herdr (boom): herdr-pi close r1 closes it"
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		if a, ok := m.(control.Attempt); ok && a.Live {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if !handOff(ctx, t, l, a, control.PaneLaunched, control.PaneWorking, control.PaneIdle) {
					return
				}
				if _, err := l.Handback(ctx, "h1", control.Handback{Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop", LeftOpen: left}); err != nil {
					t.Errorf("handback: %v", err)
				}
			}()
		}
	}
	out, _ := runHandoffHarnessSink(t, "handed", &ownerSink{react: react})
	if !slices.Equal(out.Log, []string{"create", "suspend", "resume"}) {
		t.Fatalf("the local session saw %q, want it resumed", out.Log)
	}
	if last := out.StatusLines[len(out.StatusLines)-1]; last != "finder: idle; "+left {
		t.Errorf("status lines %q\nwant the last %q, kept", out.StatusLines, "finder: idle; "+left)
	}
	if !slices.Equal(out.Notes, []string{"warning: finder: " + left}) {
		t.Errorf("notices %q, want one warning saying %q", out.Notes, left)
	}
}

// A handback that says the pane's Pi may still run (the wrapper could not
// stop it) leaves the local session suspended: reopening it would make two
// writers of the session file. The owner says so instead of resuming, and
// the attempt fails with the wrapper's reason.
func TestHandoffDoesNotResumeWhileThePanesPiMayRun(t *testing.T) {
	resumed := make(chan control.Resumed, 1)
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		if a, ok := m.(control.Attempt); ok && a.Live {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if !handOff(ctx, t, l, a) {
					return
				}
				res, err := l.Handback(ctx, "h1", control.Handback{Reason: control.HandbackFailed, Transferred: true, PaneRunning: true, Error: "the pane's Pi (pid 9) still runs"})
				if err != nil {
					t.Errorf("handback: %v", err)
				}
				resumed <- res
			}()
		}
	}
	out, _ := runHandoffHarnessSink(t, "handed", &ownerSink{react: react})
	if !slices.Equal(out.Log, []string{"create", "suspend"}) {
		t.Fatalf("the local session saw %q, want it left suspended", out.Log)
	}
	if res := <-resumed; !strings.Contains(res.Error, "not resumed: the pane's Pi (pid 9) still runs") {
		t.Fatalf("the owner answered %+v", res)
	}
}

// Too late: the engine closed its registry before the probe could register
// (it cannot happen with Pi's own load order, which runs every extension's
// factory before any session_start; the probe says so if it ever does).
func TestHandoffSaysWhenItIsTooLate(t *testing.T) {
	out, msgs := runHandoffHarness(t, "frozen")
	if out.Registered != 0 {
		t.Fatalf("registered %d times with a closed registry", out.Registered)
	}
	e := engineStatus(t, msgs)
	if e.Registered || !strings.Contains(e.Error, "closed its registry") {
		t.Errorf("engine status %+v", e)
	}
}

// With the engine's own Herdr extension registered too, the registry's
// action list shows herdr-pi's two actions only, and the wrapper is told
// which were hidden.
func TestHandoffHidesTheEnginesHerdrActions(t *testing.T) {
	out, msgs := runHandoffHarness(t, "upstream")
	want := []string{"herdrPiOpenLiveSession=Open live session in Herdr pane", "herdrPiOpenSession=Open session in Herdr pane"}
	if !reflect.DeepEqual(out.Shown, want) {
		t.Errorf("actions shown %q, want %q", out.Shown, want)
	}
	if e := engineStatus(t, msgs); !e.Registered || !e.Upstream || !reflect.DeepEqual(e.Hidden, []string{"openSession", "openLiveSession"}) {
		t.Errorf("engine status %+v", e)
	}
}

// The launch of a richly prepared session: every part the engine prepared
// is carried, in the order Pi reads it, and the wrapper's decoder accepts
// it as it stands.
func TestHandoffDescribesTheWholeLaunch(t *testing.T) {
	out, _ := runHandoffHarness(t, "launch")
	msg, err := control.ParseOwnerMessage(control.Message{Type: control.TypeLaunch, ID: "h1", Data: out.Launch})
	if err != nil {
		t.Fatalf("the wrapper refuses the launch: %v\n%s", err, out.Launch)
	}
	l := msg.(control.Launch)
	var words []string
	for _, a := range l.Argv[2:] {
		switch {
		case a.ToolBridge:
			words = append(words, "<bridge>")
		case a.File != "":
			words = append(words, "<"+a.File+">")
		default:
			words = append(words, a.Text)
		}
	}
	want := []string{
		"--session", "/agent/sessions/s1.jsonl", "--model", "openai/gpt:high", "--tools", "read,bash,lookup,workflow_result",
		"--system-prompt", "<system-prompt.md>", "--append-system-prompt", "<append-system-prompt.md>",
		"--append-system-prompt", "<context.md>", "--no-context-files",
		"--no-skills", "--skill", "/skills/a", "--skill", "/skills/shared", "--skill", "/skills/b",
		"--no-extensions", "--extension", "/ext/one.ts", "--extension", "/ext/two.ts", "--extension", "<bridge>",
		"--extension", "<inline-extensions.mjs>", "--no-approve",
		"You now run in a Herdr pane. Carry on with the workflow task from where this session stopped.",
	}
	if !reflect.DeepEqual(words, want) {
		t.Errorf("argv\n got %q\nwant %q", words, want)
	}
	files := map[string]string{}
	for _, f := range l.Files {
		files[f.Name] = f.Content
	}
	if files["system-prompt.md"] != "You review." || files["append-system-prompt.md"] != "Be brief." ||
		!strings.Contains(files["context.md"], "/work/proj/AGENTS.md") || !strings.Contains(files["context.md"], "Use tabs.") {
		t.Errorf("files %q", files)
	}
	if l.Cwd != "/work/proj" || l.Env["PI_CODING_AGENT_DIR"] != "/agent" || l.Label != "reviewer" || l.SessionLabel != "flow:reviewer:attempt-2" ||
		l.Attempt != 2 || l.TUIIndex != 3 || !l.NeedsContinue || l.LastStopReason != "toolUse" || l.Model != "openai/gpt:high" {
		t.Errorf("launch %+v", l)
	}
	if len(l.Tools) != 2 || l.Tools[0].Name != "lookup" || l.Tools[0].PromptSnippet != "lookup: a word" || len(l.Tools[0].PromptGuidelines) != 1 || l.Tools[1].Name != "workflow_result" {
		t.Errorf("tools %+v", l.Tools)
	}
	// Without a policy, prompts or tools: a system prompt path, no files,
	// no bridge, --no-tools, no continue message; the skills the session
	// loaded still go along (without --no-skills).
	var quiet []string
	for _, a := range out.Quiet[2:] {
		quiet = append(quiet, a.Text)
	}
	if want := []string{"--session", "/agent/sessions/s1.jsonl", "--model", "openai/gpt:high", "--no-tools", "--system-prompt", "/agent/SYSTEM.md", "--skill", "/skills/shared", "--skill", "/skills/b"}; !reflect.DeepEqual(quiet, want) {
		t.Errorf("quiet argv %q, want %q", quiet, want)
	}
	if !reflect.DeepEqual(out.InlineRan, []string{"session_start", "agent_start"}) {
		t.Errorf("the inline extensions module ran %q", out.InlineRan)
	}
	if !strings.Contains(out.Native, "native code") {
		t.Errorf("a native inline extension: %q", out.Native)
	}
	// none, finished, aborted, tool call, cut request, provider error with text
	if !reflect.DeepEqual(out.Continuation, []bool{true, false, true, true, true, false}) {
		t.Errorf("needsContinuation %v", out.Continuation)
	}
}

// The owner link's limit (control.MaxOwnerLine) counts bytes, and the
// wrapper closes the link on a longer line, ending every handoff of that
// Pi. A launch or a bridged tool's result too long for it must be refused
// by the owner with a reason instead: measured in JavaScript characters,
// one in a script of three-byte characters passed at three times the limit.
func TestOwnerLinkMessagesAreSizedInBytes(t *testing.T) {
	out, _ := runHandoffHarness(t, "fits")
	if !reflect.DeepEqual(out.Fits, []bool{false, true}) {
		t.Fatalf("fits(18 MB of three-byte characters, 6 MB of ASCII) = %v, want [false true] (limit %d bytes)", out.Fits, control.MaxOwnerLine)
	}
}

func TestWriteAlsoPutsTheHandoffModuleBesideTheProbe(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	dir := t.TempDir()
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, HandoffFileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	b, _ := os.ReadFile(filepath.Join(dir, HandoffFileName))
	if string(b) != string(HandoffSource()) || !strings.Contains(string(Source()), `from "./`+HandoffFileName+`"`) {
		t.Error("the probe does not import the module Write puts beside it")
	}
}

// Seed: stopping or disposing the workflow closes its Herdr panes before
// the local session is disposed. Disposed while its attempt works in a
// pane, the session waits for the wrapper's handback — the pane is closed
// by then — and is disposed only after it, never beside a Pi that may
// still write its session file.
func TestDisposeWaitsForThePaneToClose(t *testing.T) {
	for _, c := range []struct{ name, idle string }{{"during a turn", "0"}, {"between turns", "1"}} {
		t.Run(c.name, func(t *testing.T) { disposeDuringHandoff(t, c.idle) })
	}
}

func disposeDuringHandoff(t *testing.T, idle string) {
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	wrapper := func(l *control.OwnerLink, m control.OwnerMessage) {
		switch m := m.(type) {
		case control.Attempt:
			launchedAndWorking(t, l, m)
		case control.HandoffCancel:
			note("cancel")
			go func() {
				// Closing the pane takes a while; a dispose that did not
				// wait would run meanwhile.
				time.Sleep(300 * time.Millisecond)
				note("pane closed")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := l.Handback(ctx, "h1", control.Handback{Reason: control.HandbackAborted, Transferred: true, LastStopReason: "stop"}); err != nil {
					t.Errorf("handback: %v", err)
				}
			}()
		}
	}
	out, _ := runHandoffHarnessSink(t, "disposed", &ownerSink{react: wrapper}, "IDLE="+idle)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []string{"cancel", "pane closed"}) {
		t.Fatalf("the wrapper saw %q", order)
	}
	i, j := slices.Index(out.Log, "resume"), slices.Index(out.Log, "dispose")
	if !slices.Contains(out.Log, "disposing") || i < 0 || j < 0 || j < i || slices.Index(out.Log, "suspend") > i {
		t.Fatalf("the local session saw %q: disposed before the handback resumed it", out.Log)
	}
}

// A run aborted while its attempt is in a pane gives the handoff up; the
// cancel says whether that is the owner's session ending (the engine
// marks its runs interrupted as Pi shuts down), for then nobody will take
// the attempt back, or the person stopping the run.
func TestARunAbortedMidHandoffSaysWhetherItsSessionIsEnding(t *testing.T) {
	for _, c := range []struct {
		state  string
		ending bool
		why    string
	}{{"stopped", false, "the workflow run was cancelled"}, {"interrupted", true, "session ended"}} {
		t.Run(c.state, func(t *testing.T) {
			cancels := make(chan control.HandoffCancel, 1)
			wrapper := func(l *control.OwnerLink, m control.OwnerMessage) {
				switch m := m.(type) {
				case control.Attempt:
					launchedAndWorking(t, l, m)
				case control.HandoffCancel:
					cancels <- m
					handBackSoon(t, l, m.ID, control.Handback{Reason: control.HandbackAborted, Transferred: true, Error: m.Reason})
				}
			}
			runHandoffHarnessSink(t, "run-aborted", &ownerSink{react: wrapper}, "RUN_STATE="+c.state)
			select {
			case m := <-cancels:
				if m.SessionEnding != c.ending || !strings.Contains(m.Reason, c.why) {
					t.Fatalf("the cancel said %+v", m)
				}
			default:
				t.Fatal("the wrapper heard no cancel")
			}
		})
	}
}

// A cancel the wrapper never answers: after the grace the owner gives the
// handoff up, but it cannot know the pane's Pi is gone, so a launched
// pane counts as still running: the session stays suspended rather than
// reopened beside a Pi that may still write it.
func TestUnansweredCancelDoesNotReopenTheSession(t *testing.T) {
	wrapper := func(l *control.OwnerLink, m control.OwnerMessage) {
		if a, ok := m.(control.Attempt); ok {
			launchedAndWorking(t, l, a)
		} // the cancel goes unanswered
	}
	out, msgs := runHandoffHarnessSink(t, "disposed", &ownerSink{react: wrapper}, "IDLE=0", "CANCEL_GRACE=300")
	if slices.Contains(out.Log, "resume") || !slices.Contains(out.Log, "dispose") {
		t.Fatalf("the local session saw %q: reopened although the pane's Pi may still run", out.Log)
	}
	var resumed *control.Resumed
	for _, m := range msgs {
		if r, ok := m.(control.Resumed); ok {
			resumed = &r
		}
	}
	if resumed == nil || !strings.Contains(resumed.Error, "did not answer") || !strings.Contains(resumed.Error, "may still write the session") {
		t.Fatalf("the wrapper was told %+v", resumed)
	}
}

// Seed 001: a live handoff needs a transferable session file. An attempt
// whose session has none is refused as not transferable before anything
// happens to it: no launch, its session not even suspended.
func TestHandoffWithoutASessionFileIsRefused(t *testing.T) {
	done := filepath.Join(t.TempDir(), "done")
	refused := make(chan error, 1)
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		a, ok := m.(control.Attempt)
		if !ok {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := l.Handoff(ctx, control.HandoffOrder{ID: "h1", RunID: a.RunID, SessionID: a.SessionID})
			refused <- err
			os.WriteFile(done, nil, 0o600)
		}()
	}
	out, msgs := runHandoffHarnessSink(t, "handed", &ownerSink{react: react}, "NO_FILE=1", "DONE_FILE="+done)
	var r *control.HandoffRefused
	if err := <-refused; !errors.As(err, &r) || r.Code != control.HandoffErrNotTransferable {
		t.Fatalf("the order for an attempt without a session file: %v, want refused as %s", err, control.HandoffErrNotTransferable)
	}
	for _, m := range msgs {
		if _, ok := m.(control.Launch); ok {
			t.Fatalf("a launch went out: %+v", m)
		}
	}
	if !slices.Equal(out.Log, []string{"create"}) {
		t.Fatalf("the local session saw %q", out.Log)
	}
}

// fakeEnginePackage lays out a stand-in of the workflow engine's package
// under dir: package.json (its name, its index as exports "."), the index
// re-exporting the timing factory as index says, the factory's module
// (whose extension listens to the two tool events), and src/index.ts, the
// file Pi names as the source of the engine's commands. It returns that
// file.
func fakeEnginePackage(t *testing.T, dir, index string) string {
	t.Helper()
	files := map[string]string{
		"package.json":            `{"name":"pi-extensible-workflows","version":"5.7.0","type":"module","exports":{".":"./dist/src/index.js","./types":"./dist/src/types.js"}}`,
		"dist/src/index.js":       index,
		"dist/src/tool-timing.js": "export const TOOL_TIMING_ENTRY_TYPE = \"pi-workflows:tool-timing\";\nconst ext = (pi) => { pi.on(\"tool_execution_start\", () => {}); pi.on(\"tool_execution_end\", () => {}); };\nexport function createToolTimingExtension() { return ext; }\n",
		"src/index.ts":            "export {};\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "src", "index.ts")
}

func parseLaunch(t *testing.T, raw json.RawMessage) control.Launch {
	t.Helper()
	msg, err := control.ParseOwnerMessage(control.Message{Type: control.TypeLaunch, ID: "h1", Data: raw})
	if err != nil {
		t.Fatalf("the wrapper refuses the launch: %v\n%s", err, raw)
	}
	return msg.(control.Launch)
}

// The engine gives every local agent session its tool-timing extension;
// the launch gives the pane's Pi the same one: a module of ours that
// imports the engine's exported factory from the engine this owner runs
// (found through the source of its /workflow command) and installs it,
// last. When the engine cannot be located the launch goes without it and
// says why in a note for the wrapper's log.
func TestTheLaunchCarriesTheEnginesToolTiming(t *testing.T) {
	base := t.TempDir()
	engine := fakeEnginePackage(t, filepath.Join(base, "node_modules", "pi-extensible-workflows"),
		"export * from \"./types.js\";\nexport { createToolTimingExtension, TOOL_TIMING_ENTRY_TYPE } from \"./tool-timing.js\";\n")
	odd := fakeEnginePackage(t, filepath.Join(base, "odd", "pi-extensible-workflows"), "export * from \"./tool-timing.js\";\n")
	other := filepath.Join(base, "node_modules", "other", "index.js")
	if err := os.MkdirAll(filepath.Dir(other), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(other), "package.json"), []byte(`{"name":"other"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := runHandoffHarness(t, "timing", "ENGINE_SOURCE="+engine, "OTHER_SOURCE="+other, "ODD_SOURCE="+odd)

	timed := parseLaunch(t, out.TimedLaunch)
	if n := len(timed.Argv); n < 2 || timed.Argv[n-2].Text != "--extension" || timed.Argv[n-1].File != "tool-timing.mjs" {
		t.Fatalf("the launch does not end with the timing module: %+v", timed.Argv)
	}
	if len(timed.Files) != 1 || len(timed.Notes) != 0 {
		t.Fatalf("files %+v, notes %q: want the timing module alone, no note", timed.Files, timed.Notes)
	}
	module := filepath.Join(filepath.Dir(filepath.Dir(engine)), "dist", "src", "tool-timing.js")
	if src := timed.Files[0].Content; !strings.Contains(src, `"file://`+module+`"`) || !strings.Contains(src, "createToolTimingExtension") {
		t.Errorf("the timing module does not import the engine's factory from %s:\n%s", module, src)
	}
	if !reflect.DeepEqual(out.InlineRan, []string{"tool_execution_start", "tool_execution_end"}) {
		t.Errorf("the timing module installed %q, want the engine's extension", out.InlineRan)
	}
	if len(out.GoneRan) != 0 {
		t.Errorf("with the engine gone the module installed %q", out.GoneRan)
	}

	for name, raw := range map[string]json.RawMessage{"no engine": out.UntimedLaunch, "an index without the re-export": out.OddLaunch} {
		l := parseLaunch(t, raw)
		for _, a := range l.Argv {
			if a.File != "" {
				t.Errorf("%s: the launch names file %s", name, a.File)
			}
		}
		if len(l.Files) != 0 || len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "not timed") {
			t.Errorf("%s: files %+v, notes %q: want no file and a note saying why", name, l.Files, l.Notes)
		}
		t.Logf("%s: %s", name, l.Notes)
	}
	if l := parseLaunch(t, out.OddLaunch); !strings.Contains(l.Notes[0], "does not re-export createToolTimingExtension") {
		t.Errorf("an index without the re-export: %q", l.Notes)
	}
	if l := parseLaunch(t, out.UntimedLaunch); !strings.Contains(l.Notes[0], "was not found") {
		t.Errorf("no engine: %q", l.Notes)
	}
}

// A live handoff the menu asks for and the wrapper refuses (a settings
// file it cannot read, say) is said in the owner, and the status line
// that said it was requested goes: nothing is handed off, and the line
// must not claim otherwise for as long as the attempt runs.
func TestARefusedMenuHandoffClearsItsStatusLine(t *testing.T) {
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		if r, ok := m.(control.HandoffRequest); ok {
			_ = l.Refuse(r.ID, errors.New("the workflow settings: /a/settings.json: not valid JSON"))
		}
	}
	out, _ := runHandoffHarnessSink(t, "menu-refused", &ownerSink{react: react})
	if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "/a/settings.json") || !strings.HasPrefix(out.Notes[0], "error: ") {
		t.Fatalf("the owner was told %q", out.Notes)
	}
	if want := []string{"finder: handoff requested", "(cleared)"}; !slices.Equal(out.StatusLines, want) {
		t.Fatalf("status lines %q, want %q", out.StatusLines, want)
	}
}

// The reason a menu's live handoff was refused reaches the person as one
// short line naming the attempt: the wrapper's text may carry terminal
// control sequences (a path, a Herdr message) and runs to a kilobyte,
// neither of which belongs in Pi's notice area.
func TestARefusedMenuHandoffSaysWhyInShort(t *testing.T) {
	hostile := "\x1b[2J\x1b]0;owned\x07the workflow settings: /a/settings.json:\r\nnot valid JSON\t\u009b31m \u202eevil\u2066 " + strings.Repeat("x", 900)
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		if r, ok := m.(control.HandoffRequest); ok {
			_ = l.Refuse(r.ID, errors.New(hostile))
		}
	}
	out, _ := runHandoffHarnessSink(t, "menu-refused", &ownerSink{react: react})
	if len(out.Notes) != 1 {
		t.Fatalf("the owner was told %q", out.Notes)
	}
	note := out.Notes[0]
	if !strings.HasPrefix(note, "error: herdr-pi: finder was not handed off: the workflow settings: /a/settings.json: not valid JSON") {
		t.Errorf("the notice %q does not name the attempt and the reason", note)
	}
	harmlessNotice(t, note)
	if strings.Contains(note, "owned") || strings.Contains(note, "[2J") {
		t.Errorf("the notice keeps a control sequence's text: %q", note)
	}
	if n := len([]rune(note)); n > 320 || !strings.HasSuffix(note, "…") {
		t.Errorf("the notice is %d characters (%q…), want a short line that says it was cut", n, note[:40])
	}
}

// The menu's live action on an attempt that is in a pane already: the
// wrapper says where it is, which the owner shows as news, and the
// attempt's status line keeps saying how its pane is doing — not
// "handoff requested", which nothing would take down again.
func TestAMenuRequestForAnAttemptInAPaneKeepsItsStatusLine(t *testing.T) {
	where := "it is handed off already (h1) and runs in Herdr pane w1:p3: closing that pane hands it back"
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		switch m := m.(type) {
		case control.Attempt:
			launchedAndWorking(t, l, m)
		case control.HandoffRequest:
			_ = l.Refuse(m.ID, errors.New(where))
			handBackSoon(t, l, "h1", control.Handback{Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop"})
		}
	}
	out, _ := runHandoffHarnessSink(t, "menu-busy", &ownerSink{react: react})
	if want := []string{"info: herdr-pi: finder: " + where}; !slices.Equal(out.Notes, want) {
		t.Errorf("the owner was told %q, want %q", out.Notes, want)
	}
	if slices.Contains(out.StatusLines, "finder: handoff requested") {
		t.Errorf("status lines %q: the pane's line gave way to a request that started nothing", out.StatusLines)
	}
	if !slices.Equal(out.Log, []string{"create", "suspend", "resume"}) {
		t.Errorf("the local session saw %q", out.Log)
	}
}

// harmlessNotice fails t when a notice for Pi's notice area holds what a
// terminal would act on or reorder by: a control character (C0, DEL, C1)
// or a bidi control, which makes the rest of the line read backwards.
func harmlessNotice(t *testing.T, note string) {
	t.Helper()
	for _, r := range note {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || termtext.IsBidiControl(r) {
			t.Fatalf("the notice carries %U: %q", r, note)
		}
	}
}

// The engine's settings file is the person's, but what it holds is shown
// in the owner's notice area: a key that is an escape sequence, a newline
// or a right-to-left override is shown harmless, and still shown; a key of
// half a MiB is quoted short.
func TestTheSettingsNoticeShowsAKeyHarmlessly(t *testing.T) {
	for _, c := range []struct{ name, key, want string }{
		{"hostile", "\x1b]0;owned\x07\nINFO\u009b31m\u202ePWNED", "PWNED"},
		{"huge", strings.Repeat("k", 512<<10), "characters)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agentDir := t.TempDir()
			file := filepath.Join(agentDir, "pi-extensible-workflows", "settings.json")
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"extensionSettings": map[string]any{"herdr": map[string]any{c.key: true}}})
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, _ := runHandoffHarness(t, "settings-notice", "PI_CODING_AGENT_DIR="+agentDir)
			if len(out.Notes) != 1 {
				t.Fatalf("the owner was told %.300q, want one notice of the settings file", out.Notes)
			}
			note := out.Notes[0]
			if !strings.Contains(note, "unknown key") || !strings.Contains(note, c.want) {
				t.Errorf("the notice %.300q does not name the key", note)
			}
			harmlessNotice(t, note)
			// The file's path, the sentence and the way out, and a short
			// quote of the key.
			if n := len(note) - len(file); n > 400 {
				t.Errorf("the notice is %d bytes past the file's path: %.300q…", n, note)
			}
		})
	}
}

// A named pipe where the engine's settings file goes has no writer: read
// blocking, it held Pi's start forever (the probe reads the file as the
// owner's session starts). It is refused as herdr-pi's Go reader refuses
// it, and the owner is told so; /dev/zero, endless, is refused the same.
func TestTheSettingsFileIsReadOnlyWhenRegular(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
	}{
		{"named pipe", func(path string) error { return unix.Mkfifo(path, 0o600) }},
		{"endless device", func(path string) error { return os.Symlink("/dev/zero", path) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			agentDir := t.TempDir()
			file := filepath.Join(agentDir, "pi-extensible-workflows", "settings.json")
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := c.make(file); err != nil {
				t.Fatal(err)
			}
			out, _ := runHandoffHarness(t, "settings-notice", "PI_CODING_AGENT_DIR="+agentDir)
			if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "not a regular file") {
				t.Fatalf("the owner was told %q, want that the settings file is not a regular file", out.Notes)
			}
		})
	}
}

// An attempt's label is the workflow's words (its call site, its session
// label): shown in the owner's status line and notices, a label that is an
// escape sequence or a right-to-left override is shown harmless there.
func TestAnAttemptsLabelIsShownHarmlessly(t *testing.T) {
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		if r, ok := m.(control.HandoffRequest); ok {
			_ = l.Refuse(r.ID, errors.New("no"))
		}
	}
	out, _ := runHandoffHarnessSink(t, "menu-refused", &ownerSink{react: react}, "LABEL=\x1b]0;owned\x07PWNED\u202eevil")
	shown := append(slices.Clone(out.StatusLines), out.Notes...)
	saw := false
	for _, line := range shown {
		saw = saw || strings.Contains(line, "PWNED")
		harmlessNotice(t, line)
	}
	if !saw {
		t.Errorf("the label is nowhere in %q", shown)
	}
	// The wrapper took the attempt (its link stayed up) and answered.
	if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "was not handed off: no") {
		t.Errorf("the owner was told %q, want the wrapper's refusal", out.Notes)
	}
}
