package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/picker/pickertest"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/golden"
	"github.com/herdr-pi/herdr-pi/settings"
)

// listNow is the clock of the generated stores: the newest run changed
// 30 s before it.
var listNow = time.Date(2026, 11, 29, 14, 4, 24, 0, time.UTC)

// listStore is a small generated store with what a listing must show
// besides plain runs: two projects, runs whose owner is gone, a run whose
// state.json is corrupt, an attempt whose transcript is missing.
type listStore struct {
	*storetest.Generated
	corrupt, noTranscript string // run ids
}

// runningRun is the first run of the generated store the engine still
// runs.
func (ls *listStore) runningRun(t testing.TB) *store.Run {
	t.Helper()
	st := store.New(ls.Home, ls.Cwd)
	for _, id := range ls.IDs {
		if r, err := st.FindRun(id); err == nil && r.State() == "running" {
			return r
		}
	}
	t.Fatal("the generated store has no running run")
	return nil
}

func newListStore(t testing.TB) *listStore {
	t.Helper()
	home := t.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 8, Projects: 2, RunsPerSession: 2, AgentsPerRun: 3, Seed: 11, Now: listNow.Add(-30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ls := &listStore{Generated: g, corrupt: g.IDs[5], noTranscript: g.IDs[0]}
	st := store.New(home, g.Cwd)
	r, err := st.FindRun(ls.corrupt)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.Dir, "state.json")
	fi, _ := os.Stat(path)
	if err := os.WriteFile(path, []byte(`{"id": "`+ls.corrupt+`", "agents": 7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
	r, err = st.FindRun(ls.noTranscript)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.PickText("docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a.SessionPath()); err != nil {
		t.Fatal(err)
	}
	return ls
}

// runOpen runs `herdr-pi open args…` in-process with HOME at home and the
// cwd at cwd, stdout going to out.
func runOpen(t testing.TB, home, cwd string, out *bytes.Buffer, env []string, args ...string) (code int, stderr string) {
	t.Helper()
	var errb bytes.Buffer
	io := IO{In: strings.NewReader(""), Out: out, Err: &errb, Dir: cwd, Env: append(openEnv(home), env...)}
	code = Main(context.Background(), append([]string{"herdr-pi", "open"}, args...), io)
	return code, errb.String()
}

// openEnv is an environment outside Herdr with everything under home.
func openEnv(home string) []string {
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config", "XDG_STATE_HOME=" + home + "/.state", "XDG_RUNTIME_DIR=" + home + "/run", "TERM=xterm-256color"}
}

// listingOf reads a store as open --list does, at the fixed clock.
func listingOf(t testing.TB, home, cwd, ref string) *handoff.Listing {
	t.Helper()
	st := store.New(home, cwd)
	st.Now = func() time.Time { return listNow }
	o, err := handoff.List(st, pathsFor(home), ref)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func pathsFor(home string) (p settings.Paths) {
	p.Home = home
	return p
}

// stable replaces the temporary home in output with $HOME.
func stable(s, home string) string { return strings.ReplaceAll(s, home, "$HOME") }

func TestOpenListGolden(t *testing.T) {
	ls := newListStore(t)
	all := listingOf(t, ls.Home, ls.Cwd, "")
	one := listingOf(t, ls.Home, ls.Cwd, ls.noTranscript[:6])
	// A running run whose owner Pi still runs (the lease names pid 1,
	// which always runs, so the output is the same every time): its
	// attempts are live, and the legend says what open does with them.
	var running *handoff.ListedRun
	for i := range all.Runs {
		if all.Runs[i].State == "running" {
			running = &all.Runs[i]
			break
		}
	}
	if running == nil {
		t.Fatal("the generated store has no running run")
	}
	r, err := store.New(ls.Home, ls.Cwd).FindRun(running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.RunsDir, store.LeaseFile), []byte(`{"pid":1,"token":"t","startedAt":1e15}`), 0o600); err != nil {
		t.Fatal(err)
	}
	live := listingOf(t, ls.Home, ls.Cwd, running.ID)
	for _, tc := range []struct {
		name string
		l    look
	}{{"plain", render.New(false, 0)}, {"colour at 80 columns", render.New(true, 80)}, {"plain at 60 columns", render.New(false, 60)}} {
		t.Run("runs "+tc.name, func(t *testing.T) {
			got := render.RunTable(all, tc.l)
			golden.Check(t, golden.Path(t), stable(got, ls.Home))
			checkWidth(t, got, tc.l.Width)
		})
		t.Run("run "+tc.name, func(t *testing.T) {
			got := render.RunDetail(one, &one.Runs[0], tc.l)
			golden.Check(t, golden.Path(t), stable(got, ls.Home))
			checkWidth(t, got, tc.l.Width)
		})
		t.Run("live run "+tc.name, func(t *testing.T) {
			got := render.RunDetail(live, &live.Runs[0], tc.l)
			if !strings.Contains(got, "live (pid ") {
				t.Fatalf("no live attempt in\n%s", got)
			}
			golden.Check(t, golden.Path(t), stable(got, ls.Home))
			checkWidth(t, got, tc.l.Width)
		})
	}
}

// checkWidth fails when a line is wider than a terminal of width columns
// (0: no limit).
func checkWidth(t *testing.T, out string, width int) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if w := visibleWidth(line); width > 0 && w > width {
			t.Errorf("line %d is %d columns wide (terminal: %d): %q", i+1, w, width, line)
		}
	}
}

// listJSON runs open --list --json [ref] and checks it against the
// documented schema.
func listJSON(t *testing.T, home, cwd string, ref ...string) (handoff.Listing, string) {
	t.Helper()
	var out bytes.Buffer
	code, stderr := runOpen(t, home, cwd, &out, nil, append([]string{"--list", "--json"}, ref...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validate(t, compileSchema(t, "open"), out.String())
	var o handoff.Listing
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	return o, out.String()
}

func TestOpenListJSON(t *testing.T) {
	ls := newListStore(t)
	o, _ := listJSON(t, ls.Home, ls.Cwd)
	if o.Format != handoff.ListFormat || len(o.Runs) != len(ls.IDs) {
		t.Fatalf("format %q, %d runs; want %d", o.Format, len(o.Runs), len(ls.IDs))
	}
	for i, r := range o.Runs {
		// Most recent first: the generator's order.
		if r.ID != ls.IDs[i] {
			t.Errorf("run %d is %s, want %s", i, r.ID, ls.IDs[i])
		}
		if r.Here != (i%2 == 0) {
			t.Errorf("run %d here %v: runs alternate between the two projects, the caller's first", i, r.Here)
		}
		if r.ID == ls.corrupt {
			if !strings.Contains(r.Problem, "state.json") || !strings.Contains(r.Problem, "corrupt") || len(r.Agents) != 0 {
				t.Errorf("the corrupt run: problem %q, %d agents", r.Problem, len(r.Agents))
			}
			continue
		}
		if r.Problem != "" || len(r.Agents) != 3 {
			t.Errorf("run %s: problem %q, %d agents", r.Short, r.Problem, len(r.Agents))
		}
	}
	// The run with a missing transcript: docs#1 cannot be opened, and
	// says why in open's words.
	r := o.Runs[0]
	docs := r.Agents[1].Attempts[0]
	if docs.Name != "docs#1" || docs.Action != handoff.ActionNone || !strings.Contains(docs.Problem, "does not exist any more: the attempt has ended") {
		t.Errorf("docs#1: %+v", docs)
	}
	tests := r.Agents[2].Attempts
	if len(tests) != 2 || tests[0].State != "failed" || tests[0].Error == nil || tests[1].Action != handoff.ActionOpen || tests[1].Selector != "tests#2" {
		t.Errorf("tests: %+v", tests)
	}
	// A running run without an owner lease: the owner is gone.
	running := o.Runs[3]
	if running.State != "running" || running.Owner != nil {
		t.Fatalf("run 3: %s owner %+v", running.State, running.Owner)
	}
	if a := running.Agents[1].Attempts[0]; a.Action != handoff.ActionGone || !a.OwnerGone || a.Settled || a.Live {
		t.Errorf("a running attempt whose owner is gone: %+v", a)
	}
	if a := running.Agents[0].Attempts[0]; a.Action != handoff.ActionOpen || !a.Settled {
		t.Errorf("a completed attempt of a running run: %+v", a)
	}

	t.Run("one run", func(t *testing.T) {
		one, _ := listJSON(t, ls.Home, ls.Cwd, ls.IDs[2][:5])
		if len(one.Runs) != 1 || one.Runs[0].ID != ls.IDs[2] {
			t.Fatalf("%+v", one.Runs)
		}
	})
}

// Every JSON example in docs/open.md matches the schema.
func TestOpenDocExamplesMatchTheSchema(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "open.md"))
	if err != nil {
		t.Fatal(err)
	}
	schema := compileSchema(t, "open")
	blocks := strings.Split(string(md), "```json\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("docs/open.md has %d json examples, want one of each format", len(blocks))
	}
	for _, b := range blocks {
		block, _, _ := strings.Cut(b, "```")
		validate(t, schema, block)
	}
	// JSON lines (open --json on a live attempt): each line.
	for _, b := range strings.Split(string(md), "```jsonl\n")[1:] {
		block, _, _ := strings.Cut(b, "```")
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			validate(t, schema, line)
		}
	}
}

