package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/settings"
)

// openWorld is a generated store, a fake Herdr with real panes, and a
// factory whose herdr-pi (the program the pane runs) is a script.
func openWorld(t *testing.T, self string) (*Factory, *herdrtest.Server, string, *strings.Builder, *strings.Builder) {
	t.Helper()
	return openWorldOn(t, self, herdrtest.Options{RealPanes: &herdrtest.RealPanes{}, NoEventPacing: true})
}

// openWorldOn is openWorld with a fake Herdr started with opts (one
// without real panes, say: its panes run nothing typed into them).
func openWorldOn(t *testing.T, self string, opts herdrtest.Options) (*Factory, *herdrtest.Server, string, *strings.Builder, *strings.Builder) {
	t.Helper()
	home := t.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	runtime, err := os.MkdirTemp("", "hpo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	script := filepath.Join(home, "herdr-pi")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+self+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := herdrtest.Start(t, opts)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devnull.Close() })
	var out, errb strings.Builder
	env := append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + runtime, "XDG_STATE_HOME=" + home,
		"XDG_CONFIG_HOME=" + home, "HERDR_PI_CONFIG=" + filepath.Join(home, "none.toml"), "HERDR_PI_LOG=off"}, s.Env()...)
	// Pi itself never runs: the pane's "herdr-pi" is the script. Any
	// program on PATH will do as the Pi command.
	if err := os.WriteFile(filepath.Join(home, "none.toml"), []byte("[open]\npi = \"sh\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFactory(IO{In: devnull, Out: &out, Err: &errb, Env: env, Dir: g.Cwd})
	f.Executable = func() (string, error) { return script, nil }
	return f, s, g.IDs[0], &out, &errb
}

// A pane that ends before its Pi said which file it writes ends open's
// wait for the fork at once, however long that wait may be: the person
// quit (or closed the pane) early, and --wait says how it ended.
func TestOpenStopsWaitingForTheForkWhenThePaneEnds(t *testing.T) {
	f, s, run, out, errb := openWorld(t, "exit 0")
	opts := &openOptions{Run: run, Attempt: "api", Wait: true, StartTimeout: time.Hour, ForkTimeout: time.Hour}
	done := make(chan error, 1)
	go func() { done <- openRun(t.Context(), f, opts) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open: %v\n%s", err, errb)
		}
	case <-time.After(2 * time.Minute): // a guard against the hang under test, not a measurement
		t.Fatalf("open still waits for the fork of pane w1:p2, which ended: %v\n%s%s", s.Methods(), out, errb)
	}
	if !strings.HasSuffix(out.String(), "pane w1:p2 exited\n") || strings.Contains(out.String(), "fork:") {
		t.Fatalf("open said:\n%s%s", out, errb)
	}
	if ex, ok := s.Exited("w1:p2"); !ok || ex.Closed {
		t.Fatalf("the pane: %+v %v", ex, ok)
	}
}

