package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/settings"
)

// The owner's probe reads the engine's settings file by the same rules as
// herdr-pi's Go reader (doctor): the same file, whichever way
// PI_CODING_AGENT_DIR names Pi's agent directory (Pi expands "~", "~/…"
// and file:// URLs), the same files are errors, and the errors name the
// file and the key.
func TestInspectableSettingsAsTheGoReaderSees(t *testing.T) {
	home := t.TempDir()
	for _, dir := range []string{filepath.Join(home, "agent"), "~/ag", "~", "file://" + home + "/url%20dir"} {
		t.Run(dir, func(t *testing.T) {
			checkSettingsAsTheGoReaderSees(t, settings.EnvFrom([]string{"HOME=" + home, "PI_CODING_AGENT_DIR=" + dir}))
		})
	}
}

func checkSettingsAsTheGoReaderSees(t *testing.T, env settings.Env) {
	cases := []*string{nil}
	for _, text := range []string{
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":false}},"concurrency":2}`,
		`{"extensionSettings":{"trajectory":{"port":1}}}`,
		`{"extensions":{"herdr":{"enableFullyInspectableMode":true}}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true,"tabs":1}}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`,
		`{"extensionSettings":{"tmux":{}}}`,
		`{"fullyInspectable":true}`,
		`{"extensionSettings":`,
		`[]`,
		`null`,
		`{"extensionSettings":null}`,
		`{"extensionSettings":{"herdr":null}}`,
		`{"extensionSettings":{"herdr":[]}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":null}}}`,
		`{"extensions":null,"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`,
	} {
		cases = append(cases, &text)
	}
	b, _ := json.Marshal(cases)
	file := settings.WorkflowSettingsFile(settings.Resolve(env).PiAgentDir)
	out, _ := runHandoffHarness(t, "settings", "HOME="+env.Get("HOME"), "PI_CODING_AGENT_DIR="+env.Get("PI_CODING_AGENT_DIR"), "SETTINGS_FILE="+file, "CASES="+string(b))
	if len(out.Settings) != len(cases) {
		t.Fatalf("%d answers for %d cases", len(out.Settings), len(cases))
	}
	for i, c := range cases {
		got := out.Settings[i]
		var want settings.Workflows
		var werr error
		if c != nil {
			want, werr = settings.ParseWorkflows([]byte(*c), file)
		}
		switch {
		case (werr != nil) != (got.Error != ""):
			t.Errorf("case %d: the probe says %+v, Go says %v", i, got, werr)
		case werr == nil && got.On != want.FullyInspectable:
			t.Errorf("case %d: the probe says on=%v, Go %v", i, got.On, want.FullyInspectable)
		case got.Error != "" && (!strings.HasPrefix(got.Error, file+": ") || got.On):
			t.Errorf("case %d: %+v does not name the file", i, got)
		}
	}
	if e := out.Settings[4].Error; !strings.Contains(e, `move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`) {
		t.Errorf("the old shape: %q", e)
	}
	if e := out.Settings[5].Error; !strings.Contains(e, `"extensionSettings.herdr.tabs"`) {
		t.Errorf("an unknown key: %q", e)
	}
}