func TestOpenListEmptyStore(t *testing.T) {
	home := t.TempDir()
	var out bytes.Buffer
	code, stderr := runOpen(t, home, home, &out, nil, "--list")
	if code != 0 || !strings.Contains(out.String(), "No workflow runs under ~/.pi/workflows/projects yet") {
		t.Fatalf("exit %d: %q %q", code, out.String(), stderr)
	}
	o, raw := listJSON(t, home, home)
	if len(o.Runs) != 0 || !strings.Contains(raw, `"runs": []`) || o.Store != filepath.Join(home, ".pi", "workflows", "projects") {
		t.Fatalf("%s", raw)
	}
}

func TestOpenListNoSuchRun(t *testing.T) {
	ls := newListStore(t)
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", "zzzz")
	if code != 1 || out.Len() != 0 || !strings.Contains(stderr, `no workflow run "zzzz" under `+ls.Home) {
		t.Fatalf("exit %d: %q %q", code, out.String(), stderr)
	}
	// A path is no run id; the store has runs, so "no runs yet" would mislead.
	for _, ref := range []string{"..", "/"} {
		out.Reset()
		code, stderr = runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", ref)
		if code != 1 || out.Len() != 0 || !strings.Contains(stderr, fmt.Sprintf("%q is not a run id", ref)) || strings.Contains(stderr, "no runs") {
			t.Fatalf("--list %s: exit %d: %q %q", ref, code, out.String(), stderr)
		}
	}
}