// Two runs of one workflow carry the same workspace label ("workflow
// <name>"), but each run has a workspace of its own: inspecting the second
// run's attempt never lands in (or "reuses" the tab of) the first run's,
// and inspecting the first run's attempt again finds its own tab.
func TestOpenInspectionsOfTwoRunsOfOneWorkflowKeepTheirWorkspaces(t *testing.T) {
	f, s, _, out, errb := openWorld(t, "exec sleep 600")
	st := store.New(f.Paths().Home, f.IO.Dir)
	runs, _, err := st.Runs()
	if err != nil || len(runs) < 2 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	first, second := runs[0].Run, runs[1].Run
	// The second run is of the first's workflow.
	state := filepath.Join(second.Dir, "state.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"workflowName":"`+second.Workflow()+`"`, `"workflowName":"`+first.Workflow()+`"`, 1))
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := st.FindRun(second.ID); err != nil || r.Workflow() != first.Workflow() {
		t.Fatalf("the second run's workflow: %v", err)
	}
	open := func(run string) handoff.Opened {
		t.Helper()
		out.Reset()
		opts := &openOptions{Run: run, Attempt: "api", JSON: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
		if err := openRun(t.Context(), f, opts); err != nil {
			t.Fatalf("open %s api: %v\n%s", run, err, errb)
		}
		var rep openReport
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return rep.Opened
	}
	a := open(first.ID)
	b2 := open(second.ID)
	if b2.Reused || b2.WorkspaceID == a.WorkspaceID {
		t.Fatalf("run %s's api opened in %+v, run %s's in %+v: the second run's attempt went to the first run's workspace (calls %v)",
			first.Short(), a.Placed, second.Short(), b2.Placed, s.Methods())
	}
	if again := open(first.ID); !again.Reused || again.TabID != a.TabID {
		t.Fatalf("run %s's api again: %+v, want its tab %s reused", first.Short(), again.Placed, a.TabID)
	}
}

// When the pane's command fails, the pane stays to show why — and the
// run's workspace open created for it stays with it: the ledger keeps it,
// so herdr-pi close closes it, and the next open of the run finds it
// instead of opening a second "workflow <name>".
func TestOpenRecordsTheWorkspaceOfAFailedCommand(t *testing.T) {
	f, s, run, _, errb := openWorld(t, "exit 3")
	opts := &openOptions{Run: run, Attempt: "api", Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Minute}
	err := openRun(t.Context(), f, opts)
	if err == nil || !strings.Contains(err.Error(), "the command failed in pane") {
		t.Fatalf("open: %v\n%s", err, errb)
	}
	var ws []string
	for _, q := range s.Requests() {
		if q.Method == "workspace.create" {
			ws = append(ws, q.Reply)
		}
	}
	if len(ws) != 1 {
		t.Fatalf("workspace.create %d times", len(ws))
	}
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	recs, _ := ledger.List()
	var kept []string
	for _, r := range recs {
		kept = append(kept, r.Run+" "+r.Thing())
	}
	if id := ledger.Workspace(run, s.SocketPath()); id == "" {
		t.Fatalf("the ledger holds %q: the workspace open created for run %s is not in it (herdr-pi close cannot close it)", kept, run)
	}
	// Only what holds the failed pane: the pane goes (with its tab) once
	// the person has read it, and no wrapper there says when.
	if len(recs) != 1 {
		t.Fatalf("the ledger holds %q, want only the workspace", kept)
	}
}

// open --wait on an inspection in the run's workspace: once the pane has
// ended, the workspace open created for it stays, and so does its ledger
// record (herdr-pi close and the run's next open find it); only the
// pane's own record goes.
func TestOpenWaitKeepsTheWorkspaceRecordAfterThePaneEnds(t *testing.T) {
	f, s, run, out, errb := openWorld(t, "exit 0")
	opts := &openOptions{Run: run, Attempt: "api", Wait: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
	if err := openRun(t.Context(), f, opts); err != nil {
		t.Fatalf("open: %v\n%s", err, errb)
	}
	if !strings.Contains(out.String(), " exited\n") {
		t.Fatalf("open said:\n%s%s", out, errb)
	}
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	recs, _ := ledger.List()
	if len(recs) != 1 || recs[0].Kind != "workspace" || ledger.Workspace(run, s.SocketPath()) != recs[0].ID {
		t.Fatalf("records after the pane ended: %+v", recs)
	}
}

// An inspection the owner's /workflow menu opens ("Open session in Herdr
// pane") is in the ledger as open's are, with the run's workspace made for
// it: herdr-pi close <run> closes it.
func TestAMenuInspectionIsInTheLedger(t *testing.T) {
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	old := menuForkTimeout
	menuForkTimeout = time.Millisecond // the stand-in wrapper never says
	t.Cleanup(func() { menuForkTimeout = old })
	st := store.New(f.Paths().Home, f.IO.Dir)
	r, err := st.FindRun(run)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.PickText("api")
	if err != nil {
		t.Fatal(err)
	}
	settingsFile := filepath.Join(f.Paths().PiAgentDir, "pi-extensible-workflows", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settingsFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settingsFile, []byte(`{"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
	req := control.InspectRequest{RunID: run, SessionID: a.Record.Session.SessionID}
	if err := inspectFromMenu(t.Context(), f, h, true, f.IO.Dir, req, t.Logf); err != nil {
		t.Fatal(err)
	}
	recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
	var got []string
	for _, rec := range recs {
		got = append(got, rec.Run+" "+rec.Kind)
	}
	if want := []string{run + " workspace", run + " tab"}; !slices.Equal(got, want) {
		t.Fatalf("the ledger holds %q, want %q (calls %v)", got, want, s.Methods())
	}
}

// --inspect on a live attempt opens a read-only fork, even when its run's
// workspace holds a tab of the same label: in fully inspectable mode that
// tab is the attempt's own turn, working — not an inspection to reuse.
func TestOpenInspectOfALiveAttemptNeverReusesItsTurnsTab(t *testing.T) {
	f, s, run, out, errb := openWorld(t, "exec sleep 600")
	st := store.New(f.Paths().Home, f.IO.Dir)
	r, err := st.FindRun(run)
	if err != nil {
		t.Fatal(err)
	}
	// The run is running, its api working, its owner (this process) alive.
	path := filepath.Join(r.Dir, "state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["state"] = "running"
	rec["agents"].([]any)[0].(map[string]any)["state"] = "running"
	if b, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	lease := fmt.Sprintf(`{"pid":%d,"token":"t","startedAt":%d}`+"\n", os.Getpid(), time.Now().Add(time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(filepath.Dir(r.Dir), "owner.json"), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err = st.FindRun(run); err != nil {
		t.Fatal(err)
	}
	a, err := r.PickText("api")
	if err != nil {
		t.Fatal(err)
	}
	if live, _, err := a.Live(); !live || err != nil {
		t.Fatalf("api is not live: %v", err)
	}
	// The wrapper's turn of api works in tab "#1 api" of the run's workspace.
	c := herdr.NewClient(s.SocketPath())
	ws, err := c.WorkspaceCreate(t.Context(), herdr.NewPlace{Label: "workflow " + r.Workflow()})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := c.TabCreate(t.Context(), ws.Workspace.WorkspaceID, herdr.NewPlace{Label: fmt.Sprintf("#%d api", a.Record.N)})
	if err != nil {
		t.Fatal(err)
	}
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	if _, err := ledger.AddAll([]handoff.Record{
		{Run: run, Kind: "workspace", ID: ws.Workspace.WorkspaceID, HerdrSocket: s.SocketPath()},
		{Run: run, Kind: "tab", ID: turn.TabID, HerdrSocket: s.SocketPath(), WrapperPID: os.Getpid(), Handoff: "h1"},
	}); err != nil {
		t.Fatal(err)
	}
	opts := &openOptions{Run: run, Attempt: "api", Inspect: true, JSON: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
	if err := openRun(t.Context(), f, opts); err != nil {
		t.Fatalf("open --inspect: %v\n%s", err, errb)
	}
	var rep openReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Reused || rep.TabID == turn.TabID {
		t.Fatalf("open --inspect of the live api reported %+v: its turn's tab %s, not a fork", rep.Placed, turn.TabID)
	}
}

// Ctrl-C on `open --wait` closes what that open created, but a workspace it
// created may have been joined since: another open of the run finds it in
// the ledger and adds its tab. Then only the interrupted open's tab closes;
// the workspace, the other tab and the workspace's ledger record stay.
// Alone in its workspace, the interrupted open closes all of it.
func TestOpenInterruptedKeepsAWorkspaceOthersJoined(t *testing.T) {
	for _, joined := range []bool{true, false} {
		t.Run(map[bool]string{true: "joined", false: "alone"}[joined], func(t *testing.T) {
			f, s, run, out, errb := openWorld(t, "exec sleep 600")
			ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- openRun(ctx, f, &openOptions{Run: run, Attempt: "api", Wait: true, Place: "workspace",
					StartTimeout: time.Minute, ForkTimeout: time.Millisecond})
			}()
			var first []handoff.Record
			s.WaitFor(t, time.Minute, "the first open's records", func() bool {
				first, _ = ledger.List()
				return len(first) == 2
			})
			ws, tab := first[0].ID, first[1].ID
			if first[0].Kind != "workspace" || first[1].Kind != "tab" {
				t.Fatalf("records: %+v", first)
			}
			client := herdr.NewClient(s.SocketPath())
			var other handoff.Opened
			if joined {
				var out2, err2 strings.Builder
				f2 := NewFactory(IO{In: f.IO.In, Out: &out2, Err: &err2, Env: f.IO.Env, Dir: f.IO.Dir})
				f2.Executable = f.Executable
				if err := openRun(t.Context(), f2, &openOptions{Run: run, Attempt: "docs", JSON: true, Place: "workspace",
					StartTimeout: time.Minute, ForkTimeout: time.Millisecond}); err != nil {
					t.Fatalf("the second open: %v\n%s", err, &err2)
				}
				var rep openReport
				if err := json.Unmarshal([]byte(out2.String()), &rep); err != nil {
					t.Fatalf("%v: %s", err, &out2)
				}
				if other = rep.Opened; other.WorkspaceID != ws || other.Reused {
					t.Fatalf("the second open went to %+v, want a new tab in workspace %s", other.Placed, ws)
				}
			}
			cancel()
			if err := <-done; err == nil || err.Error() != silentExit(exitInterrupted).Error() {
				t.Fatalf("the interrupted open: %v\n%s%s", err, out, errb)
			}
			wss, err := client.WorkspaceList(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			kept := slices.ContainsFunc(wss, func(w herdr.WorkspaceInfo) bool { return w.WorkspaceID == ws })
			if kept != joined {
				t.Fatalf("workspace %s kept: %v, want %v (joined: %v)\n%s", ws, kept, joined, joined, errb)
			}
			if !joined {
				if recs, _ := ledger.List(); len(recs) != 0 {
					t.Fatalf("records left: %+v", recs)
				}
				return
			}
			tabs, err := client.TabList(t.Context(), ws)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, tb := range tabs {
				ids = append(ids, tb.TabID)
			}
			if slices.Contains(ids, tab) || !slices.Contains(ids, other.TabID) {
				t.Fatalf("tabs of %s after the interruption: %v; want %s closed and %s open", ws, ids, tab, other.TabID)
			}
			recs, _ := ledger.List()
			if !slices.ContainsFunc(recs, func(r handoff.Record) bool { return r.Kind == "workspace" && r.ID == ws }) {
				t.Fatalf("the workspace's record went: %+v", recs)
			}
			if want := "closed tab " + tab + "; workspace " + ws + " stays"; !strings.Contains(errb.String(), want) {
				t.Fatalf("open said %q, want %q", errb, want)
			}
		})
	}
}

// --hold is for a live handoff: on an attempt that is not live, open says
// it opens a fork instead of dropping the flag without a word.
func TestOpenHoldOnAnAttemptThatIsNotLiveSaysSo(t *testing.T) {
	f, _, run, _, errb := openWorld(t, "exec sleep 600")
	if err := openRun(t.Context(), f, &openOptions{Run: run, Attempt: "api", Hold: true, JSON: true,
		StartTimeout: time.Minute, ForkTimeout: time.Millisecond}); err != nil {
		t.Fatalf("open: %v\n%s", err, errb)
	}
	if !strings.Contains(errb.String(), "--hold is for a live handoff, and ") || !strings.Contains(errb.String(), "is not live: opening a read-only fork of it") {
		t.Fatalf("open said %q", errb)
	}
}

// An inspection's record names the herdr-pi wrap running in its pane (the
// one registered for it): close closes the pane only while that wrapper
// runs, since after a Herdr restart the id may be someone else's pane.
func TestOpenRecordsTheInspectionsPaneWrapper(t *testing.T) {
	f, s, run, _, errb := openWorld(t, "exec sleep 600")
	// This test plays the wrapper in the pane open will split off (the
	// fake's first split is w1:p2): registered for it, it never says a fork.
	w := &fakeWrapper{}
	reg, err := control.Start(control.RunConfig{RuntimeBase: f.Paths().RuntimeBase, PaneID: "w1:p2", HerdrSocket: s.SocketPath(), Events: w, Requests: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	opts := &openOptions{Run: run, Attempt: "api", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
	if err := openRun(t.Context(), f, opts); err != nil {
		t.Fatalf("open: %v\n%s", err, errb)
	}
	recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
	if len(recs) != 1 || recs[0].Thing() != "pane w1:p2" || recs[0].PaneWrapperPID != os.Getpid() || recs[0].RunDir != filepath.Dir(reg.Endpoint.Socket) {
		t.Fatalf("records %+v, want pane w1:p2 with its wrapper pid %d and run directory %s", recs, os.Getpid(), filepath.Dir(reg.Endpoint.Socket))
	}
}

// `open --json` that fails still prints one object on stdout: why, with a
// code a script can switch on, in the format the command would have
// printed; stderr says it in words and the exit status is unchanged.
func TestOpenJSONFailuresSayWhy(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	schema := compileSchema(t, "open")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		format string
		want   string
	}{
		{"no such run", []string{"open", "--json", "0000dead", "api"}, 1, openFormat, "no_run"},
		{"a path is no run", []string{"open", "--json", "../x", "api"}, 1, openFormat, "no_run"},
		{"no such attempt", []string{"open", "--json", run, "nosuch"}, 1, openFormat, "no_attempt"},
		{"attempt numbers start at 1", []string{"open", "--json", run, "api#0"}, 2, openFormat, "usage"},
		{"two places", []string{"open", "--json", "--tab", "--split", run, "api"}, 2, openFormat, "usage"},
		{"list of no such run", []string{"open", "--json", "--list", "0000dead"}, 1, handoff.ListFormat, "no_run"},
		// An empty run is a script's unset variable ("$RUN"), not "every
		// run" nor the picker: it listed the whole store, exit 0.
		{"list of an empty run", []string{"open", "--json", "--list", ""}, 2, handoff.ListFormat, "usage"},
		{"an empty run", []string{"open", "--json", "", "api"}, 2, openFormat, "usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out.Reset()
			errb.Reset()
			code := runWith(t.Context(), append([]string{"herdr-pi"}, c.args...), f)
			var fail openFailure
			if err := json.Unmarshal([]byte(out.String()), &fail); err != nil || code != c.code {
				t.Fatalf("exit %d, stdout %q (%v)\nstderr %s", code, out, err, errb)
			}
			if fail.Format != c.format || fail.Error.Code != c.want || fail.Error.Message == "" {
				t.Fatalf("%+v, want format %s code %s", fail, c.format, c.want)
			}
			if !strings.Contains(errb.String(), fail.Error.Message) {
				t.Errorf("stderr %q lacks the message %q", errb, fail.Error.Message)
			}
			validate(t, schema, out.String())
		})
	}

	t.Run("outside Herdr", func(t *testing.T) {
		out.Reset()
		errb.Reset()
		var env []string
		for _, kv := range f.IO.Env {
			if !strings.HasPrefix(kv, "HERDR_") || strings.HasPrefix(kv, "HERDR_PI_") {
				env = append(env, kv)
			}
		}
		g := NewFactory(IO{In: f.IO.In, Out: out, Err: errb, Env: env, Dir: f.IO.Dir})
		code := runWith(t.Context(), []string{"herdr-pi", "open", "--json", run, "api"}, g)
		var fail openFailure
		if err := json.Unmarshal([]byte(out.String()), &fail); err != nil || code != 1 || fail.Error.Code != "not_in_herdr" {
			t.Fatalf("exit %d, stdout %q (%v)\nstderr %s", code, out, err, errb)
		}
		validate(t, schema, out.String())
	})
}

// `open --list` only lists: a flag that only means something when opening
// (a place, --wait, --hold, --inspect) is a usage mistake naming it, as
// two places are, not silently dropped — the person meant something by it.
func TestOpenListRefusesFlagsOnlyOpenTakes(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	schema := compileSchema(t, "open")
	for _, flag := range []string{"split", "tab", "workspace", "wait", "hold", "inspect"} {
		t.Run(flag, func(t *testing.T) {
			out.Reset()
			errb.Reset()
			code := runWith(t.Context(), []string{"herdr-pi", "open", "--list", "--" + flag, run}, f)
			if code != 2 || !strings.Contains(errb.String(), "--"+flag) {
				t.Fatalf("open --list --%s: exit %d, stderr %q; want exit 2 naming --%s", flag, code, errb, flag)
			}
			out.Reset()
			errb.Reset()
			code = runWith(t.Context(), []string{"herdr-pi", "open", "--json", "--list", "--" + flag}, f)
			var fail openFailure
			if err := json.Unmarshal([]byte(out.String()), &fail); err != nil || code != 2 {
				t.Fatalf("exit %d, stdout %q (%v)\nstderr %s", code, out, err, errb)
			}
			if fail.Format != handoff.ListFormat || fail.Error.Code != "usage" || !strings.Contains(fail.Error.Message, "--"+flag) {
				t.Fatalf("%+v, want format %s, code usage, a message naming --%s", fail, handoff.ListFormat, flag)
			}
			validate(t, schema, out.String())
		})
	}
}

// Herdr goes away (its panes with it) while open --wait follows an
// inspection: no event will ever say the pane ended, but the herdr-pi wrap
// in the pane exits, and open ends with it — closed, since Herdr no longer
// answers — instead of waiting for a Herdr that is not coming back.
func TestOpenWaitEndsWhenHerdrGoesAway(t *testing.T) {
	f, s, run, out, errb := openWorld(t, "exec sleep 600")
	// This test plays the wrapper in the pane open will split off (the
	// fake's first split is w1:p2).
	w := &fakeWrapper{}
	reg, err := control.Start(control.RunConfig{RuntimeBase: f.Paths().RuntimeBase, PaneID: "w1:p2", HerdrSocket: s.SocketPath(), Events: w, Requests: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	done := make(chan error, 1)
	go func() {
		done <- openRun(t.Context(), f, &openOptions{Run: run, Attempt: "api", Wait: true, StartTimeout: time.Minute, ForkTimeout: time.Minute})
	}()
	ledger := handoff.LedgerAt(f.Paths().RuntimeBase)
	s.WaitFor(t, time.Minute, "the inspection's record", func() bool { recs, _ := ledger.List(); return len(recs) == 1 })
	s.Close()
	reg.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open: %v\n%s", err, errb)
		}
	case <-time.After(time.Minute):
		t.Fatal("open --wait still waits a minute after Herdr and the pane's wrapper went away")
	}
	if !strings.HasSuffix(out.String(), "pane w1:p2 closed\n") {
		t.Fatalf("open said:\n%s%s", out, errb)
	}
}

// Two attempts of one run opened at once in the run's workspace (fully
// inspectable mode, or --place workspace) share one workspace, as they
// would opened one after the other: each gets its own tab and pane, and
// Herdr gets one "workflow <name>", not two of the same name.
func TestTwoOpensOfOneRunAtOnceShareItsWorkspace(t *testing.T) {
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	attempts := []string{"api", "docs"}
	reps := make([]openReport, len(attempts))
	errs := make([]error, len(attempts))
	var wg sync.WaitGroup
	for i, attempt := range attempts {
		var out, errb strings.Builder
		io := f.IO
		io.Out, io.Err = &out, &errb
		fi := NewFactory(io)
		fi.Executable = f.Executable
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := &openOptions{Run: run, Attempt: attempt, JSON: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
			if errs[i] = openRun(t.Context(), fi, opts); errs[i] == nil {
				errs[i] = json.Unmarshal([]byte(out.String()), &reps[i])
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("open %s: %w\n%s%s", attempt, errs[i], &out, &errb)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	created := 0
	for _, m := range s.Methods() {
		if m == "workspace.create" {
			created++
		}
	}
	a, b := reps[0].Opened, reps[1].Opened
	if created != 1 || a.WorkspaceID != b.WorkspaceID || a.TabID == b.TabID || a.PaneID == b.PaneID {
		t.Fatalf("%d workspaces created; %s opened in %+v, %s in %+v (calls %v)", created, attempts[0], a.Placed, attempts[1], b.Placed, s.Methods())
	}
}

// An open does not wait for a placement of another run in that run's
// workspace (a menu inspection may hold its lock for most of a minute):
// it opens at once, without a word on stderr.
func TestAnOpenDoesNotWaitForAPlacementOfAnotherRun(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	unlock := handoff.LedgerAt(f.Paths().RuntimeBase).LockPlacement(t.Context(), "another-"+run, nil)
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against the wait under test, far below its two minutes
	defer cancel()
	opts := &openOptions{Run: run, Attempt: "api", JSON: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
	if err := openRun(ctx, f, opts); err != nil || errb.Len() != 0 {
		t.Fatalf("open while another run's placement held its lock: %v\n%s%s", err, out, errb)
	}
}

// An open that finds another placement of its run holding the run's
// placement lock says on stderr that it waits, for which run, once, and goes on as soon as
// the lock is let go: a person's open must not sit silent for the two
// minutes the wait may last.
func TestAnOpenThatWaitsForThePlacementLockSaysSo(t *testing.T) {
	f, _, run, _, _ := openWorld(t, "exec sleep 600")
	unlock := handoff.LedgerAt(f.Paths().RuntimeBase).LockPlacement(t.Context(), run, nil)
	defer unlock()
	errR, errW := io.Pipe()
	var out strings.Builder
	fio := f.IO
	fio.Out, fio.Err = &out, errW
	fi := NewFactory(fio)
	fi.Executable = f.Executable
	done := make(chan error, 1)
	go func() {
		opts := &openOptions{Run: run, Attempt: "api", JSON: true, Place: "workspace", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
		done <- openRun(t.Context(), fi, opts)
		errW.Close()
	}()
	lines := bufio.NewScanner(errR)
	if !lines.Scan() {
		t.Fatalf("open ended without a word while the placement lock was held: %v", <-done)
	}
	if got := lines.Text(); !strings.Contains(got, "waiting for another herdr-pi") || !strings.Contains(got, "of run "+run[:8]+" ") || !strings.Contains(got, "2 minutes") {
		t.Fatalf("open said %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("open ended while the lock was held: %v", err)
	default:
	}
	unlock()
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := <-done; err != nil {
		t.Fatalf("open after the lock was let go: %v\n%s", err, strings.Join(rest, "\n"))
	}
	if len(rest) != 0 {
		t.Fatalf("open said more on stderr: %q", rest)
	}
}

// A workflow settings file open cannot read (the engine would refuse it
// too) stops open before Herdr hears anything, naming the file, and says
// the two ways out: fix the file (doctor checks it), or choose the place
// with a flag, which open then takes without reading the file. A person
// who only wants to look at a finished attempt is not left stuck on a
// file that has nothing to do with it.
func TestOpenWithABadWorkflowSettingsFileSaysTheWayOut(t *testing.T) {
	f, s, run, out, errb := openWorld(t, "exec sleep 600")
	file := settings.WorkflowSettingsFile(f.Paths().PiAgentDir)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code := runWith(t.Context(), []string{"herdr-pi", "open", run, "api"}, f)
	msg := errb.String()
	if code != 1 || !strings.Contains(msg, file) {
		t.Fatalf("exit %d, stderr %q: want exit 1 naming %s", code, msg, file)
	}
	for _, want := range []string{"herdr-pi doctor", "--split", "--tab", "--workspace"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not say the way out %q", msg, want)
		}
	}
	for _, m := range s.Methods() {
		if m == "pane.split" || m == "tab.create" || m == "workspace.create" {
			t.Errorf("Herdr was asked %s before open said the file is bad", m)
		}
	}
	// The way out works: with --split the file is not read.
	out.Reset()
	errb.Reset()
	opts := &openOptions{Run: run, Attempt: "api", Place: "split", StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
	if err := openRun(t.Context(), f, opts); err != nil {
		t.Fatalf("open --split: %v\n%s", err, errb)
	}
}

// A workflow settings file open cannot read, and a Pi it cannot find,
// each have a code of their own in --json (not "failed", which a script
// could only tell apart by parsing words), with the same words as on
// stderr. The settings message names the file and its way out once: the
// settings' own words say how to fix it, and open adds only doctor and
// the flags that choose the place without the file.
func TestOpenJSONCodesABadSettingsFileAndAMissingPi(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	schema := compileSchema(t, "open")
	file := settings.WorkflowSettingsFile(f.Paths().PiAgentDir)
	config := filepath.Join(f.Paths().Home, "none.toml")
	openJSON := func(t *testing.T) openFailure {
		t.Helper()
		out.Reset()
		errb.Reset()
		// A factory of its own: the config is read once per command.
		g := NewFactory(f.IO)
		g.Executable = f.Executable
		code := runWith(t.Context(), []string{"herdr-pi", "open", "--json", run, "api"}, g)
		var fail openFailure
		if err := json.Unmarshal([]byte(out.String()), &fail); err != nil || code != exitError {
			t.Fatalf("exit %d, stdout %q (%v)\nstderr %s", code, out, err, errb)
		}
		if want := "herdr-pi open: " + fail.Error.Message + "\n"; errb.String() != want {
			t.Errorf("stderr %q, want the message's words %q", errb, want)
		}
		validate(t, schema, out.String())
		return fail
	}
	for _, c := range []struct{ name, text, fix string }{
		{"not JSON", `{`, "fix the text or remove the file"},
		{"not an object", `[]`, "write {} for the defaults"},
		{"unknown key", `{"fullyInspectable":true}`, "remove it"},
		{"old place", `{"extensions":{"herdr":{"enableFullyInspectableMode":true}}}`, `move it to "extensionSettings"`},
		{"not a boolean", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`, "must be true or false"},
		{"a directory", "", "put a file (or a symlink to one) there, or remove it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.RemoveAll(filepath.Dir(file)); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			var err error
			if c.text == "" {
				err = os.Mkdir(file, 0o700)
			} else {
				err = os.WriteFile(file, []byte(c.text), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			fail := openJSON(t)
			msg := fail.Error.Message
			if fail.Error.Code != "unreadable_workflow_settings" || !strings.Contains(msg, file) {
				t.Fatalf("code %q, message %q; want unreadable_workflow_settings naming %s", fail.Error.Code, msg, file)
			}
			if !strings.Contains(msg, c.fix) || strings.Contains(msg, "fix the file") {
				t.Errorf("message %q: want its way out %q said once, without open's \"fix the file\" besides", msg, c.fix)
			}
			for _, want := range []string{"herdr-pi doctor", "--split"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
	if err := os.RemoveAll(filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, pi, says string }{
		{"not on PATH", `"no-such-pi"`, `"no-such-pi" is not on your PATH; install Pi or set [open] pi in config.toml`},
		{"no such file", `"/nonexistent/bin/pi"`, "[open] pi in " + config + ": "},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(config, []byte("[open]\npi = "+c.pi+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			fail := openJSON(t)
			if fail.Error.Code != "no_pi" || !strings.HasPrefix(fail.Error.Message, c.says) {
				t.Fatalf("code %q, message %q; want no_pi saying %q", fail.Error.Code, fail.Error.Message, c.says)
			}
		})
	}
}

// The menu's "Open session in Herdr pane" reads the same settings file
// for the place: one it cannot read is refused before Herdr hears
// anything, naming the file and how to fix it (the menu has no flags to
// choose the place instead).
func TestAMenuInspectionWithABadWorkflowSettingsFileSaysTheWayOut(t *testing.T) {
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	a, err := store.New(f.Paths().Home, f.IO.Dir).Find(run, "api")
	if err != nil {
		t.Fatal(err)
	}
	file := settings.WorkflowSettingsFile(f.Paths().PiAgentDir)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
	req := control.InspectRequest{RunID: run, SessionID: a.Record.Session.SessionID}
	err = inspectFromMenu(t.Context(), f, h, true, f.IO.Dir, req, t.Logf)
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "herdr-pi doctor") {
		t.Fatalf("the menu inspection: %v; want the file named and how to fix it", err)
	}
	for _, m := range s.Methods() {
		if m == "pane.split" || m == "tab.create" || m == "workspace.create" {
			t.Errorf("Herdr was asked %s before the bad file was said", m)
		}
	}
}

// menuInspectionStuckStarting starts a menu inspection (on ctx) of the
// attempt "api" of a run whose pane Herdr opens but never starts the
// command in (pane.send_input is taken and nothing happens), and returns
// once the inspection waits for that start: its end comes on done.
func menuInspectionStuckStarting(t *testing.T, ctx context.Context) (f *Factory, s *herdrtest.Server, done chan error) {
	t.Helper()
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	a, err := store.New(f.Paths().Home, f.IO.Dir).Find(run, "api")
	if err != nil {
		t.Fatal(err)
	}
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.send_input"},
		Reply: map[string]any{"result": map[string]any{"type": "ok"}}})
	h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
	req := control.InspectRequest{RunID: run, SessionID: a.Record.Session.SessionID}
	done = make(chan error, 1)
	go func() { done <- inspectFromMenu(ctx, f, h, true, f.IO.Dir, req, t.Logf) }()
	// Herdr's events are asked for once the command was typed: the
	// inspection now waits for the pane to start it.
	s.WaitFor(t, time.Minute, "the wait for the pane's start", func() bool { return slices.Contains(s.Methods(), "events.subscribe") })
	return f, s, done
}

// A menu inspection given up while its pane is still to start its command
// (the owner's wrapper quits: its Pi went) leaves nothing behind, as
// open's own interrupt does: the pane it opened is closed, not left as a
// shell whose command file is gone, which no ledger record names and
// `herdr-pi close` could never find.
func TestAMenuInspectionGivenUpWhileItsPaneStartsLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	f, s, done := menuInspectionStuckStarting(t, ctx)
	cancel(errors.New("the owner's herdr-pi wrap is quitting"))
	err := <-done
	recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
	ex, exited := s.Exited("w1:p2")
	if !exited || !ex.Closed || len(recs) != 0 {
		t.Fatalf("given up while its pane started: pane w1:p2 ended %+v (%v), the ledger holds %+v (calls %v): the pane is left behind, unrecorded", ex, exited, recs, s.Methods())
	}
	if err == nil || !strings.Contains(err.Error(), "quitting") {
		t.Fatalf("the inspection returned %v, want why it was given up", err)
	}
}

// The same, where the ledger cannot be written either (a file stands
// where its directory belongs): the error says herdr-pi close will not
// know of the pane, not that it closes it.
func TestAMenuInspectionGivenUpWhosePaneNeitherClosesNorRecordsSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	f, s, done := menuInspectionStuckStarting(t, ctx)
	if err := os.WriteFile(handoff.LedgerAt(f.Paths().RuntimeBase).Dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.close"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom"}}})
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "herdr-pi close will not know of it") || strings.Contains(err.Error(), "closes it") {
		t.Fatalf("the inspection returned %v, want it to say herdr-pi close will not know of pane w1:p2", err)
	}
}

