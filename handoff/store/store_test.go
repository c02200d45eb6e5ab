package store

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProjectKey(t *testing.T) {
	for cwd, want := range map[string]string{
		"/home/alice/src/shop":        "shop-4ab93186ea5d", // the reference's example
		"/home/alice/src/shop/":       "shop-4ab93186ea5d", // resolved: trailing slash dropped
		"/home/alice/src/../src/shop": "shop-4ab93186ea5d",
	} {
		if got := ProjectKey(cwd); got != want {
			t.Errorf("%s: %s, want %s", cwd, got, want)
		}
	}
	if got := ProjectKey("/"); !strings.HasPrefix(got, "root-") || len(got) != len("root-")+12 {
		t.Errorf("/: %s", got)
	}
}

func TestSafePartCountsUTF16Units(t *testing.T) {
	for in, want := range map[string]string{
		"my project": "my_project",
		"a.b_c-D9":   "a.b_c-D9",
		"héllo":      "h_llo",
		"app🚀":       "app__", // one astral rune is two JavaScript characters
		"a/b\\c:d":   "a_b_c_d",
		"\xff":       "_",
	} {
		if got := SafePart(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// shopStore has runs in the caller's project (shop) and in another one
// (blog), two sharing a prefix across projects.
func shopStore(t *testing.T) *home {
	h := newHome(t)
	blog := filepath.Join(h.dir, "src", "blog")
	h.run(h.cwd, "3f0c9a2e-aaaa", `{"id":"3f0c9a2e-aaaa","workflowName":"review-api","state":"completed"}`, 5*time.Minute)
	h.run(h.cwd, "3f11b7c0-bbbb", `{"id":"3f11b7c0-bbbb","workflowName":"docs","state":"failed"}`, 3*time.Hour)
	h.run(blog, "3f0c1111-cccc", `{"id":"3f0c1111-cccc","workflowName":"blog-post","state":"running"}`, time.Minute)
	h.run(blog, "77aa0000-dddd", `{"id":"77aa0000-dddd","workflowName":"publish","state":"completed"}`, 50*time.Hour)
	// What the engine leaves around and must not count as runs.
	runs := h.runsDir(h.cwd, "s1")
	h.write(filepath.Join(runs, ".3f0c9999.123.abcd.tmp", "state.json"), `{"id":"tmp"}`, 0)
	h.write(filepath.Join(runs, "3f0c9a2e-aaaa", "state.json.123.abcd.tmp"), `{`, 0)
	h.write(filepath.Join(runs, "owner.json.abcd.stale"), `{}`, 0)
	h.write(filepath.Join(runs, "3f0cfile"), `not a run`, 0)
	return h
}

func TestFindRun(t *testing.T) {
	h := shopStore(t)
	s := h.store()
	for _, tc := range []struct{ ref, want string }{
		{"3f0c9a2e-aaaa", "3f0c9a2e-aaaa"},
		{"3f0c", "3f0c9a2e-aaaa"}, // the caller's project first: blog's 3f0c1111 is not considered
		{"3f1", "3f11b7c0-bbbb"},
		{"77", "77aa0000-dddd"},            // found in another project
		{"3f0c1111-cccc", "3f0c1111-cccc"}, // a full id anywhere
	} {
		r, err := s.FindRun(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if r.ID != tc.want || r.Record.ID != tc.want {
			t.Errorf("%s: found %s", tc.ref, r.ID)
		}
	}
	r, _ := s.FindRun("77")
	if r.Project != ProjectKey(filepath.Join(h.dir, "src", "blog")) || r.RunsDir != filepath.Dir(r.Dir) || r.Short() != "77aa0000" || r.Workflow() != "publish" || r.State() != "completed" {
		t.Errorf("run facts %+v", r)
	}
}

func TestFindRunErrors(t *testing.T) {
	h := shopStore(t)
	s := h.store()
	root := filepath.Join(h.dir, ".pi", "workflows", "projects")

	_, err := s.FindRun("3f")
	var ae *AmbiguousRunError
	if !errors.As(err, &ae) || err.Error() != `run id prefix "3f" matches 2 runs: 3f0c9a2e-aaaa (review-api, 5m ago), 3f11b7c0-bbbb (docs, 3h ago); give more of the id` {
		t.Errorf("ambiguous: %v", err)
	}

	_, err = s.FindRun("ffff")
	var ne *NoRunError
	shop, blog := ProjectKey(h.cwd), ProjectKey(filepath.Join(h.dir, "src", "blog"))
	if !errors.As(err, &ne) || err.Error() != `no workflow run "ffff" under `+root+` (searched 2 project(s): `+shop+", "+blog+"); list runs with `herdr-pi open --list`" {
		t.Errorf("none: %v", err)
	}
	// Path-like refs are no run ids: said so, with what one looks like,
	// not that the store (which has runs) has none.
	for _, ref := range []string{"", ".", "..", "/", "../x", "3f0c/state.json", "3f\x00"} {
		_, err := s.FindRun(ref)
		var be *BadRunIDError
		if !errors.As(err, &be) || be.Ref != ref || !strings.HasPrefix(err.Error(), fmt.Sprintf("%q is not a run id: ", ref)) ||
			!strings.Contains(err.Error(), "8d443e51-8bad-4dd5-a3f1-b88332072948") || strings.Contains(err.Error(), "no runs") {
			t.Errorf("%q: %v, want it said to be no run id", ref, err)
		}
	}

	_, err = New(filepath.Join(h.dir, "nobody"), h.cwd).FindRun("3f")
	if !errors.As(err, &ne) || err.Error() != `no workflow run "3f": no runs under `+filepath.Join(h.dir, "nobody", ".pi", "workflows", "projects")+" yet; list runs with `herdr-pi open --list`" {
		t.Errorf("empty store: %v", err)
	}
}

// A prefix that names one run of the caller's project is settled there,
// but the runs of other projects it starts too are said: the same prefix
// from elsewhere is ambiguous. Each comes with a ref that names it from
// anywhere. Nothing is passed over for a full id, for a prefix the caller's
// project has no run of, or one only it has.
func TestResolveRunSaysWhatItPassedOver(t *testing.T) {
	h := shopStore(t)
	blog := filepath.Join(h.dir, "src", "blog")
	h.run(blog, "3f0c1112-eeee", `{`, 2*time.Hour) // unreadable, still a run
	fromBlog := New(h.dir, blog)
	fromBlog.Now = func() time.Time { return h.now }
	for _, c := range []struct {
		s           *Store
		ref, taken  string
		others      []string
		refs        map[string]string
		unambiguous bool
	}{
		{s: h.store(), ref: "3f0c", taken: "3f0c9a2e-aaaa", others: []string{"3f0c1111-cccc", "3f0c1112-eeee"},
			refs: map[string]string{"3f0c9a2e-aaaa": "3f0c9a2e", "3f0c1111-cccc": "3f0c1111", "3f0c1112-eeee": "3f0c1112"}},
		{s: fromBlog, ref: "3f0c9", taken: "3f0c9a2e-aaaa", unambiguous: true}, // blog has no 3f0c9…
		{s: h.store(), ref: "3f0c9a2e-aaaa", taken: "3f0c9a2e-aaaa", unambiguous: true},
		{s: h.store(), ref: "3f0c1111-cccc", taken: "3f0c1111-cccc", unambiguous: true},
		{s: h.store(), ref: "3f1", taken: "3f11b7c0-bbbb", unambiguous: true},
		{s: h.store(), ref: "77", taken: "77aa0000-dddd", unambiguous: true},
	} {
		r, p, err := c.s.ResolveRun(c.ref)
		id, pid, iderr := c.s.ResolveRunID(c.ref)
		if err != nil || iderr != nil || r.ID != c.taken || id != c.taken {
			t.Errorf("%s: %v %v %v, want run %s", c.ref, r, err, iderr, c.taken)
			continue
		}
		if c.unambiguous {
			if p != nil || pid != nil {
				t.Errorf("%s: passed over %+v %+v", c.ref, p, pid)
			}
			continue
		}
		for _, p := range []*PassedOver{p, pid} {
			var others []string
			for _, o := range p.Others {
				others = append(others, o.ID)
			}
			if p.Ref != c.ref || p.Taken.ID != c.taken || !slices.Equal(others, c.others) || !maps.Equal(p.Refs, c.refs) {
				t.Errorf("%s: %+v, others %q", c.ref, p, others)
			}
		}
		want := `run id prefix "3f0c" matches 3 runs: 3f0c1111-cccc (blog-post, 1m ago), 3f0c9a2e-aaaa (review-api, 5m ago), 3f0c1112-eeee (unreadable, 2h ago); give more of the id (why)`
		if err := p.Ambiguous("why"); err.Error() != want {
			t.Errorf("refused:\n%s\nwant\n%s", err, want)
		}
	}
	// Several runs of the caller's project: ambiguous among them, as before.
	var ae *AmbiguousRunError
	if _, _, err := h.store().ResolveRun("3f"); !errors.As(err, &ae) || len(ae.Candidates) != 2 {
		t.Errorf("3f: %v", err)
	}
}

func TestAmbiguousPrefixNamesUnreadableCandidates(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "abc1", `{"id":"abc1","workflowName":"good","state":"completed"}`, time.Hour)
	h.run(h.cwd, "abc2", `{`, 2*time.Hour)
	_, err := h.store().FindRun("abc")
	if err == nil || err.Error() != `run id prefix "abc" matches 2 runs: abc1 (good, 1h ago), abc2 (unreadable, 2h ago); give more of the id` {
		t.Fatal(err)
	}
}

func TestFindRunReportsBrokenState(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "corrupt", `{"id":"corrupt","agents":[`, 0)
	h.run(h.cwd, "wrongtype", `{"id":"wrongtype","state":7}`, 0)
	h.run(h.cwd, "wrongagents", `{"id":"wrongagents","workflowName":"w","state":"running","agents":7}`, 0)
	big := h.run(h.cwd, "big", `{}`, 0)
	if err := os.Truncate(filepath.Join(big, "state.json"), maxStateSize+1); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(h.runsDir(h.cwd, "s1"), "fifo")
	if err := os.MkdirAll(fifo, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifo, "state.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.runsDir(h.cwd, "s1"), "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.runsDir(h.cwd, "s1"), "dir", "state.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	unreadable := h.run(h.cwd, "unreadable", `{}`, 0)
	if err := os.Chmod(filepath.Join(unreadable, "state.json"), 0); err != nil {
		t.Fatal(err)
	}

	// The engine keeps run X in runs/<SafePart(X)> and refuses a state
	// that names another run there; the directory is what open --list
	// shows and takes.
	h.run(h.cwd, "renamed", `{"id":"3f0c9a2e-aaaa","workflowName":"w","state":"running"}`, 0)

	s := h.store()
	for id, want := range map[string]string{
		"renamed":   `names run "3f0c9a2e-aaaa", but its directory is named "renamed"`,
		"corrupt":   "corrupt run state: truncated JSON (unexpected end of input)",
		"wrongtype": "corrupt run state: field state: want a string, got number",
		// Said in JSON's words, not Go's ("want []store.AgentRecord").
		"wrongagents": "corrupt run state: field agents: want an array, got number",
		"big":         "too large (",
		// Said in words, not as a mode string ("d---------").
		"fifo":  "state.json: is a named pipe (FIFO), not a regular file",
		"dir":   "state.json: is a directory, not a file",
		"empty": "missing: the run directory has no state",
	} {
		_, err := s.FindRun(id)
		var fe *FileError
		if !errors.As(err, &fe) || fe.Path != filepath.Join(h.runsDir(h.cwd, "s1"), id, "state.json") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a FileError on its state.json saying %q", id, err, want)
		}
	}
	// An id the engine's SafePart changes is its directory's name so
	// changed: a run like any other.
	h.run(h.cwd, "odd_id__", `{"id":"odd id🚀","workflowName":"w","state":"running"}`, 0)
	if r, err := s.FindRun("odd_id__"); err != nil || r.Record.ID != "odd id🚀" {
		t.Errorf("a run in the directory the engine names for its id: %v", err)
	}
	if os.Geteuid() != 0 { // root reads anything
		_, err := s.FindRun("unreadable")
		var fe *FileError
		if !errors.As(err, &fe) || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "cannot read: permission denied") {
			t.Errorf("unreadable: %v", err)
		}
	}
}

func TestRunsListsMostRecentFirst(t *testing.T) {
	h := shopStore(t)
	h.run(h.cwd, "broken", `{`, 2*time.Minute)
	runs, _, err := h.store().Runs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		line := r.ID + " " + r.Workflow()
		if r.Err != nil {
			line += " (broken)"
		}
		got = append(got, line)
	}
	want := "3f0c1111-cccc blog-post|broken  (broken)|3f0c9a2e-aaaa review-api|3f11b7c0-bbbb docs|77aa0000-dddd publish"
	if strings.Join(got, "|") != want {
		t.Errorf("runs:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	if runs, _, err := New(filepath.Join(h.dir, "nobody"), h.cwd).Runs(); err != nil || len(runs) != 0 {
		t.Errorf("empty store: %v %v", runs, err)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "0s ago", 59 * time.Second: "59s ago", 5 * time.Minute: "5m ago", 3 * time.Hour: "3h ago",
		47 * time.Hour: "47h ago", 72 * time.Hour: "3d ago", -time.Minute: "in the future",
	} {
		if got := Age(now, now.Add(-d)); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
	if got := Age(now, time.Time{}); got != "age unknown" {
		t.Errorf("zero: %q", got)
	}
}

// A short id is 8 characters unless another id starts with the same
// ones; then it is long enough to tell them apart, or the whole id when
// nothing shorter can (an id that starts another, or one given twice).
func TestShortestUnique(t *testing.T) {
	got := ShortestUnique([]string{"abcdefgh-1111", "abcdefgh-1122", "abcdefgh-2", "zz", "12345678", "12345678-9", "dupdupdup1", "dupdupdup1"}, 8)
	want := map[string]string{
		"abcdefgh-1111": "abcdefgh-111", "abcdefgh-1122": "abcdefgh-112", "abcdefgh-2": "abcdefgh-2",
		"zz": "zz", "12345678": "12345678", "12345678-9": "12345678-", "dupdupdup1": "dupdupdup1",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%q\nwant %q", got, want)
	}
}

// A store herdr-pi cannot read is an error that names the path and says
// what to do about it, whatever stands in the way: a file where the store's
// directory belongs, a symlink to nowhere or one in a loop in its place,
// and, for a run's state.json, a loop, a path through a file, a directory.
// (These are what root, which reads anything, still cannot read.)
func TestUnreadableStoreSaysTheFix(t *testing.T) {
	for _, c := range []struct {
		name  string
		make  func(t *testing.T, h *home, root string)
		says  []string
		isErr error
	}{
		{"the store is a file", func(t *testing.T, h *home, root string) { h.write(root, "", 0) },
			[]string{"cannot list the workflow store", "ROOT is a file, not a directory; move it away or rename it"}, syscall.ENOTDIR},
		{"its parent is a file", func(t *testing.T, h *home, root string) { h.write(filepath.Dir(root), "", 0) },
			[]string{"cannot list the workflow store", "HOME/.pi/workflows is a file, not a directory; move it away or rename it"}, syscall.ENOTDIR},
		{"the store is a symlink to nowhere", func(t *testing.T, h *home, root string) {
			mkdir(t, filepath.Dir(root))
			symlink(t, filepath.Join(h.dir, "gone"), root)
		},
			[]string{"cannot list the workflow store", "ROOT is a symlink to HOME/gone, which does not exist", "point it at an existing directory, or remove it"}, nil},
		{"the store is a symlink loop", func(t *testing.T, h *home, root string) {
			mkdir(t, filepath.Dir(root))
			symlink(t, root, root)
		},
			[]string{"cannot list the workflow store: too many levels of symbolic links", "a symlink on the way leads back to itself", "ls -l"}, syscall.ELOOP},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHome(t)
			root := filepath.Join(h.dir, ".pi", "workflows", "projects")
			mkdir(t, filepath.Dir(filepath.Dir(root)))
			c.make(t, h, root)
			for _, call := range []func() error{
				func() error { _, _, err := h.store().Runs(); return err },
				func() error { _, err := h.store().FindRun("3f0c"); return err },
			} {
				err := call()
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("%v, want a FileError", err)
				}
				if c.isErr != nil && !errors.Is(err, c.isErr) {
					t.Errorf("%v is not %v", err, c.isErr)
				}
				for _, s := range c.says {
					s = strings.NewReplacer("ROOT", root, "HOME", h.dir).Replace(s)
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%q does not say %q", err, s)
					}
				}
			}
		})
	}
	h := newHome(t)
	loop := h.run(h.cwd, "loop", `{}`, 0)
	os.Remove(filepath.Join(loop, "state.json"))
	symlink(t, filepath.Join(loop, "state.json"), filepath.Join(loop, "state.json"))
	through := h.run(h.cwd, "through", `{}`, 0)
	os.Remove(filepath.Join(through, "state.json"))
	h.write(filepath.Join(h.dir, "plain"), "", 0)
	symlink(t, filepath.Join(h.dir, "plain", "state.json"), filepath.Join(through, "state.json"))
	if err := os.MkdirAll(filepath.Join(h.runsDir(h.cwd, "s1"), "dir", "state.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	for id, says := range map[string][]string{
		"loop":    {"cannot read: too many levels of symbolic links", "a symlink on the way leads back to itself"},
		"through": {"cannot read: " + filepath.Join(h.dir, "plain") + " is a file, not a directory; move it away or rename it"},
		"dir":     {"is a directory, not a file", "the engine keeps the run's state in a file there: move it away, or pick another run from `herdr-pi open --list`"},
	} {
		_, err := h.store().FindRun(id)
		for _, s := range says {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v does not say %q", id, err, s)
			}
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A run id typed with one slip — a character wrong, left out, doubled or
// two swapped, or in capitals as some tools print UUIDs — names no run,
// but the run meant is almost always the one whose id it nearly starts:
// the error names it, so the person need not list the runs to find it.
// Nothing is suggested for a ref too short to tell a slip from another run,
// nor for one far from every id.
func TestFindRunNamesACloseMatch(t *testing.T) {
	h := shopStore(t)
	s := h.store()
	for _, tc := range []struct{ ref, near string }{
		{"3f0d9a2e", "3f0c9a2e (review-api)"},      // one wrong
		{"3f09a2e", "3f0c9a2e (review-api)"},       // one left out
		{"3f0cc9a2e", "3f0c9a2e (review-api)"},     // one doubled
		{"3f0c92ae", "3f0c9a2e (review-api)"},      // two swapped
		{"3F0C9A2E-AAAA", "3f0c9a2e (review-api)"}, // capitals
		{"77ab0000-dddd", "77aa0000 (publish)"},    // a full id, another project's
		{"3f0c1112-cccc", "3f0c1111 (blog-post)"},
	} {
		_, err := s.FindRun(tc.ref)
		var ne *NoRunError
		want := "; did you mean " + tc.near + "? list runs with `herdr-pi open --list`"
		if !errors.As(err, &ne) || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%q: %v\nwant it to end %q", tc.ref, err, want)
		}
	}
	for _, ref := range []string{"3e", "3f2", "ffff", "3f0c9a2e-zzzz-zzzz"} {
		_, err := s.FindRun(ref)
		if err == nil || strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%q: %v, want no suggestion", ref, err)
		}
	}
}