// A store of 1,000 runs lists whole, newest first, and validates.
func TestOpenListThousandRuns(t *testing.T) {
	home := t.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 1000, Projects: 8, RunsPerSession: 5, AgentsPerRun: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := listJSON(t, home, g.Cwd)
	if len(o.Runs) != 1000 {
		t.Fatalf("%d runs", len(o.Runs))
	}
	for i, r := range o.Runs {
		if r.ID != g.IDs[i] || r.Problem != "" {
			t.Fatalf("run %d: %s (problem %q), want %s", i, r.ID, r.Problem, g.IDs[i])
		}
	}
	var out bytes.Buffer
	if code, stderr := runOpen(t, home, g.Cwd, &out, nil, "--list"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1000+3 {
		t.Errorf("%d lines for 1,000 runs, want a line each, the header and the footer", lines)
	}
}

func BenchmarkOpenList1000(b *testing.B) {
	home := b.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 1000, Projects: 8, RunsPerSession: 5, AgentsPerRun: 3, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	st := store.New(home, g.Cwd)
	for b.Loop() {
		o, err := handoff.List(st, pathsFor(home), "")
		if err != nil || len(o.Runs) != 1000 {
			b.Fatal(err)
		}
		render.RunTable(o, render.New(false, 0))
	}
}

// The store the real engine writes under a real Pi: a completed, a retried
// and a failed run of an owner that exited, and a run whose owner was
// SIGKILLed mid-attempt, listed once while that owner still ran.
func TestOpenListRealStore(t *testing.T) {
	var whileOwned handoff.Listing
	fx := storetest.MakeReal(t, func(o *storetest.Owner) {
		whileOwned, _ = listJSON(t, o.Env.Agent.Home, o.Env.Agent.Project, o.RunID)
	})
	home, project := fx.Home(), fx.Agent.Project
	o, _ := listJSON(t, home, project)
	byID := map[string]handoff.ListedRun{}
	var order []string
	for _, r := range o.Runs {
		byID[r.ID] = r
		order = append(order, r.Workflow)
		if !r.Here || r.Problem != "" || r.Cwd != project {
			t.Errorf("run %s (%s): here %v, problem %q, cwd %q", r.Short, r.Workflow, r.Here, r.Problem, r.Cwd)
		}
	}
	// The killed run was written last; the others' order is the engine's
	// (it may rewrite a finished run after the next one started).
	if len(o.Runs) != 4 || order[0] != storetest.KilledWorkflow {
		t.Fatalf("runs %q", order)
	}
	type want struct{ name, state, action string }
	check := func(id string, wants ...want) {
		t.Helper()
		r := byID[id]
		var got []handoff.ListedAttempt
		for _, ag := range r.Agents {
			got = append(got, ag.Attempts...)
		}
		if len(got) != len(wants) {
			t.Fatalf("%s: %d attempts, want %d: %+v", r.Workflow, len(got), len(wants), got)
		}
		// Parallel agents are recorded in the order they started, which the
		// engine does not fix: compare by name.
		slices.SortStableFunc(got, func(x, y handoff.ListedAttempt) int { return strings.Compare(x.Name, y.Name) })
		for i, w := range wants {
			a := got[i]
			if a.Name != w.name || a.State != w.state || a.Action != w.action || a.Selector != w.name {
				t.Errorf("%s attempt %d: %s %s %s (selector %s), want %s %s %s", r.Workflow, i, a.Name, a.State, a.Action, a.Selector, w.name, w.state, w.action)
			}
			if a.Model != "fake/fake-model:off" || a.Cwd != project {
				t.Errorf("%s %s: model %q cwd %q", r.Workflow, a.Name, a.Model, a.Cwd)
			}
			if _, err := os.Stat(a.SessionFile); err != nil {
				t.Errorf("%s %s: %v", r.Workflow, a.Name, err)
			}
		}
	}
	check(fx.Completed, want{"api#1", "completed", handoff.ActionOpen}, want{"docs#1", "completed", handoff.ActionOpen})
	check(fx.Retried, want{"fixer#1", "failed", handoff.ActionOpen}, want{"fixer#2", "completed", handoff.ActionOpen})
	check(fx.Failed, want{"lint#1", "failed", handoff.ActionOpen})
	check(fx.Killed, want{"api#1", "running", handoff.ActionGone})
	if r := byID[fx.Retried]; r.Agents[0].Attempts[0].Error == nil || r.Agents[0].Attempts[1].Error != nil {
		t.Errorf("fixer: the engine's error belongs to #1 only: %+v", r.Agents[0].Attempts)
	}
	killed := byID[fx.Killed]
	if killed.Owner == nil || killed.Owner.PID != fx.KilledPID || killed.Owner.Alive {
		t.Errorf("the killed run's owner: %+v, want pid %d gone", killed.Owner, fx.KilledPID)
	}
	if a := killed.Agents[0].Attempts[0]; !a.OwnerGone || a.Live || a.Settled {
		t.Errorf("the killed attempt: %+v", a)
	}
	for _, id := range []string{fx.Completed, fx.Retried, fx.Failed} {
		if r := byID[id]; r.Owner != nil {
			t.Errorf("%s: an owner that exited cleanly leaves no lease: %+v", r.Workflow, r.Owner)
		}
	}
	// While its owner ran, the same attempt was live.
	if len(whileOwned.Runs) != 1 {
		t.Fatalf("while owned: %+v", whileOwned.Runs)
	}
	if r := whileOwned.Runs[0]; r.Owner == nil || !r.Owner.Alive || r.Agents[0].Attempts[0].Action != handoff.ActionLive || !r.Agents[0].Attempts[0].Live {
		t.Errorf("while its owner ran: owner %+v, attempt %+v", r.Owner, r.Agents[0].Attempts)
	}

	// The human forms name the same things.
	var out bytes.Buffer
	if code, stderr := runOpen(t, home, project, &out, nil, "--list"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("open --list:\n%s", stable(out.String(), home))
	if line := lineWith(out.String(), fx.Killed[:8]); !strings.Contains(line, "api#1 (gone)") || !strings.Contains(line, "(here)") {
		t.Errorf("the killed run's row: %q", line)
	}
	if line := lineWith(out.String(), fx.Retried[:8]); !strings.Contains(line, "fixer#1 fixer#2") {
		t.Errorf("the retried run's row: %q", line)
	}
	for _, id := range []string{fx.Killed, fx.Retried} {
		out.Reset()
		if code, stderr := runOpen(t, home, project, &out, nil, "--list", id[:8]); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		t.Logf("open --list %s:\n%s", id[:8], stable(out.String(), home))
	}
	if line := lineWith(out.String(), "fixer#1"); !strings.Contains(line, "failed") || !strings.Contains(line, "open") {
		t.Errorf("fixer#1's row: %q", line)
	}
}

func lineWith(s, part string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, part) {
			return line
		}
	}
	return ""
}