// A menu inspection whose pane is closed before it starts its command (the
// person closed it) says so, and leaves no record: the pane is gone, and
// Herdr's "not found" when it is closed again is no failure to close it.
func TestAMenuInspectionWhosePaneWentBeforeItStartedLeavesNoRecord(t *testing.T) {
	f, s, done := menuInspectionStuckStarting(t, t.Context())
	if err := herdr.NewClient(s.SocketPath()).PaneClose(t.Context(), "w1:p2"); err != nil {
		t.Fatal(err)
	}
	err := <-done
	recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
	if err == nil || !strings.Contains(err.Error(), "ended before it started") || strings.Contains(err.Error(), "failed too") || len(recs) != 0 {
		t.Fatalf("the inspection returned %v; the ledger holds %+v", err, recs)
	}
}

// A menu inspection given up while its pane starts, whose pane Herdr then
// refuses to close: the pane is in the ledger, so herdr-pi close can close
// it later, and the error says so.
func TestAMenuInspectionGivenUpWhosePaneWillNotCloseIsInTheLedger(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	f, s, done := menuInspectionStuckStarting(t, ctx)
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.close"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom"}}})
	cancel()
	err := <-done
	recs, _ := handoff.LedgerAt(f.Paths().RuntimeBase).List()
	if len(recs) != 1 || recs[0].Thing() != "pane w1:p2" || err == nil || !strings.Contains(err.Error(), "herdr-pi close") {
		t.Fatalf("the inspection returned %v; the ledger holds %+v, want pane w1:p2", err, recs)
	}
}

