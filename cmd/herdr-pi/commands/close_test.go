package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
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
	for _, c := range []struct{ ref, says, code string }{
		{"deadbeef", `no workflow run "deadbeef"`, "no_run"},
		{"..", `".." is not a run id`, "no_run"},
		{prefix, `run id prefix "` + prefix + `" matches`, "ambiguous_run"},
	} {
		code, out, errs := runClose(t, env, ls.Home, c.ref)
		if code != 1 || out != "" || !strings.Contains(errs, c.says) {
			t.Errorf("close %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.ref, code, out, errs, c.says)
		}
		// A script reading --json learns why on stdout too, as from open.
		code, out, errs = runClose(t, env, ls.Home, c.ref, "--json")
		fail := decodeCloseFailure(t, out)
		if code != 1 || !strings.Contains(errs, c.says) || fail.Run != c.ref || fail.Error.Code != c.code || !strings.Contains(fail.Error.Message, c.says) {
			t.Errorf("close %q --json: exit %d, stdout %q, stderr %q; want exit 1, code %s and %q in both", c.ref, code, out, errs, c.code, c.says)
		}
	}
}

// closeFailureObject is what `close --json` prints when it fails before it
// could close anything (docs/open.md).
type closeFailureObject struct {
	Format string `json:"format"`
	Run    string `json:"run"`
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeCloseFailure(t *testing.T, out string) closeFailureObject {
	t.Helper()
	var f closeFailureObject
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Errorf("stdout %q is not one close failure object: %v", out, err)
	}
	if f.Format != "herdr-pi.close/1" {
		t.Errorf("format %q, want herdr-pi.close/1", f.Format)
	}
	validate(t, compileSchema(t, "open"), out)
	return f
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
	code, out, _ = runClose(t, env, ls.Cwd, "abc", "--json")
	if fail := decodeCloseFailure(t, out); code != 1 || fail.Error.Code != "ambiguous_run" || !strings.Contains(fail.Error.Message, "names several runs with open panes") {
		t.Errorf("--json: exit %d, %s; want ambiguous_run", code, out)
	}
	if recs, _ := ledger.List(); len(recs) != 2 {
		t.Fatalf("records left %d, want both", len(recs))
	}
}