type picked struct {
	run, attempt string
	err          error
}

// pickOn runs openPick on a real terminal with the store of ls.
func pickOn(t *testing.T, ls *listStore, env ...string) (*pickertest.Term, <-chan picked) {
	t.Helper()
	tm := pickertest.Open(t, 30, 110)
	f := NewFactory(IO{In: tm.TTY, Out: tm.TTY, Err: io.Discard, Env: append(openEnv(ls.Home), env...), Dir: ls.Cwd})
	st := store.New(ls.Home, ls.Cwd)
	st.Now = func() time.Time { return listNow }
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan picked, 1), make(chan struct{})
	go func() {
		defer close(finished)
		run, attempt, err := openPick(ctx, f, st)
		done <- picked{run, attempt, err}
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return tm, done
}

// The picker shows runs most recent first with their attempts; Enter on
// an attempt gives open its run and selector.
func TestOpenPickChoosesAnAttempt(t *testing.T) {
	ls := newListStore(t)
	tm, done := pickOn(t, ls)
	s := tm.WaitLine(t, "> api#1")
	t.Logf("the picker:\n%s", stable(s, ls.Home))
	if !strings.Contains(s, "8 runs in ~/.pi/workflows/projects") {
		t.Errorf("no title:\n%s", s)
	}
	// The newest run comes first, and docs#1 (no transcript) shows why it
	// cannot be chosen.
	if h := strings.Index(s, ls.IDs[0][:8]); h < 0 || h > strings.Index(s, ls.IDs[1][:8]) {
		t.Errorf("runs are not most recent first:\n%s", s)
	}
	if line := pickertest.LineWith(s, "docs#1"); !strings.Contains(line, "none: session file") {
		t.Errorf("docs#1: %q", line)
	}
	// Down skips docs#1.
	tm.Press(t, pickertest.Down)
	tm.WaitLine(t, "> tests#1")
	tm.Press(t, pickertest.Enter)
	p := <-done
	if p.err != nil || p.run != ls.IDs[0] || p.attempt != "tests#1" {
		t.Fatalf("picked %+v, want run %s tests#1", p, ls.IDs[0])
	}
	// A filter finds an older run's attempt.
	tm2, done2 := pickOn(t, ls)
	tm2.WaitLine(t, "> api#1")
	tm2.Press(t, "/", ls.IDs[3][:8], pickertest.Enter)
	tm2.WaitLine(t, "> api#1")
	tm2.Press(t, pickertest.Down, pickertest.Down)
	tm2.WaitLine(t, "> tests#1")
	tm2.Press(t, pickertest.Enter)
	if p := <-done2; p.err != nil || p.run != ls.IDs[3] || p.attempt != "tests#1" {
		t.Fatalf("picked %+v, want run %s tests#1", p, ls.IDs[3])
	}
}

// herdr-pi open without arguments on a terminal in a Herdr pane: the
// picker; Esc exits 130 saying nothing opened; Enter hands the attempt to
// open, which opens it there.
func TestOpenWithoutArgumentsPicks(t *testing.T) {
	ls := newListStore(t)
	inHerdr := append(openEnv(ls.Home), "HERDR_ENV=1", "HERDR_SOCKET_PATH="+filepath.Join(ls.Home, "no-herdr.sock"), "HERDR_PANE_ID=w1:p1")
	for _, tc := range []struct {
		keys   []string
		code   int
		stderr string
	}{
		{[]string{pickertest.Esc}, exitInterrupted, "herdr-pi open: cancelled; nothing opened"},
		{[]string{pickertest.CtrlC}, exitInterrupted, "cancelled"},
		// The chosen attempt goes on to open, which needs Pi (the test's
		// environment has no PATH).
		{[]string{pickertest.Enter}, exitError, `herdr-pi open: "pi" is not on your PATH`},
	} {
		tm := pickertest.Open(t, 30, 110)
		var errb bytes.Buffer
		code := make(chan int, 1)
		go func() {
			code <- Main(context.Background(), []string{"herdr-pi", "open"}, IO{In: tm.TTY, Out: tm.TTY, Err: &errb, Env: inHerdr, Dir: ls.Cwd})
		}()
		tm.WaitLine(t, "> api#1")
		tm.Press(t, tc.keys...)
		if got := <-code; got != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("keys %q: exit %d, stderr %q; want %d and %q", tc.keys, got, errb.String(), tc.code, tc.stderr)
		}
	}
	// Not on a terminal: no picker, a usage error.
	var out bytes.Buffer
	if code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil); code != exitUsage || !strings.Contains(stderr, "herdr-pi open --list shows them") {
		t.Errorf("without a terminal: exit %d, %q", code, stderr)
	}
}