// Every field open --json prints is in docs/open.md's table of them, in
// each place open opens (a split, a new workspace, a reused tab): a script
// must not meet a field the documentation does not explain.
func TestOpenJSONPrintsOnlyDocumentedFields(t *testing.T) {
	documented := openJSONDocFields(t)
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	for _, place := range []string{"split", "workspace", "workspace"} {
		out.Reset()
		opts := &openOptions{Run: run, Attempt: "api", JSON: true, Place: place, StartTimeout: time.Minute, ForkTimeout: time.Millisecond}
		if err := openRun(t.Context(), f, opts); err != nil {
			t.Fatalf("open --%s: %v\n%s", place, err, errb)
		}
		var rep map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for k := range rep {
			if !documented[k] {
				t.Errorf("open --%s --json prints %q, which docs/open.md's open --json table does not name:\n%s", place, k, out)
			}
		}
	}
}

// Every field a line of open --json on a live attempt can carry is in
// docs/open.md's table of them: each field of the line is set, and its
// name looked for.
func TestOpenLiveJSONPrintsOnlyDocumentedFields(t *testing.T) {
	documented := docFieldTable(t, "### `open --json` on a live attempt\n")
	line := openLiveLine{Format: openLiveFormat, Attempt: "fixer#1", PrefixAlsoMatches: []handoff.OtherMatch{{ID: "x"}}}
	v := reflect.ValueOf(&line.Progress).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(1)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"x"}))
		case reflect.Struct:
			if _, ok := f.Interface().(time.Time); !ok {
				t.Fatalf("control.Progress.%s: a %s this test cannot set", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf(time.Unix(1, 0)))
		default:
			t.Fatalf("control.Progress.%s: a %s this test cannot set", v.Type().Field(i).Name, f.Kind())
		}
	}
	b, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]json.RawMessage
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for k := range rep {
		if !documented[k] {
			t.Errorf("a line of open --json on a live attempt may carry %q, which docs/open.md's table of them does not name", k)
		}
	}
}