// A close --json that stops at a usage mistake (a second word, a flag
// close does not take, wherever it stands) still says which run it was
// about: a script reading the answer must tell it from another run's. The
// run is given by its full id when the workflow store knows it, as the
// report gives it; a word that names no run (or several) is given as it
// was named, its code saying so; none named is "". A word right after a
// flag close does not take (--bogus X) may be that flag's value, not a
// run: close cannot tell, so no word after it is taken for the run, and
// none is looked up.
func TestCloseJSONFailureNamesTheRunNamed(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	known := ls.IDs[1]
	if id, err := store.New(ls.Home, ls.Cwd).RunID(known[:8]); err != nil || id != known {
		t.Fatalf("prefix %s names %q, %v; want run %s alone", known[:8], id, err, known)
	}
	for _, c := range []struct {
		args      []string
		exit      int
		run, code string
	}{
		{[]string{"--json", known[:8], "fixer"}, exitUsage, known, "usage"},
		{[]string{"--json", "--wait", known[:8]}, exitUsage, "", "usage"},
		{[]string{"--json", "--bogus", known[:8]}, exitUsage, "", "usage"},
		{[]string{"--json", "--bogus", "X"}, exitUsage, "", "usage"},
		{[]string{"--json", "--bogus=1", known[:8]}, exitUsage, known, "usage"},
		{[]string{"--json", "--", "--bogus", known[:8]}, exitUsage, "--bogus", "usage"},
		{[]string{"--json", known[:8], "--wait"}, exitUsage, known, "usage"},
		{[]string{known, "--bogus=1", "--json"}, exitUsage, known, "usage"},
		{[]string{"--json", "--", known[:8], "fixer"}, exitUsage, known, "usage"},
		{[]string{"--json", "deadbeef", "fixer"}, exitUsage, "deadbeef", "usage"},
		{[]string{"--json", "--wait", "deadbeef"}, exitUsage, "", "usage"},
		{[]string{"--json"}, exitUsage, "", "usage"},
		{[]string{"--json", "deadbeef"}, exitError, "deadbeef", "no_run"},
	} {
		code, out, errs := runClose(t, env, ls.Cwd, c.args...)
		fail := decodeCloseFailure(t, out)
		if code != c.exit || fail.Run != c.run || fail.Error.Code != c.code {
			t.Errorf("close %q: exit %d, run %q, code %q; want exit %d, run %q, code %q\nstderr %s", c.args, code, fail.Run, fail.Error.Code, c.exit, c.run, c.code, errs)
		}
	}
	// The schema asks it of close's failure objects.
	schema := compileSchema(t, "open")
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"format": "herdr-pi.close/1", "error": {"code": "usage", "message": "name one run"}}`))
	if schema.Validate(inst) == nil {
		t.Error("a close failure without its run validates")
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
		code, out, _ = run(t, env, append(tc.args, "--json")...)
		if fail := decodeCloseFailure(t, out); code != exitUsage || fail.Error.Code != "usage" || !strings.HasPrefix(fail.Error.Message, strings.TrimSuffix(strings.TrimPrefix(tc.says, "herdr-pi close: "), "\n")) {
			t.Errorf("%q --json: exit %d, stdout %q; want 2 and a usage object saying %q", tc.args, code, out, tc.says)
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

// closeFailure is an entry of `close --json`'s failed list (docs/open.md).
type closeFailure struct{ Kind, ID, Code, Why, Record string }

// A pane Herdr could not close is in `close --json` (failed: what, its
// code, why, and the record that keeps it), not only in stderr's text: a script must
// tell what is still open. The record stays for the next close.
func TestCloseJSONNamesWhatItCouldNotClose(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	run := ls.IDs[1]
	s := herdrtest.Start(t)
	pane, err := herdr.NewClient(s.SocketPath()).PaneSplit(context.Background(), herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	rec, err := ledger.Add(handoff.Record{Run: run, Kind: "pane", ID: pane.PaneID, HerdrSocket: s.SocketPath()})
	if err != nil {
		t.Fatal(err)
	}
	// The Herdr socket moves away: close cannot reach the pane.
	moved := s.SocketPath() + ".away"
	if err := os.Rename(s.SocketPath(), moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(moved, s.SocketPath()) })
	code, out, errs := runClose(t, env, ls.Cwd, run, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %s stderr %s", code, out, errs)
	}
	var rep struct {
		Format string           `json:"format"`
		Closed []handoff.Closed `json:"closed"`
		Failed []closeFailure   `json:"failed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if rep.Format != closeFormat || len(rep.Closed) != 0 || len(rep.Failed) != 1 {
		t.Fatalf("report %+v, want the pane in failed", rep)
	}
	f := rep.Failed[0]
	if f.Kind != "pane" || f.ID != pane.PaneID || f.Code != "herdr" || f.Record != rec.File || !strings.Contains(f.Why, s.SocketPath()) {
		t.Errorf("failed %+v, want pane %s, code herdr, why naming the socket %s, record %s", f, pane.PaneID, s.SocketPath(), rec.File)
	}
	if !strings.Contains(errs, "pane "+pane.PaneID+": Herdr did not close it (") {
		t.Errorf("stderr %q does not name the pane", errs)
	}
	if recs, _ := ledger.List(); len(recs) != 1 {
		t.Fatalf("records left %d, want the pane's", len(recs))
	}
	// Herdr is back: the next close closes it, with an empty failed list.
	os.Rename(moved, s.SocketPath())
	code, out, errs = runClose(t, env, ls.Cwd, run, "--json")
	if code != 0 || !strings.Contains(out, `"failed": []`) || !strings.Contains(out, `"how": "closed"`) {
		t.Fatalf("the second close: exit %d, %s %s", code, out, errs)
	}
}