// open --json's object, as openRun fills it for each place, matches the
// documented schema.
func TestOpenReportMatchesTheSchema(t *testing.T) {
	schema := compileSchema(t, "open")
	opened := handoff.Opened{Placed: handoff.Placed{PaneID: "w1:p4", Direction: "right", Created: []string{"pane w1:p4"}},
		Command: []string{"/bin/herdr-pi", "wrap", "--agent", "pi", "--", "/bin/pi", "--fork", "/s.jsonl"}, Env: []string{"PATH=/bin"}, Cwd: "/src/api"}
	split := openReport{Format: openFormat, Run: "8d443e51-8bad", Workflow: "fx-retry", Attempt: "fixer#1", Session: "/s.jsonl",
		Fork: "/f.jsonl", Model: "fake/fake-model:off", Mode: string(handoff.ModeSplit), Opened: opened}
	reused := split
	reused.Mode, reused.Fork, reused.OwnerGone = string(handoff.ModeWorkspace), "", true
	reused.Opened.Placed = handoff.Placed{PaneID: "w2:p1", TabID: "w2:t2", WorkspaceID: "w2", Reused: true}
	waited := split
	waited.Ended = string(handoff.PaneExited)
	for _, rep := range []openReport{split, reused, waited} {
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, schema, string(b))
	}
	// The schema does tell the two formats apart.
	b, _ := json.Marshal(struct {
		openReport
		Runs []handoff.ListedRun `json:"runs"`
	}{openReport: split})
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bytes.Replace(b, []byte(openFormat), []byte(handoff.ListFormat), 1)))
	if schema.Validate(inst) == nil {
		t.Error("an open report under the list's format tag validates")
	}
}

// Names in the store come from workflows and from whatever wrote the
// directories: their control characters never reach the terminal.
func TestOpenListSanitises(t *testing.T) {
	home := t.TempDir()
	g, err := storetest.Generate(home, storetest.Synthetic{Runs: 2, AgentsPerRun: 1, Seed: 3, Now: listNow})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(home, g.Cwd)
	r, err := st.FindRun(g.IDs[0])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.Dir, "state.json")
	data, _ := os.ReadFile(path)
	// The run's own state is the store's word too.
	var run map[string]any
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	run["state"] = "odd\x1b]0;state\x07"
	data, _ = json.Marshal(run)
	data = bytes.Replace(data, []byte(`"workflowName":"review-0"`), []byte(`"workflowName":"evil\u001b]0;title\u0007\u001b[31mred"`), 1)
	data = bytes.ReplaceAll(data, []byte(`"name":"api"`), []byte(`"name":"a\u001b[2Jpi"`))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The other run's directory renamed by something else: listed as
	// unreadable (its state names another run), with both names quoted.
	other, err := st.FindRun(g.IDs[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other.Dir, filepath.Join(filepath.Dir(other.Dir), "\x1b]0;x\x07run")); err != nil {
		t.Fatal(err)
	}
	o := listingOf(t, home, g.Cwd, "")
	evil := slices.IndexFunc(o.Runs, func(r handoff.ListedRun) bool { return r.ID == g.IDs[0] })
	if evil < 0 || o.Runs[evil].Workflow != "evil\x1b]0;title\x07\x1b[31mred" || o.Runs[evil].State != "odd\x1b]0;state\x07" || len(o.Runs) != 2 {
		t.Fatalf("the fixture did not take: %+v", o.Runs)
	}
	groups, _ := pickerGroups(o)
	shown := render.RunTable(o, render.New(true, 100))
	for i := range o.Runs {
		shown += render.RunDetail(o, &o.Runs[i], render.New(true, 100))
	}
	for _, g := range groups {
		shown += g.Title
		for _, it := range g.Items {
			shown += it.Text
		}
	}
	for _, bad := range []string{"\x07", "\x1b]", "\x1b[31m", "\x1b[2J"} {
		if strings.Contains(shown, bad) {
			t.Errorf("%q reached the output:\n%q", bad, shown)
		}
	}
}

// A live attempt can be chosen in the picker, and choosing it hands it off
// (open without --inspect): its hint says that, as the listing's legend
// does, not that only --inspect opens it.
func TestOpenPickHintOfALiveAttempt(t *testing.T) {
	listing := &handoff.Listing{Runs: []handoff.ListedRun{{ID: "3f0c9a2e-0000-4000-8000-000000000001", Short: "3f0c9a2e", Ref: "3f0c9a2e", Workflow: "review",
		Agents: []handoff.ListedAgent{{Name: "fixer", Attempts: []handoff.ListedAttempt{
			{N: 1, Name: "fixer#1", Selector: "fixer#1", State: "running", Live: true, OwnerPID: 4711, Action: handoff.ActionLive}}}}}}}
	groups, picks := pickerGroups(listing)
	if len(picks) != 1 {
		t.Fatalf("the live attempt cannot be chosen: %+v", picks)
	}
	hint := groups[0].Items[0].Hint
	if strings.Contains(hint, "only --inspect") || !strings.Contains(hint, "hands it off") || !strings.Contains(hint, "--inspect") {
		t.Fatalf("the hint of a live attempt: %q; want it to say open hands it off to a pane (and --inspect forks it)", hint)
	}
}