// openJSONDocFields are the field names of docs/open.md's table under
// "### `open --json`" (each backquoted name in its first column).
func openJSONDocFields(t *testing.T) map[string]bool {
	t.Helper()
	return docFieldTable(t, "### `open --json`\n")
}

// docFieldTable are the field names of the docs/open.md table in the
// section whose heading line is heading.
func docFieldTable(t *testing.T, heading string) map[string]bool {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "open.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), heading)
	if !ok {
		t.Fatalf("docs/open.md has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	names := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cell, -1) {
			names[m[1]] = true
		}
	}
	if !names["pane_id"] || !names["format"] {
		t.Fatalf("read no field table from docs/open.md: %v", names)
	}
	return names
}

// An owner lease that cannot be read leaves open unable to tell whether a
// running attempt is live, and its error says that --inspect opens a fork
// regardless: with --inspect, open does (read-only, whatever the owner),
// and does not claim the owner is gone, which it cannot know.
func TestOpenInspectOpensDespiteABrokenOwnerLease(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	r, err := store.New(f.Paths().Home, f.IO.Dir).FindRun(run)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(r.Dir, "state.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st["state"] = "running"
	docs := st["agents"].([]any)[1].(map[string]any)
	docs["state"] = "running"
	for _, at := range docs["attemptDetails"].([]any) {
		delete(at.(map[string]any), "error")
	}
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.RunsDir, store.LeaseFile), []byte(`{"pid":12`), 0o600); err != nil {
		t.Fatal(err)
	}

	err = openRun(t.Context(), f, &openOptions{Run: run, Attempt: "docs", JSON: true, StartTimeout: time.Minute, ForkTimeout: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "invalid owner lease") || !strings.Contains(err.Error(), "`--inspect` opens a fork of the attempt regardless") {
		t.Fatalf("open without --inspect: %v, want the lease named and --inspect offered", err)
	}
	out.Reset()
	err = openRun(t.Context(), f, &openOptions{Run: run, Attempt: "docs", Inspect: true, JSON: true, StartTimeout: time.Minute, ForkTimeout: time.Millisecond})
	if err != nil {
		t.Fatalf("open --inspect, as the error advised: %v\n%s", err, errb)
	}
	var rep openReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.PaneID == "" || rep.OwnerGone {
		t.Fatalf("open --inspect --json: %+v (%v)\n%s", rep, err, out)
	}
}

