package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/handoff/store/storetest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

func nodeBinary(t *testing.T) string {
	return filepath.Join(pitest.Current(t).NodeDir, "node")
}

// TestRealStore reads stores written by the real engine under a real Pi:
// a live owner (checked, then SIGKILLed mid-attempt), and one owner that
// ran a completed, a retried and a failed workflow and exited cleanly.
func TestRealStore(t *testing.T) {
	start := time.Now()
	e := storetest.NewEnv(t)
	ids := e.RunFinished(t)
	finished := time.Now()
	owner := e.StartOwner(t)
	t.Logf("the engine wrote the finished runs in %v, the held one in %v", finished.Sub(start).Round(time.Millisecond), time.Since(finished).Round(time.Millisecond))
	s := New(e.Agent.Home, e.Agent.Project)
	project := e.Agent.Project

	pick := func(t *testing.T, run, sel string) *Attempt {
		t.Helper()
		a, err := s.Find(run, sel)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	t.Run("live owner", func(t *testing.T) {
		a := pick(t, owner.RunID, "api")
		live, lease, err := a.Live()
		if err != nil || !live || lease == nil || lease.PID != owner.PID {
			t.Fatalf("while its Pi runs: live %v lease %+v err %v, want live with pid %d", live, lease, err, owner.PID)
		}
		if a.Settled() {
			t.Fatal("the held attempt is settled")
		}
	})
	owner.Kill()
	before := snapshot(t, e.Agent.Home)

	t.Run("killed owner", func(t *testing.T) {
		r, err := s.FindRun(owner.RunID[:8])
		if err != nil {
			t.Fatal(err)
		}
		if r.State() != "running" || r.Workflow() != storetest.KilledWorkflow {
			t.Fatalf("run %s %s", r.Workflow(), r.State())
		}
		a := pick(t, owner.RunID, "api")
		if a.Settled() || a.Agent.State != "running" {
			t.Fatalf("agent state %s, settled %v", a.Agent.State, a.Settled())
		}
		live, lease, err := a.Live()
		if err != nil || live || lease == nil || lease.PID != owner.PID {
			t.Fatalf("after SIGKILL: live %v lease %+v err %v; want a dead lease of pid %d", live, lease, err, owner.PID)
		}
		if gone, err := a.OwnerGone(); !gone || err != nil {
			t.Fatalf("owner gone %v %v", gone, err)
		}
		if _, err := a.SessionFile(); err != nil {
			t.Fatalf("the held attempt's transcript: %v", err)
		}
	})

	t.Run("completed", func(t *testing.T) {
		for _, name := range []string{"api", "docs"} {
			a := pick(t, ids[storetest.CompletedWorkflow][:8], name)
			if a.Name() != name+"#1" || !a.Settled() || a.Run.State() != "completed" {
				t.Fatalf("%s: %s settled %v run %s", name, a.Name(), a.Settled(), a.Run.State())
			}
			if live, lease, err := a.Live(); live || lease != nil || err != nil {
				t.Fatalf("%s after a clean exit: live %v lease %+v err %v", name, live, lease, err)
			}
			checkOpenable(t, a, project)
		}
	})

	t.Run("retried", func(t *testing.T) {
		id := ids[storetest.RetriedWorkflow]
		latest, first := pick(t, id, "fixer"), pick(t, id, "fixer#1")
		if latest.Name() != "fixer#2" || first.Record.Error == nil || latest.Record.Error != nil {
			t.Fatalf("latest %s (error %v), #1 error %v", latest.Name(), latest.Record.Error, first.Record.Error)
		}
		// Agent numbers count per owner Pi: the first run had agents 1
		// and 2, so fixer is 3, and its number picks it.
		if n := first.Agent.Number(); n != 3 {
			t.Fatalf("fixer's number %d, want 3", n)
		}
		if byNumber := pick(t, id, "3#1"); byNumber.Agent.ID != first.Agent.ID || byNumber.Record.N != 1 {
			t.Fatal("3#1 is not fixer#1")
		}
		for _, a := range []*Attempt{first, latest} {
			checkOpenable(t, a, project)
		}
		_, err := s.Find(id, "fixer#3")
		if err == nil || err.Error() != fmt.Sprintf(`run %s: agent "fixer" has no attempt #3 (attempts: fixer#1, fixer#2)`, id[:8]) {
			t.Fatalf("fixer#3: %v", err)
		}
	})

	t.Run("failed", func(t *testing.T) {
		a := pick(t, ids[storetest.FailedWorkflow], "lint")
		if a.Run.State() != "failed" || a.Agent.State != "failed" || a.Record.Error == nil || !a.Settled() {
			t.Fatalf("run %s agent %s error %v", a.Run.State(), a.Agent.State, a.Record.Error)
		}
		checkOpenable(t, a, project)
	})

	t.Run("listing", func(t *testing.T) {
		runs, err := s.Runs()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			if r.Err != nil {
				t.Fatalf("%s: %v", r.ID, r.Err)
			}
			got = append(got, r.Workflow()+" "+r.State())
		}
		// The killed run was written last; the three others share a
		// second of mtime granularity at most, so only the first is fixed.
		if len(got) != 4 || got[0] != storetest.KilledWorkflow+" running" {
			t.Fatalf("runs %q", got)
		}
	})

	if after := snapshot(t, e.Agent.Home); after != before {
		t.Fatal("reading the store changed it")
	}
}

// checkOpenable asserts what inspection needs from a settled attempt: its
// model, an existing cwd, and a transcript that holds the agent's turns.
func checkOpenable(t *testing.T, a *Attempt, project string) {
	t.Helper()
	if m := a.Model(); m != "fake/fake-model:off" {
		t.Errorf("%s model %q", a, m)
	}
	if cwd, err := a.Cwd(); err != nil || cwd != project {
		t.Errorf("%s cwd %q %v", a, cwd, err)
	}
	path, err := a.SessionFile()
	if err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"role":"assistant"`) {
		t.Errorf("%s transcript %s holds no assistant turn (%v)", a, path, err)
	}
}

// snapshot sums every path, mode, size, mtime and content under dir.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrPermission) {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
