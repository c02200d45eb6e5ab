package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// A sessions or runs directory the listing cannot look into hides its
// runs; Runs names it, with why and the way out, instead of listing
// fewer runs without a word. A missing one is no runs, not a problem.
func TestRunsNamesTheDirectoriesItCannotRead(t *testing.T) {
	t.Run("a file where the runs directory belongs", func(t *testing.T) {
		h := shopStore(t)
		blocked := h.runsDir(h.cwd, "s2")
		h.write(blocked, "not a directory", 0)
		// A session without runs yet, and one of another project.
		if err := os.MkdirAll(filepath.Dir(h.runsDir(h.cwd, "s3")), 0o700); err != nil {
			t.Fatal(err)
		}
		runs, unreadable, err := h.store().Runs()
		if err != nil || len(runs) != 4 {
			t.Fatalf("runs %d, %v; want the 4 readable ones", len(runs), err)
		}
		if len(unreadable) != 1 || unreadable[0].Path != blocked || !strings.Contains(unreadable[0].Problem, "not a directory") ||
			!strings.Contains(unreadable[0].Problem, "move it away") {
			t.Fatalf("unreadable %+v, want %s named as a file in a directory's place, with the way out", unreadable, blocked)
		}
	})
	t.Run("a sessions directory closed to us (chmod 000)", func(t *testing.T) {
		h := shopStore(t)
		// Open to all, as a home is to its owner: under root the listing
		// runs as nobody (testenv.AsUnprivileged), who must get as far
		// as the closed directory.
		if err := os.Chmod(filepath.Dir(h.dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := filepath.WalkDir(h.dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.Chmod(path, 0o755)
			}
			return os.Chmod(path, 0o644)
		}); err != nil {
			t.Fatal(err)
		}
		sessions := filepath.Dir(filepath.Dir(h.runsDir(h.cwd, "s1")))
		if err := os.Chmod(sessions, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(sessions, 0o700) })
		var (
			runs       []ListedRun
			unreadable []UnreadableDir
			err        error
		)
		testenv.AsUnprivileged(t, sessions, func() { runs, unreadable, err = h.store().Runs() })
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		if err != nil || !slices.Equal(ids, []string{"3f0c1111-cccc", "77aa0000-dddd"}) {
			t.Fatalf("runs %q, %v; want the other project's two", ids, err)
		}
		if len(unreadable) != 1 || unreadable[0].Path != sessions || !strings.Contains(unreadable[0].Problem, "permission denied") ||
			!strings.Contains(unreadable[0].Problem, "chmod u+rx "+sessions) { // a directory is listed with r and entered with x
			t.Fatalf("unreadable %+v, want %s named with the way out", unreadable, sessions)
		}
		// Every directory above it lets the user in: the way out says
		// nothing of them.
		if strings.Contains(unreadable[0].Problem, "its directories") {
			t.Fatalf("the way out sends the person to directories that are open: %q", unreadable[0].Problem)
		}
	})
	t.Run("nothing missing is nothing unreadable", func(t *testing.T) {
		h := newHome(t)
		if _, unreadable, err := h.store().Runs(); err != nil || len(unreadable) != 0 {
			t.Fatalf("an empty store: %+v, %v", unreadable, err)
		}
	})
}

// A run looked for by id or prefix may be in a directory that could not
// be searched: the "no workflow run" error names it, with the way out,
// rather than saying the run is not there.
func TestNoRunNamesTheDirectoriesItCouldNotSearch(t *testing.T) {
	h := shopStore(t)
	blocked := h.runsDir(h.cwd, "s2")
	h.write(blocked, "not a directory", 0)
	_, err := h.store().FindRun("0000dead")
	var nr *NoRunError
	if !errors.As(err, &nr) {
		t.Fatalf("FindRun: %v, want a NoRunError", err)
	}
	if !strings.Contains(err.Error(), "not searched") || !strings.Contains(err.Error(), blocked) ||
		!strings.Contains(err.Error(), "move it away") {
		t.Fatalf("error %q; want %s named as not searched, with the way out", err, blocked)
	}
	// A store with nothing unreadable says nothing of it.
	if _, err := shopStore(t).store().FindRun("0000dead"); err == nil || strings.Contains(err.Error(), "not searched") {
		t.Fatalf("a readable store: %v", err)
	}
	// A directory you may not read: its why (permission denied) does not
	// hold its path, so the error must name it.
	h = shopStore(t)
	h.openDirs()
	sessions := filepath.Dir(filepath.Dir(h.runsDir(h.cwd, "s1")))
	if err := os.Chmod(sessions, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(sessions, 0o700) })
	testenv.AsUnprivileged(t, sessions, func() { _, err = h.store().FindRun("0000dead") })
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "not searched, and the run may be there: "+sessions+": permission denied") {
		t.Fatalf("error %q; want %s named as not searched", err, sessions)
	}
}

// A run directory removed between the scan that found it and the read of
// its state (the engine, or a person, deleting runs while open looks) is
// said to be gone — not "the engine is still creating it", which would
// send the person to wait for a run that will never come.
func TestARunRemovedWhileReadIsSaidToBeGone(t *testing.T) {
	h := newHome(t)
	const id = "3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44"
	dir := h.run(h.cwd, id, strings.ReplaceAll(reviewRun, "%CWD%", h.cwd), 0)
	loc := location{id: id, dir: dir, project: ProjectKey(h.cwd), runsDir: filepath.Dir(dir)}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, err := h.store().readRun(loc, nil)
	if !errors.Is(err, ErrRunRemoved) || !strings.Contains(err.Error(), "removed") || strings.Contains(err.Error(), "still creating") {
		t.Fatalf("read of a removed run: %v", err)
	}
}

// A run directory you may not enter (its mode lost u+x, or it is another
// user's): the error about its state.json names the directory that stands
// in the way and how to open it; a chmod of the file, which it said
// before, cannot help while its directory is shut.
func TestAShutRunDirectoryIsNamed(t *testing.T) {
	h := shopStore(t)
	h.openDirs()
	run := filepath.Join(h.runsDir(h.cwd, "s1"), "3f0c9a2e-aaaa")
	if err := os.Chmod(run, 0o600); err != nil { // readable, but not to be entered
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(run, 0o700) })
	var err error
	testenv.AsUnprivileged(t, filepath.Join(run, "state.json"), func() { _, err = h.store().FindRun("3f0c9a2e-aaaa") })
	want := filepath.Join(run, "state.json") + ": cannot read: permission denied: the directory " + run +
		" cannot be entered; make it searchable by the user running herdr-pi, who must be the one who runs Pi (chmod u+rx " + run + ", or chown it)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("FindRun: %v\nwant it to say %s", err, want)
	}
}