// A corrupt ledger record may be all that knows of an open pane: close
// neither says that nothing is open nor exits 0 while one may be this
// run's, and its advice (check Herdr, then remove the file) does not lose
// the pane. What can still be read of the record is said.
func TestCloseDoesNotHideACorruptRecord(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	run, other := ls.IDs[1], ls.IDs[2]
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	rec, err := ledger.Add(handoff.Record{Run: run, Kind: "pane", ID: "w1:p3", HerdrSocket: "/tmp/h/herdr.sock", PaneWrapperPID: 4711})
	if err != nil {
		t.Fatal(err)
	}
	// Cut short in the middle of its last field.
	b, err := os.ReadFile(rec.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec.File, b[:len(b)-12], 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runClose(t, env, ls.Cwd, run)
	if code != 1 || strings.Contains(out, "nothing herdr-pi opened") {
		t.Fatalf("exit %d, stdout %q; want exit 1 and no claim that nothing is open", code, out)
	}
	for _, want := range []string{rec.File, "may have tracked pane w1:p3 of run " + run + " in the Herdr at /tmp/h/herdr.sock", "check in Herdr", "then remove " + rec.File} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not say %q", errs, want)
		}
	}
	if strings.Contains(errs, "(remove them)") {
		t.Errorf("stderr %q still advises removing the record outright", errs)
	}
	code, out, _ = runClose(t, env, ls.Cwd, run, "--json")
	var rep struct {
		Failed []closeFailure `json:"failed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 1 || err != nil || len(rep.Failed) != 1 || rep.Failed[0].Kind != "record" || rep.Failed[0].Code != "ledger" || rep.Failed[0].ID != rec.File {
		t.Fatalf("--json: exit %d, %s; want the record in failed", code, out)
	}
	if _, err := os.Stat(rec.File); err != nil {
		t.Fatalf("the record went: %v", err)
	}
	// Another run's close is not held up by it (it said whose it was),
	// but still hears of it.
	code, out, errs = runClose(t, env, ls.Cwd, other)
	if code != 0 || out != "nothing herdr-pi opened for run "+other+" is open\n" || !strings.Contains(errs, rec.File) {
		t.Errorf("another run: exit %d, %q %q", code, out, errs)
	}
	// A record of which nothing can be made out may be any run's.
	if err := os.WriteFile(rec.File, []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runClose(t, env, ls.Cwd, other)
	if code != 1 || out != "" || !strings.Contains(errs, "what it tracked cannot be made out") {
		t.Errorf("an unreadable record of no known run: exit %d, %q %q", code, out, errs)
	}
}

// A live handoff ordered and not yet placed (its owner's turn has not
// ended) has no pane yet, but it will: close must not say that nothing is
// open. It asks the owner's wrapper (played here) to give the handoff up,
// waits until it has, and says so.
func TestCloseGivesUpAHandoffWhosePaneHasNotOpened(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	run := ls.IDs[1]
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	p, err := ledger.AddPending(handoff.Pending{Run: run, Handoff: "h1", WrapperPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// The wrapper: it gives the handoff up when close asks (or at the end).
	stop, gaveUp := make(chan struct{}), make(chan bool, 1)
	go func() {
		for !p.Cancelled() {
			select {
			case <-stop:
				gaveUp <- false
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		ledger.RemovePending(p)
		gaveUp <- true
	}()
	t.Cleanup(func() { close(stop) })
	code, out, errs := runClose(t, env, ls.Cwd, run[:8])
	if code != 0 || out != "gave up handoff h1 before its pane opened: the attempt stays with its owner\n" || errs != "" {
		t.Fatalf("exit %d, %q %q", code, out, errs)
	}
	if !<-gaveUp {
		t.Fatal("the wrapper was not asked")
	}
	if left, _ := ledger.Pendings(); len(left) != 0 {
		t.Fatalf("still pending: %+v", left)
	}
}

// A named pipe in place of a ledger record (planted by mistake) never
// holds close up: it is refused without waiting on it, named, and said
// for what it is, as a record that cannot be read.
func TestCloseDoesNotWaitOnAPipeInTheLedger(t *testing.T) {
	ls := newListStore(t)
	env := closeEnv(t, ls.Home)
	run := ls.IDs[1]
	ledger := handoff.LedgerAt(settings.Resolve(settings.EnvFrom(env)).RuntimeBase)
	rec, err := ledger.Add(handoff.Record{Run: run, Kind: "pane", ID: "w1:p3", HerdrSocket: "/tmp/h/herdr.sock", PaneWrapperPID: 4711})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rec.File); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(rec.File, 0o600); err != nil {
		t.Fatal(err)
	}
	var code int
	var errs string
	if testenv.WaitsOnPipe(rec.File, func() { code, _, errs = runClose(t, env, ls.Cwd, run) }) {
		t.Errorf("close opened the pipe and waited for a writer")
	}
	if want := "ledger record " + rec.File + ": unreadable (it is a named pipe (FIFO), not a regular file)"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
}