// A live attempt whose transcript Pi has not written yet (Pi writes it
// after the agent's first reply) is still live: open hands it off (the
// handoff waits for the end of the turn, when the file is there), so the
// listing says live, as open does, and not that nothing can be opened.
func TestOpenListALiveAttemptWithoutItsTranscriptYet(t *testing.T) {
	ls := newListStore(t)
	run := ls.runningRun(t)
	// This process owns the run's session: its lease is alive.
	lease := fmt.Sprintf(`{"pid":%d,"token":"t","startedAt":%d}`+"\n", os.Getpid(), time.Now().Add(time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(filepath.Dir(run.Dir), "owner.json"), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := run.PickText("docs")
	if err != nil {
		t.Fatal(err)
	}
	if live, _, err := a.Live(); !live || err != nil {
		t.Fatalf("docs is not live: %v", err)
	}
	if err := os.Remove(a.SessionPath()); err != nil {
		t.Fatal(err)
	}
	// open takes it for live: it looks for the owner's herdr-pi wrap.
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, run.ID, "docs")
	if code != exitError || !strings.Contains(stderr, "does not run under herdr-pi wrap") {
		t.Fatalf("open %s docs: exit %d, %q", run.Short(), code, stderr)
	}
	o, _ := listJSON(t, ls.Home, ls.Cwd, run.ID)
	docs := o.Runs[0].Agents[1].Attempts[0]
	if docs.Name != "docs#1" || docs.Action != handoff.ActionLive {
		t.Fatalf("the listing says %+v; open hands docs#1 off, so its action is live", docs)
	}
}

// A state.json that is valid JSON but no run (null, an empty object, an
// object without the fields the engine always writes) is unreadable, as
// `[]` is: listed with its problem, and open says that problem rather
// than that the run has no attempts.
func TestOpenReportsAStateThatIsNoRun(t *testing.T) {
	ls := newListStore(t)
	run := ls.IDs[2]
	r, err := store.New(ls.Home, ls.Cwd).FindRun(run)
	if err != nil {
		t.Fatal(err)
	}
	for state, says := range map[string]string{
		`null`:                     "want a JSON object, got null",
		`{}`:                       "no id, workflowName and state",
		`{"id":"` + run + `"}`:     "no workflowName and state",
		`{"agents":[],"state":""}`: "no id, workflowName and state",
		// Another run's state, here: the engine would not load it.
		`{"id":"` + ls.IDs[3] + `","workflowName":"w","state":"running"}`: `names run "` + ls.IDs[3] + `", but its directory is named "` + run + `"`,
	} {
		if err := os.WriteFile(filepath.Join(r.Dir, "state.json"), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
		o, _ := listJSON(t, ls.Home, ls.Cwd)
		for _, lr := range o.Runs {
			if lr.ID == run && (!strings.Contains(lr.Problem, says) || lr.State != "") {
				t.Errorf("state.json %s: listed with state %q, problem %q; want it to say %q", state, lr.State, lr.Problem, says)
			}
		}
		var out bytes.Buffer
		code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, run[:8], "api")
		if code != 1 || !strings.Contains(stderr, says) || strings.Contains(stderr, "no attempt") {
			t.Errorf("open %s api with state.json %s: exit %d, stderr %q; want exit 1 saying %q", run[:8], state, code, stderr, says)
		}
	}
}

// An attempt number gone wrong is a usage mistake (exit 2) however it is
// wrong — #0, a negative number, nothing after the # — not a search for
// an agent of that name (exit 1).
func TestOpenBadAttemptNumbersAreUsageErrors(t *testing.T) {
	ls := newListStore(t)
	for sel, says := range map[string]string{
		"api#0":  "attempt numbers start at 1",
		"api#-1": "attempt numbers start at 1",
		"api#":   "no attempt number after #",
	} {
		var out bytes.Buffer
		code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, ls.IDs[1][:8], sel)
		if code != exitUsage || out.Len() != 0 || !strings.Contains(stderr, says) {
			t.Errorf("open %s %s: exit %d, stderr %q; want exit %d saying %q", ls.IDs[1][:8], sel, code, stderr, exitUsage, says)
		}
	}
}

// Two runs whose ids share their first 8 characters are listed with
// prefixes long enough to tell them apart, and the hints built on them
// name one run each: `herdr-pi open <short> …` must not be ambiguous.
func TestOpenListShortIDsNameOneRun(t *testing.T) {
	ls := newListStore(t)
	st := store.New(ls.Home, ls.Cwd)
	orig, err := st.FindRun(ls.IDs[1])
	if err != nil {
		t.Fatal(err)
	}
	twin := orig.ID[:9] + strings.Repeat("f", len(orig.ID)-9)
	if twin == orig.ID {
		t.Fatalf("the twin of %s is itself", orig.ID)
	}
	dst := filepath.Join(filepath.Dir(orig.Dir), twin)
	if err := os.CopyFS(dst, os.DirFS(orig.Dir)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dst, "state.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, bytes.ReplaceAll(b, []byte(orig.ID), []byte(twin)), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _ := listJSON(t, ls.Home, ls.Cwd)
	shorts := map[string]string{}
	for _, r := range o.Runs {
		shorts[r.ID] = r.Ref
		if id, err := st.RunID(r.Ref); err != nil || id != r.ID || r.Short != r.ID[:8] {
			t.Errorf("run %s is listed as %s (short %s), which names %q (%v)", r.ID, r.Ref, r.Short, id, err)
		}
	}
	if shorts[orig.ID] == shorts[twin] || len(shorts[ls.IDs[2]]) != 8 {
		t.Errorf("short ids %q", shorts)
	}
	// The table and one run's hints.
	var out bytes.Buffer
	if code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list"); code != 0 || !strings.Contains(out.String(), shorts[twin]+"  ") || !strings.Contains(out.String(), shorts[orig.ID]+"  ") {
		t.Errorf("--list: exit %d, %q\n%s", code, stderr, out.String())
	}
	out.Reset()
	if code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", twin); code != 0 || !strings.Contains(out.String(), "herdr-pi open "+shorts[twin]+" ") {
		t.Errorf("--list %s: exit %d, %q; want hints naming %s\n%s", twin, code, stderr, shorts[twin], out.String())
	}
}

