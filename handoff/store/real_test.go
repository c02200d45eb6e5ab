package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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
	var live error
	fx := storetest.MakeReal(t, func(o *storetest.Owner) { live = checkLive(o) })
	t.Logf("the engine wrote the store in %v", fx.Took.Round(time.Millisecond))
	if live != nil {
		t.Fatalf("while its owner ran: %v", live)
	}
	s := New(fx.Home(), fx.Agent.Project)
	project := fx.Agent.Project
	ids := map[string]string{storetest.CompletedWorkflow: fx.Completed, storetest.RetriedWorkflow: fx.Retried, storetest.FailedWorkflow: fx.Failed}
	before := snapshot(t, fx.Home()) + snapshot(t, fx.Agent.AgentDir)

	pick := func(t *testing.T, run, sel string) *Attempt {
		t.Helper()
		a, err := s.Find(run, sel)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	t.Run("killed owner", func(t *testing.T) {
		r, err := s.FindRun(fx.Killed[:8])
		if err != nil {
			t.Fatal(err)
		}
		if r.State() != "running" || r.Workflow() != storetest.KilledWorkflow {
			t.Fatalf("run %s %s", r.Workflow(), r.State())
		}
		a := pick(t, fx.Killed, "api")
		if a.Settled() || a.Agent.State != "running" {
			t.Fatalf("agent state %s, settled %v", a.Agent.State, a.Settled())
		}
		live, lease, err := a.Live()
		if err != nil || live || lease == nil || lease.PID != fx.KilledPID {
			t.Fatalf("after SIGKILL: live %v lease %+v err %v; want a dead lease of pid %d", live, lease, err, fx.KilledPID)
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
		runs, _, err := s.Runs()
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
		// The killed run was written last. The others' order is not fixed:
		// the engine may rewrite a finished run's state.json (delivery)
		// after the next run started.
		if len(got) != 4 || got[0] != storetest.KilledWorkflow+" running" {
			t.Fatalf("runs %q", got)
		}
	})

	if after := snapshot(t, fx.Home()) + snapshot(t, fx.Agent.AgentDir); after != before {
		t.Fatal("reading the store changed it")
	}
}

// checkLive: while the owner runs, its held attempt is live and the lease
// names the owner.
func checkLive(o *storetest.Owner) error {
	a, err := New(o.Env.Agent.Home, o.Env.Agent.Project).Find(o.RunID, "api")
	if err != nil {
		return err
	}
	live, lease, err := a.Live()
	if err != nil || !live || lease == nil || lease.PID != o.PID || a.Settled() {
		return fmt.Errorf("live %v lease %+v err %v settled %v, want live with pid %d", live, lease, err, a.Settled(), o.PID)
	}
	return nil
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

// TestRealInterruptedRunIsNotLive: the real engine under a real Pi. Its
// owner is SIGKILLed mid-attempt, and the person continues the same Pi
// session (`pi -c`): that Pi takes the session's lease and the engine
// marks the run interrupted, leaving its agent "running". While that Pi
// runs (its lease alive), the attempt is not live: nothing runs it until
// the run is resumed, so open forks what it left instead of asking that
// Pi for a handoff it could only refuse.
func TestRealInterruptedRunIsNotLive(t *testing.T) {
	e := storetest.NewEnv(t)
	o := e.StartOwner(t)
	o.Kill()
	// A reply streamed a word at a time: the second Pi runs a while.
	cmd := exec.Command(e.Agent.Pi.Bin, "-c", "-e", e.Engine, "-p", storetest.InspectMarker+" after the crash")
	cmd.Env, cmd.Dir = e.Agent.Env, e.Agent.Project
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	s := New(e.Agent.Home, e.Agent.Project)
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the second Pi exited (%v) before its lease and the interrupted run were seen together", err)
		case <-timeout:
			t.Fatal("the run was never seen interrupted while the second Pi held its session's lease")
		case <-time.After(20 * time.Millisecond):
		}
		r, err := s.FindRun(o.RunID)
		if err != nil || r.State() != "interrupted" {
			continue
		}
		if lease, err := r.Owner(); err != nil || lease == nil || lease.PID != cmd.Process.Pid || !lease.Alive() {
			continue
		}
		a, err := s.Find(o.RunID, "api")
		if err != nil {
			t.Fatal(err)
		}
		if a.Agent.State != "running" || a.Settled() {
			t.Fatalf("agent state %s, settled %v; want the running agent the crash left", a.Agent.State, a.Settled())
		}
		if live, _, err := a.Live(); live || err != nil {
			t.Fatalf("live %v, %v; want not live: the second Pi runs none of the interrupted run's agents", live, err)
		}
		if gone, err := a.OwnerGone(); !gone || err != nil {
			t.Fatalf("owner gone %v, %v; want gone", gone, err)
		}
		return
	}
}
