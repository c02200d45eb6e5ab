package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/settings"
)

// crossProject is a prefix that names one run of the caller's project
// there (their runs are searched first) and also starts the ids of runs
// of another project: the twins.
type crossProject struct {
	prefix, taken string
	twins         []string // in the other project
}

// hostileWorkflow is the workflow name of one twin: a terminal must never
// get its escape sequences (a window title, a bell).
const hostileWorkflow = "evil\x1b]0;pwned\x07name"

// newCrossProject makes run (of the caller's project, cwd) share its
// shortest unique prefix with three runs of the project at elsewhere,
// copies of it: one with a hostile workflow name, one whose id (a
// directory someone planted) holds an escape sequence.
func newCrossProject(t testing.TB, home, cwd, elsewhere, run string, ids []string) crossProject {
	t.Helper()
	n := len(store.ShortestUnique(ids, 1)[run])
	c := crossProject{prefix: run[:n], taken: run}
	src, err := store.New(home, cwd).FindRun(run)
	if err != nil {
		t.Fatal(err)
	}
	for i, tw := range []struct{ mark, workflow string }{{"x", ""}, {"y", hostileWorkflow}, {"z\x1b[31m", ""}} {
		id := c.prefix + tw.mark + run[n+1:]
		c.twins = append(c.twins, id)
		dst := filepath.Join(home, ".pi", "workflows", "projects", store.ProjectKey(elsewhere), "sessions", "twin-session-"+string(rune('a'+i)), "runs", id)
		if err := os.CopyFS(dst, os.DirFS(src.Dir)); err != nil {
			t.Fatal(err)
		}
		var state map[string]any
		b, err := os.ReadFile(filepath.Join(dst, "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &state); err != nil {
			t.Fatal(err)
		}
		state["id"], state["cwd"] = id, elsewhere
		if tw.workflow != "" {
			state["workflowName"] = tw.workflow
		}
		if b, err = json.Marshal(state); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "state.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := store.New(home, cwd).RunID(c.prefix); err != nil || id != run {
		t.Fatalf("from its project, %q names %q (%v), want run %s", c.prefix, id, err, run)
	}
	return c
}

// listCrossProject is newCrossProject on the list store: its third run
// (the caller's project) and three twins in the other project.
func listCrossProject(t testing.TB) (*listStore, crossProject) {
	t.Helper()
	ls := newListStore(t)
	return ls, newCrossProject(t, ls.Home, ls.Cwd, filepath.Join(ls.Home, "src", "project-1"), ls.IDs[2], ls.IDs)
}

// checkPrefixNote checks that stderr is open's one line about the runs of
// other projects a prefix passed over: which run it took, how many others
// start with it, and their refs to give instead — sanitised.
func checkPrefixNote(t *testing.T, stderr string, c crossProject) {
	t.Helper()
	line, _, _ := strings.Cut(stderr, "\n")
	for _, want := range []string{"herdr-pi open: ", `"` + c.prefix + `"`, "run " + c.taken[:8], "of this project",
		"3 runs of other projects start with", c.twins[0][:8], c.twins[1][:8], "evil ]0;pwned name", "full id"} {
		if !strings.Contains(line, want) {
			t.Errorf("the note %q lacks %q", line, want)
		}
	}
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Errorf("stderr holds control characters of a run's name: %q", stderr)
	}
}

// otherMatch is an entry of prefix_also_matches (docs/open.md).
type otherMatch struct{ ID, Ref, Project, Workflow, Cwd string }

// alsoMatches is the field of every --json form that says the same.
type alsoMatches struct {
	PrefixAlsoMatches []otherMatch `json:"prefix_also_matches"`
}

// checkAlsoMatches checks the --json field that says the same: the twins,
// each with a ref that names it from the caller's project (home, cwd).
func checkAlsoMatches(t *testing.T, raw string, c crossProject, home, cwd, elsewhere string) {
	t.Helper()
	var am alsoMatches
	if err := json.Unmarshal([]byte(raw), &am); err != nil {
		t.Fatal(err)
	}
	got := am.PrefixAlsoMatches
	if len(got) != len(c.twins) {
		t.Fatalf("prefix_also_matches %+v, want the %d twins\n%s", got, len(c.twins), raw)
	}
	byID := map[string]otherMatch{}
	for _, m := range got {
		byID[m.ID] = m
	}
	for i, id := range c.twins {
		m, ok := byID[id]
		cwd := elsewhere
		if i == 2 {
			cwd = "" // a planted directory: its state names another run, so it is not read
		}
		if !ok || m.Project != store.ProjectKey(elsewhere) || m.Cwd != cwd {
			t.Errorf("twin %q: %+v", id, m)
			continue
		}
		if rid, err := store.New(home, cwd).RunID(m.Ref); err != nil || rid != id {
			t.Errorf("twin %q has ref %q, which names %q (%v)", id, m.Ref, rid, err)
		}
	}
	if byID[c.twins[1]].Workflow != hostileWorkflow {
		t.Errorf("the workflow of %s: %q", c.twins[1], byID[c.twins[1]].Workflow)
	}
}