// Fully inspectable mode is global-only (seed; reference §3): a project
// settings file that turns it on — where the engine reads project
// settings, in the directory the owner, its run and its agent work in —
// is not read for it, while the global file is. The agent stays on the
// engine's local transport, the live action is offered, and the wrapper
// is told the mode is off.
func TestInspectableModeIsGlobalOnly(t *testing.T) {
	project := t.TempDir()
	file := filepath.Join(project, ".pi", "pi-extensible-workflows", "settings.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, msgs := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+t.TempDir(), "PROJECT_DIR="+project)
	if out.WrappedID != "local" || !out.LiveVisible {
		t.Errorf("a project file turned the mode on: transport %q, live action visible %v", out.WrappedID, out.LiveVisible)
	}
	if e := engineStatus(t, msgs); e.FullyInspectable {
		t.Errorf("engine status %+v: the mode is on from a project file", e)
	}
	// The same text in the global file turns it on.
	global := t.TempDir()
	if err := os.MkdirAll(filepath.Join(global, "pi-extensible-workflows"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file, settings.WorkflowSettingsFile(global)); err != nil {
		t.Fatal(err)
	}
	if on, _ := runHandoffHarness(t, "fully", "PI_CODING_AGENT_DIR="+global, "PROJECT_DIR="+project); on.WrappedID != "herdr" {
		t.Errorf("the global file did not turn the mode on: transport %q", on.WrappedID)
	}
}

// turnWrapper plays the owner's wrapper for turns: each turn request gets
// an order, its launch is recorded, the pane is "launched", and the turn
// is handed back idle — except a turn whose prompt says HOLD, which is
// handed back aborted once the owner cancels it.
type turnWrapper struct {
	mu       sync.Mutex
	requests []control.HandoffRequest
	launches []control.Launch
	cancels  []string
	held     chan string // the held turn's handoff id
	cancel   chan string
	n        int
}

func (w *turnWrapper) react(l *control.OwnerLink, m control.OwnerMessage) {
	switch m := m.(type) {
	case control.HandoffRequest:
		w.mu.Lock()
		w.n++
		id := "h" + string(rune('0'+w.n))
		w.requests = append(w.requests, m)
		w.mu.Unlock()
		go w.turn(l, control.HandoffOrder{ID: id, RunID: m.RunID, SessionID: m.SessionID, Request: m.ID})
	case control.HandoffCancel:
		w.mu.Lock()
		w.cancels = append(w.cancels, m.ID)
		w.mu.Unlock()
		w.cancel <- m.ID
	}
}

func (w *turnWrapper) turn(l *control.OwnerLink, order control.HandoffOrder) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	launch, err := l.Handoff(ctx, order)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.launches = append(w.launches, launch)
	w.mu.Unlock()
	_ = l.PaneState(order.ID, control.PaneLaunched)
	hb := control.Handback{Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop"}
	if prompt := promptOf(launch); strings.Contains(prompt, "HOLD") {
		select {
		case <-w.cancel:
			hb = control.Handback{Reason: control.HandbackAborted, Transferred: true, Error: "cancelled"}
		case <-ctx.Done():
			return
		}
	}
	_, _ = l.Handback(ctx, order.ID, hb)
}

// promptOf is the text of the launch's @prompt file.
func promptOf(l control.Launch) string {
	for _, a := range l.Argv {
		if a.File != "" && a.Prefix == "@" {
			for _, f := range l.Files {
				if f.Name == a.File {
					return f.Content
				}
			}
		}
	}
	return ""
}

// §10.3 on fully inspectable mode, at the probe: with the mode on the
// engine's local transport gives way to "herdr" (not for inspections);
// each prompt is one turn the wrapper launches, its text in a prompt file
// (a 5,000-character one too), the tab named by the dashboard or the
// breadcrumb; sequential prompts each suspend then resume the local
// session; concurrent prompts share one turn; an abort cancels the turn
// under way (its tab closes); dispose comes last.
func TestInspectableTurns(t *testing.T) {
	dir := fullyInspectableAgentDir(t)
	w := &turnWrapper{cancel: make(chan string, 1)}
	out, msgs := runHandoffHarnessSink(t, "turns", &ownerSink{react: w.react}, "PI_CODING_AGENT_DIR="+dir)
	if out.InspectionID != "local" || out.WrappedID != "herdr" || out.Reference != "herdr" {
		t.Fatalf("transports: inspection %q, agent %q, session reference %q", out.InspectionID, out.WrappedID, out.Reference)
	}
	want := []string{"create", "suspend", "suspend", "resume", "suspend", "resume", "suspend", "resume", "suspend", "abort", "resume", "dispose"}
	if !slices.Equal(out.Log, want) {
		t.Fatalf("the local session saw %q\nwant %q", out.Log, want)
	}
	if !slices.Equal(out.Results, []string{"done", "done", "done", "done"}) {
		t.Fatalf("prompt results %q", out.Results)
	}
	if out.HeldStatus == nil || !strings.HasSuffix(*out.HeldStatus, ": working") {
		held := "no status"
		if out.HeldStatus != nil {
			held = fmt.Sprintf("%q", *out.HeldStatus)
		}
		t.Errorf("while the held turn works the owner shows %s, want its working status", held)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var prompts []string
	for _, l := range w.launches {
		p := promptOf(l)
		prompts = append(prompts, strings.Fields(p)[0])
		if l.Breadcrumb != "review > nested > function:agent/foo #3" || l.TUIIndex != 0 || l.NeedsContinue {
			t.Errorf("launch %+v: tab label and continuation", l)
		}
	}
	if !slices.Equal(prompts, []string{"FIRST", "SECOND", "THIRD", "HOLD"}) {
		t.Fatalf("turns launched for %q (one for two concurrent prompts)", prompts)
	}
	if len(promptOf(w.launches[0])) != len("FIRST ")+5000 {
		t.Errorf("the long prompt arrived with %d characters", len(promptOf(w.launches[0])))
	}
	for _, r := range w.requests {
		if !r.Turn || r.RunID != "r" || r.SessionID != "s1" {
			t.Errorf("request %+v", r)
		}
	}
	if len(w.cancels) != 1 {
		t.Errorf("cancels %q: the aborted turn's tab should be closed", w.cancels)
	}
	var live []bool
	for _, m := range msgs {
		if a, ok := m.(control.Attempt); ok {
			live = append(live, a.Live)
		}
	}
	if !slices.Equal(live, []bool{true, false}) {
		t.Errorf("attempt announcements %v", live)
	}
}

// Seed: stopping the workflow closes its Herdr panes before the local
// session is disposed. Disposed while a turn works in its tab (no abort
// first), the session cancels the turn and is disposed only once the
// wrapper handed it back — its tab closed.
func TestInspectableDisposeWaitsForTheTurnsTab(t *testing.T) {
	dir := fullyInspectableAgentDir(t)
	w := &turnWrapper{cancel: make(chan string, 1)}
	out, _ := runHandoffHarnessSink(t, "turn-disposed", &ownerSink{react: w.react}, "PI_CODING_AGENT_DIR="+dir)
	if want := []string{"create", "suspend", "suspend", "disposing", "resume", "dispose"}; !slices.Equal(out.Log, want) {
		t.Fatalf("the local session saw %q\nwant %q (disposed only after the turn's tab was handed back)", out.Log, want)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cancels) != 1 {
		t.Errorf("cancels %q: the turn's tab should be closed", w.cancels)
	}
}

// fullyInspectableAgentDir is a PI_CODING_AGENT_DIR whose workflow
// settings turn the fully inspectable mode on.
func fullyInspectableAgentDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	file := settings.WorkflowSettingsFile(dir)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// What docs/inspectable.md says of `herdr-pi close` on a turn that is
// ordered but has no tab yet: the wrapper gives the order up and hands the
// turn back untransferred (its tab never opens). The prompt is not lost:
// the probe asks for the turn once more, as for a turn whose tab could not
// be opened, and the second tab runs it.
func TestInspectableTurnGivenUpBeforeItsTabIsAskedForOnceMore(t *testing.T) {
	dir := fullyInspectableAgentDir(t)
	var mu sync.Mutex
	var requests []control.HandoffRequest
	react := func(l *control.OwnerLink, m control.OwnerMessage) {
		r, ok := m.(control.HandoffRequest)
		if !ok {
			return
		}
		mu.Lock()
		requests = append(requests, r)
		n := len(requests)
		mu.Unlock()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			order := control.HandoffOrder{ID: fmt.Sprintf("h%d", n), RunID: r.RunID, SessionID: r.SessionID, Request: r.ID}
			if _, err := l.Handoff(ctx, order); err != nil {
				return
			}
			hb := control.Handback{Reason: control.HandbackIdle, Transferred: true, LastStopReason: "stop"}
			if n == 1 {
				hb = control.Handback{Reason: control.HandbackAborted, Error: "herdr-pi close gave the handoff up before its pane opened"}
			} else {
				_ = l.PaneState(order.ID, control.PaneLaunched)
			}
			_, _ = l.Handback(ctx, order.ID, hb)
		}()
	}
	out, _ := runHandoffHarnessSink(t, "turn-given-up", &ownerSink{react: react}, "PI_CODING_AGENT_DIR="+dir)
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 2 || !slices.Equal(out.Results, []string{"done"}) {
		t.Fatalf("turn requests %d, prompt results %q, the local session saw %q; want the turn asked for once more and run", len(requests), out.Results, out.Log)
	}
	t.Logf("the local session saw %q", out.Log)
}