// An attempt left unsettled by an owner Pi that has no lease any more
// (it exited, removing it) is not said to have lost its owner to a kill:
// its STATUS says the owner exited, whatever engine state (known or not,
// as teleported) the attempt was left in. `owner gone (pid N)` is for a
// lease left behind.
func TestOpenListAnOwnerThatExitedIsNotGone(t *testing.T) {
	ls := newListStore(t)
	o, _ := listJSON(t, ls.Home, ls.Cwd)
	run := o.Runs[3]
	if at := run.Agents[1].Attempts[0]; run.Owner != nil || !at.OwnerGone || at.OwnerPID != 0 {
		t.Fatalf("run %s: owner %+v, attempt %+v; want an unsettled attempt without a lease", run.Short, run.Owner, at)
	}
	name := run.Agents[1].Attempts[0].Name
	r, err := store.New(ls.Home, ls.Cwd).FindRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, agentState := range []string{run.Agents[1].State, "teleported"} {
		editRunState(t, r.Dir, func(st map[string]any) { st["agents"].([]any)[1].(map[string]any)["state"] = agentState })
		var out bytes.Buffer
		code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", run.ID)
		var row string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), name+" ") {
				row = l
			}
		}
		if code != 0 || !strings.Contains(row, agentState) || !strings.Contains(row, "owner exited") || strings.Contains(row, "owner gone") {
			t.Errorf("agent state %s: exit %d %q; row %q, want STATUS owner exited\n%s", agentState, code, stderr, row, out.String())
		}
	}
}

// A run that cannot be read is shown in its project's directory, as the
// others are, not as the bare storage key: the key is a hash of that
// directory, which the caller's own cwd (or another run) tells.
func TestOpenListShowsTheProjectOfAnUnreadableRun(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "src", "shop")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".pi", "workflows", "projects", store.ProjectKey(cwd), "sessions", "s1", "runs", "3f0c9a2e-0000-4000-8000-000000000001")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("null"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, stderr := runOpen(t, home, cwd, &out, nil, "--list")
	if code != 0 || !strings.Contains(out.String(), "~/src/shop (here)") {
		t.Fatalf("exit %d %q; want the project shown as ~/src/shop (here)\n%s", code, stderr, out.String())
	}
}

// The picker draws every word of a listing from the store on the
// terminal: each one, an attempt's state, model and note and a broken
// run's note included, is cleaned and still shown.
func TestPickerCleansEveryField(t *testing.T) {
	const evil = "\x1b]0;x\a\u009b1m\u202e"
	o := &handoff.Listing{Runs: []handoff.ListedRun{
		{ID: "r1", Ref: "runref" + evil, Workflow: "wf" + evil, State: "done", Agents: []handoff.ListedAgent{{Name: "ag", Attempts: []handoff.ListedAttempt{
			{N: 1, Name: "atname" + evil, Selector: "s#1", State: "atstate" + evil, Model: "atmodel" + evil, Action: handoff.ActionOpen},
			{N: 2, Name: "other", Selector: "s#2", State: "x", Action: handoff.ActionNone, Note: "atnote" + evil}}}}},
		{ID: "r2", Ref: "broken", Problem: "p", Note: "runnote" + evil},
	}}
	groups, _ := pickerGroups(o)
	var shown string
	for _, g := range groups {
		shown += g.Title + "\n"
		for _, it := range g.Items {
			shown += it.Text + "\n"
		}
	}
	for _, want := range []string{"runref", "wf", "atname", "atstate", "atmodel", "atnote", "runnote"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the picker lacks %q, so this test proves nothing for it:\n%s", want, shown)
		}
	}
	if strings.ContainsAny(shown, "\x1b\a\u009b\u202e") {
		t.Errorf("a control character reaches the picker:\n%q", shown)
	}
}