// The menu's "Open session in Herdr pane" passes the session file the
// engine holds. One Pi cannot fork (cut short inside its header) is
// refused before Herdr hears anything, as open refuses it, in words short
// enough for the owner's notice area: else a pane opened whose Pi failed,
// left for the person to close.
func TestAMenuInspectionOfATranscriptPiCannotForkIsRefused(t *testing.T) {
	f, s, run, _, _ := openWorld(t, "exec sleep 600")
	a, err := store.New(f.Paths().Home, f.IO.Dir).Find(run, "api")
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, []byte(`{"type":"session","version":3,"id":"01a2`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := settings.Herdr{SocketPath: s.SocketPath(), PaneID: s.PaneID()}
	req := control.InspectRequest{RunID: run, SessionID: a.Record.Session.SessionID, SessionFile: cut}
	err = inspectFromMenu(t.Context(), f, h, true, f.IO.Dir, req, t.Logf)
	want := "session file cut.jsonl is empty or holds no JSON line, so Pi cannot fork it (a transcript cut short, or not Pi's)"
	if err == nil || err.Error() != want {
		t.Fatalf("the menu inspection: %v\nwant: %s", err, want)
	}
	for _, m := range s.Methods() {
		if m == "pane.split" || m == "tab.create" || m == "workspace.create" {
			t.Errorf("Herdr was asked %s before the transcript was refused", m)
		}
	}
}
