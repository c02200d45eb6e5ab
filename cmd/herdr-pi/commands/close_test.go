package commands

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/settings"
)

// closeEnv is openEnv with a runtime directory of the test's own: a
// temporary home is too long a path for one, and herdr-pi would use
// the shared /tmp/herdr-pi-<uid>, whose ledger is real.
func closeEnv(t *testing.T, home string) []string {
	t.Helper()
	rt, err := os.MkdirTemp("/tmp", "hpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	return append(openEnv(home), "XDG_RUNTIME_DIR="+rt)
}

// runClose runs `herdr-pi close args…` in-process in env.
func runClose(t *testing.T, env []string, cwd string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	io := IO{In: strings.NewReader(""), Out: &out, Err: &errb, Dir: cwd, Env: env}
	code = Main(context.Background(), append([]string{"herdr-pi", "close"}, args...), io)
	return code, out.String(), errb.String()
}

// With nothing open, close tells a run the store knows (exit 0: there is
// nothing to close) from a ref that names no run — a typo, an id from
// another machine, a path, a prefix of several runs — which a script must
// not take for success (exit 1, said on stderr, nothing on stdout).
func TestCloseWithNothingOpen(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	known := ls.IDs[1]
	code, out, errs := runClose(t, env, ls.Cwd, known[:8])
	if code != 0 || out != "nothing herdr-pi opened for run "+known+" is open\n" || errs != "" {
		t.Errorf("a known run: exit %d, %q %q", code, out, errs)
	}
	// A run whose state cannot be read still exists.
	if code, out, _ := runClose(t, env, ls.Cwd, ls.corrupt); code != 0 || !strings.Contains(out, ls.corrupt) {
		t.Errorf("a run with a corrupt state.json: exit %d, %q", code, out)
	}
	// A one-character prefix the store finds ambiguous, asked from outside
	// every project (none settles the search) — the generated ids are
	// fixed by its seed.
	prefix := ""
	for _, id := range ls.IDs {
		var ae *store.AmbiguousRunError
		if _, err := store.New(ls.Home, ls.Home).RunID(id[:1]); errors.As(err, &ae) {
			prefix = id[:1]
		}
	}
	if prefix == "" {
		t.Fatalf("no one-character prefix of %q names several runs", ls.IDs)
	}
	for _, c := range []struct{ ref, says string }{
		{"deadbeef", `no workflow run "deadbeef"`},
		{"..", `".." is not a run id`},
		{prefix, `run id prefix "` + prefix + `" matches`},
	} {
		for _, json := range []bool{false, true} {
			args := []string{c.ref}
			if json {
				args = append(args, "--json")
			}
			code, out, errs := runClose(t, env, ls.Home, args...)
			if code != 1 || out != "" || !strings.Contains(errs, c.says) {
				t.Errorf("close %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errs, c.says)
			}
		}
	}
}

// A prefix that names several runs with things open is refused like a
// prefix of several runs in the store (exit 1), and nothing is closed.
func TestCloseRefusesAPrefixOfSeveralOpenRuns(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	for _, run := range []string{"abc10000-0000-4000-8000-000000000001", "abc20000-0000-4000-8000-000000000002"} {
		if _, err := ledger.Add(handoff.Record{Run: run, Kind: "pane", ID: "w9:p9", HerdrSocket: "/nonexistent.sock"}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runClose(t, env, ls.Cwd, "abc")
	if code != 1 || out != "" || !strings.Contains(errs, `"abc" names several runs with open panes`) {
		t.Fatalf("exit %d, %q %q", code, out, errs)
	}
	if recs, _ := ledger.List(); len(recs) != 2 {
		t.Fatalf("records left %d, want both", len(recs))
	}
}

// A prefix that names one run with things open but several runs in the
// store is refused (exit 1, docs/open.md), not taken for the run with
// things open: the person may have meant another, and close would close
// what is not theirs to close.
func TestCloseRefusesAPrefixOfSeveralRunsInTheStore(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	prefix, open := "", ""
	for _, id := range ls.IDs {
		var ae *store.AmbiguousRunError
		if _, err := store.New(ls.Home, ls.Home).RunID(id[:1]); errors.As(err, &ae) {
			prefix, open = id[:1], id
		}
	}
	if prefix == "" {
		t.Fatalf("no one-character prefix of %q names several runs", ls.IDs)
	}
	s := herdrtest.Start(t)
	pane, err := herdr.NewClient(s.SocketPath()).PaneSplit(context.Background(), herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	if _, err := ledger.Add(handoff.Record{Run: open, Kind: "pane", ID: pane.PaneID, HerdrSocket: s.SocketPath()}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runClose(t, env, ls.Home, prefix)
	if code != 1 || out != "" || !strings.Contains(errs, `run id prefix "`+prefix+`" matches`) {
		t.Fatalf("close %s: exit %d, %q %q; want exit 1 naming the runs it matches", prefix, code, out, errs)
	}
	if !s.Pane(pane.PaneID).Exists {
		t.Fatalf("pane %s of run %s was closed", pane.PaneID, open)
	}
	// The run's whole id closes it.
	if code, out, errs := runClose(t, env, ls.Home, open); code != 0 || !strings.Contains(out, "closed pane "+pane.PaneID) {
		t.Fatalf("close %s: exit %d, %q %q", open, code, out, errs)
	}
}

// close takes one run: a second word is named, as open names a third, so
// the person sees which word was one too many; none at all asks for one.
func TestCloseNamesAnUnexpectedArgument(t *testing.T) {
	env := newCmdEnv(t).env
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"close", "a", "b"}, "herdr-pi close: unexpected argument \"b\" (close takes one run; herdr-pi open --list shows them)\n"},
		{[]string{"close", "a", "b", "c"}, "herdr-pi close: unexpected argument \"b\""},
		{[]string{"close"}, "herdr-pi close: name one run (herdr-pi open --list shows them)\n"},
	} {
		code, out, errOut := run(t, env, tc.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.says) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.says)
		}
	}
}

// A prefix that names one run in the workflow store and another run in the
// ledger (one the store no longer holds) is refused: the person meant the
// store's run, and close would close the other's panes.
func TestCloseRefusesAPrefixOfAnotherRunInTheStore(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	known := ls.IDs[1]
	prefix := known[:8]
	if id, err := store.New(ls.Home, ls.Cwd).RunID(prefix); err != nil || id != known {
		t.Fatalf("prefix %s names %q, %v; want run %s alone", prefix, id, err, known)
	}
	gone := prefix + "-dead-4000-8000-000000000000"
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	if _, err := ledger.Add(handoff.Record{Run: gone, Kind: "pane", ID: "w9:p9", HerdrSocket: "/nonexistent.sock"}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runClose(t, env, ls.Cwd, prefix)
	if code != 1 || out != "" || !strings.Contains(errs, "names run "+known+" in the workflow store, but run "+gone+" has things open") {
		t.Fatalf("close %s: exit %d, %q %q", prefix, code, out, errs)
	}
	if recs, _ := ledger.List(); len(recs) != 1 {
		t.Fatalf("records left %d, want the other run's", len(recs))
	}
}