// From inside a project, a prefix that names one of its runs but starts
// other projects' run ids too takes the project's run (docs/open.md) and
// says so: on stderr for the table, as prefix_also_matches in --json.
// From outside, the same prefix is ambiguous, as before.
func TestOpenListSaysWhatAPrefixPassedOver(t *testing.T) {
	ls, c := listCrossProject(t)
	elsewhere := filepath.Join(ls.Home, "src", "project-1")

	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, "--list", c.prefix)
	if code != 0 || !strings.Contains(out.String(), c.taken) {
		t.Fatalf("--list %s: exit %d, stderr %q\n%s", c.prefix, code, stderr, out.String())
	}
	if strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", stderr)
	}
	checkPrefixNote(t, stderr, c)

	o, raw := listJSON(t, ls.Home, ls.Cwd, c.prefix)
	if len(o.Runs) != 1 || o.Runs[0].ID != c.taken {
		t.Fatalf("--list --json %s: runs %+v", c.prefix, o.Runs)
	}
	checkAlsoMatches(t, raw, c, ls.Home, ls.Cwd, elsewhere)

	// Nothing to say: a full id, a prefix only the project's run has, or
	// no prefix at all.
	for _, args := range [][]string{{c.taken}, {c.taken[:8]}, {}} {
		out.Reset()
		code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, append([]string{"--list"}, args...)...)
		if code != 0 || stderr != "" {
			t.Errorf("--list %q: exit %d, stderr %q", args, code, stderr)
		}
		if _, raw := listJSON(t, ls.Home, ls.Cwd, args...); strings.Contains(raw, "prefix_also_matches") {
			t.Errorf("--list --json %q: %s", args, raw)
		}
	}
	// From outside every project the prefix names four runs.
	out.Reset()
	if code, stderr := runOpen(t, ls.Home, ls.Home, &out, nil, "--list", c.prefix); code != 1 || !strings.Contains(stderr, `matches 4 runs`) {
		t.Errorf("from outside: exit %d, %q", code, stderr)
	}
}

// open itself says it too, before anything else can fail: a person who
// meant another project's run learns why the attempt is not there.
// With --json the failure object carries the field instead of stderr.
func TestOpenSaysWhatAPrefixPassedOverBeforeItFails(t *testing.T) {
	ls, c := listCrossProject(t)
	var out bytes.Buffer
	code, stderr := runOpen(t, ls.Home, ls.Cwd, &out, nil, c.prefix, "nosuch")
	if code != 1 || !strings.Contains(stderr, `no attempt named "nosuch"`) || strings.Count(stderr, "\n") != 2 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	checkPrefixNote(t, stderr, c)

	out.Reset()
	code, stderr = runOpen(t, ls.Home, ls.Cwd, &out, nil, "--json", c.prefix, "nosuch")
	var fail openFailure
	if err := json.Unmarshal(out.Bytes(), &fail); err != nil || code != 1 || fail.Error.Code != "no_attempt" {
		t.Fatalf("exit %d, %q (%v), stderr %q", code, out.String(), err, stderr)
	}
	validate(t, compileSchema(t, "open"), out.String())
	checkAlsoMatches(t, out.String(), c, ls.Home, ls.Cwd, filepath.Join(ls.Home, "src", "project-1"))
	if strings.Contains(stderr, "other projects") {
		t.Errorf("--json said it on stderr too: %q", stderr)
	}
}