// A run the engine marked interrupted (the next Pi of its session started
// after a crash: it holds the session's lease, and the run's agents keep
// the "running" they had) runs none of its agents until it is resumed.
// Its unsettled attempt is not live: the listing says the run was
// interrupted and offers the fork of what it left, and open forks it,
// instead of asking that Pi for a handoff it could only refuse.
func TestOpenListAnAttemptOfAnInterruptedRunIsNotLive(t *testing.T) {
	ls := newListStore(t)
	run := ls.runningRun(t)
	lease := fmt.Sprintf(`{"pid":%d,"token":"t","startedAt":%d}`+"\n", os.Getpid(), time.Now().Add(time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(filepath.Dir(run.Dir), "owner.json"), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	editRunState(t, run.Dir, func(st map[string]any) { st["state"] = "interrupted" }) // all the engine changes when it marks the run
	o, _ := listJSON(t, ls.Home, ls.Cwd, run.ID)
	var unsettled []handoff.ListedAttempt
	for _, ag := range o.Runs[0].Agents {
		for _, at := range ag.Attempts {
			if !at.Settled {
				unsettled = append(unsettled, at)
			}
		}
	}
	if len(unsettled) == 0 {
		t.Fatalf("run %s has no unsettled attempt", run.Short())
	}
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", run.ID)
	for _, at := range unsettled {
		if at.Live || !at.OwnerGone || at.Action != handoff.ActionGone {
			t.Errorf("%s: live %v, owner gone %v, action %s; want not live, gone", at.Name, at.Live, at.OwnerGone, at.Action)
		}
		var row string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), at.Name+" ") {
				row = l
			}
		}
		if code != 0 || !strings.Contains(row, "run interrupted") {
			t.Errorf("%s: exit %d %q; row %q, want STATUS run interrupted", at.Name, code, stderr, row)
		}
	}
	// open takes it for what it left: it needs Herdr for that, not the
	// owner's herdr-pi wrap.
	code, stderr = runOpen(t, ls.Home, ls.Cwd, &out, nil, run.ID, unsettled[0].Selector)
	if code != exitError || strings.Contains(stderr, "herdr-pi wrap") || !strings.Contains(stderr, "not inside a Herdr pane") {
		t.Fatalf("open %s %s: exit %d, %q; want it to fork (outside Herdr: not in a Herdr pane)", run.Short(), unsettled[0].Selector, code, stderr)
	}
}

// editRunState rewrites the run's state.json in dir as edit changes it.
func editRunState(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	state := filepath.Join(dir, "state.json")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A sessions or runs directory the listing cannot look into hides its
// runs: the listing says so, one line on stderr naming the directory,
// why and the way out, and a field of --json; it still lists the rest
// and exits 0.
func TestOpenListSaysWhichDirectoriesItCouldNotRead(t *testing.T) {
	ls := newListStore(t)
	blocked := filepath.Join(ls.Home, ".pi", "workflows", "projects", store.ProjectKey(ls.Cwd), "sessions", "s-blocked", "runs")
	if err := os.MkdirAll(filepath.Dir(blocked), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocked, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "herdr-pi open: the runs in ") || !strings.Contains(lines[0], blocked) ||
		!strings.Contains(lines[0], "move it away") || !strings.Contains(lines[0], "not listed") {
		t.Fatalf("exit %d, stderr %q; want one warning naming %s, why and the way out", code, stderr, blocked)
	}
	if n := strings.Count(out.String(), "\n"); n < len(ls.IDs) {
		t.Errorf("the readable runs are not all listed:\n%s", out.String())
	}
	o, _ := listJSON(t, ls.Home, ls.Cwd)
	if len(o.Runs) != len(ls.IDs) || len(o.Unreadable) != 1 || o.Unreadable[0].Path != blocked || !strings.Contains(o.Unreadable[0].Problem, "move it away") {
		t.Fatalf("--json: %d runs, unreadable %+v", len(o.Runs), o.Unreadable)
	}
}

// Outside a Herdr pane nothing the picker offers can open (an inspection
// needs a pane of the Herdr open runs in): open says so at once, as it
// does with a run and an attempt, rather than let the person browse and
// choose, and tell them only then.
func TestOpenWithoutArgumentsOutsideHerdrSaysSoBeforeThePicker(t *testing.T) {
	ls := newListStore(t)
	tm := pickertest.Open(t, 30, 110)
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"herdr-pi", "open"}, IO{In: tm.TTY, Out: tm.TTY, Err: &errb, Env: openEnv(ls.Home), Dir: ls.Cwd})
	}()
	select {
	case code := <-done:
		if code != exitError || !strings.Contains(errb.String(), "not inside a Herdr pane") || !strings.Contains(errb.String(), "--list") {
			t.Fatalf("exit %d, stderr %q; want exit 1, not inside a Herdr pane, and open --list for the runs", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		screen := tm.Screen()
		tm.Press(t, "q")
		<-done
		t.Fatalf("open without arguments outside Herdr showed the picker, whose choice cannot open:\n%s", screen)
	}
}

// A live attempt whose owner Pi runs without herdr-pi wrap cannot be
// handed off; --inspect can still open it. A script that falls back to
// --inspect must tell that refusal from every other failure, so --json
// gives it a code of its own, not "failed", on the live format's line.
func TestOpenJSONCodesALiveAttemptOfAnUnwrappedOwner(t *testing.T) {
	ls := newListStore(t)
	run := ls.runningRun(t)
	// This process owns the run's session: its lease is alive, and no
	// herdr-pi wrap is above it.
	lease := fmt.Sprintf(`{"pid":%d,"token":"t","startedAt":%d}`+"\n", os.Getpid(), time.Now().Add(time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(filepath.Dir(run.Dir), "owner.json"), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--json", run.ID, "docs")
	var got struct {
		Format string `json:"format"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("open --json: %v\n%s", err, out.String())
	}
	if code != exitError || got.Format != openLiveFormat || got.Error.Code != "owner_not_wrapped" ||
		!strings.Contains(got.Error.Message, "does not run under herdr-pi wrap") || !strings.Contains(stderr, got.Error.Message) {
		t.Fatalf("open --json %s docs: exit %d, %+v\nstderr %q", run.Short(), code, got, stderr)
	}
	validate(t, compileSchema(t, "open"), out.String())
}