// An inspection opened by such a prefix carries the field in its report.
func TestOpenReportSaysWhatAPrefixPassedOver(t *testing.T) {
	f, _, run, out, errb := openWorld(t, "exec sleep 600")
	home := f.IO.env().Get("HOME")
	elsewhere := filepath.Join(home, "src", "elsewhere")
	ids := []string{run}
	if all, err := store.New(home, f.IO.Dir).ShortIDs(); err == nil {
		ids = ids[:0]
		for id := range all {
			ids = append(ids, id)
		}
	}
	c := newCrossProject(t, home, f.IO.Dir, elsewhere, run, ids)
	// The pane's "Pi" never says which fork it writes: not waited for.
	err := openRun(t.Context(), f, &openOptions{Run: c.prefix, Attempt: "api", JSON: true, StartTimeout: time.Minute, ForkTimeout: time.Millisecond})
	var rep openReport
	if jerr := json.Unmarshal([]byte(out.String()), &rep); err != nil || jerr != nil || rep.Run != run {
		t.Fatalf("%v, %q (%v)\nstderr %s", err, out, jerr, errb)
	}
	validate(t, compileSchema(t, "open"), out.String())
	checkAlsoMatches(t, out.String(), c, home, f.IO.Dir, elsewhere)
}

// A live attempt's first line carries it.
func TestOpenLiveSaysWhatAPrefixPassedOver(t *testing.T) {
	w := newLiveWorld(t)
	w.handoffs.endTurn()
	w.handoffs.endPaneTurn()
	// The running run is the second project's: open runs there.
	w.cwd = filepath.Join(w.home, "src", "project-1")
	elsewhere := filepath.Join(w.home, "src", "project-2")
	all, err := store.New(w.home, w.cwd).ShortIDs()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range all {
		ids = append(ids, id)
	}
	c := newCrossProject(t, w.home, w.cwd, elsewhere, w.run, ids)
	w.run = c.prefix
	var out bytes.Buffer
	code, stderr := w.open(t, &out, "--json")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if code != exitOK || len(lines) != 5 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), stderr)
	}
	for i, l := range lines {
		if i == 0 {
			// (The harness's later lines are scripted without the run
			// and handoff a wrapper sends: only this one is checked.)
			validate(t, compileSchema(t, "open"), l)
			checkAlsoMatches(t, l, c, w.home, w.cwd, elsewhere)
		} else if strings.Contains(l, "prefix_also_matches") {
			t.Errorf("line %d repeats the field: %s", i, l)
		}
	}
}

// close does not let the caller's project settle a prefix: it closes
// panes (and hands live attempts back), so a prefix that starts run ids
// of other projects too is refused like a prefix of several runs (exit
// 1, nothing closed), with the runs and what names each. From anywhere.
func TestCloseRefusesAPrefixOfRunsOfSeveralProjects(t *testing.T) {
	ls, c := listCrossProject(t)
	env := closeEnv(t, ls.Home)
	s := herdrtest.Start(t)
	pane, err := herdr.NewClient(s.SocketPath()).PaneSplit(context.Background(), herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	for _, open := range []bool{false, true} {
		if open {
			if _, err := ledger.Add(handoff.Record{Run: c.taken, Kind: "pane", ID: pane.PaneID, HerdrSocket: s.SocketPath()}); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{c.prefix}, {c.prefix, "--json"}} {
			code, out, errs := runClose(t, env, ls.Cwd, args...)
			if len(args) > 1 {
				// --json: the same words in a failure object on stdout.
				if fail := decodeCloseFailure(t, out); fail.Error.Code != "ambiguous_run" || !strings.Contains(fail.Error.Message, c.twins[0]) {
					t.Errorf("things open %v, close %q: stdout %q; want an ambiguous_run object naming the runs", open, args, out)
				}
				out = ""
			}
			if code != 1 || out != "" || !strings.Contains(errs, `run id prefix "`+c.prefix+`" matches 4 runs`) ||
				!strings.Contains(errs, c.twins[0]) || !strings.Contains(errs, "close takes a prefix only when it names one run") {
				t.Errorf("things open %v, close %q: exit %d, stdout %q, stderr %q", open, args, code, out, errs)
			}
			if strings.ContainsAny(errs, "\x1b\x07") {
				t.Errorf("stderr holds control characters of a run's name: %q", errs)
			}
		}
		if !s.Pane(pane.PaneID).Exists {
			t.Fatalf("pane %s of run %s was closed", pane.PaneID, c.taken)
		}
	}
	// A prefix that names it alone in the store closes it.
	if code, out, errs := runClose(t, env, ls.Cwd, c.taken[:8]); code != 0 || !strings.Contains(out, "closed pane "+pane.PaneID) {
		t.Fatalf("close %s: exit %d, %q %q", c.taken[:8], code, out, errs)
	}
}
