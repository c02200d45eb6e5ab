package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// writeSelfLease makes this test process the owner of the runs in runsDir,
// with the lease the engine would write for it (pid and /proc ctime).
func writeSelfLease(t *testing.T, h *home, runsDir string) {
	t.Helper()
	l := selfLease(t)
	b, err := json.Marshal(map[string]any{"pid": l.PID, "token": "t", "startedAt": l.StartedAt})
	if err != nil {
		t.Fatal(err)
	}
	h.write(filepath.Join(runsDir, LeaseFile), string(b), 0)
}

// TestLiveOwnerKeepsOnlyUnsettledAttemptsLive: with the owner alive, the
// running attempt is live (open hands it off) and a finished one is not
// (open inspects it), whatever the lease says.
func TestLiveOwnerKeepsOnlyUnsettledAttemptsLive(t *testing.T) {
	h, r := reviewStore(t)
	writeSelfLease(t, h, r.RunsDir)
	r, err := h.store().FindRun(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]bool{"api#2": true, "api#1": false, "docs": false} {
		a, err := r.PickText(sel)
		if err != nil {
			t.Fatal(err)
		}
		live, lease, err := a.Live()
		if live != want || err != nil || lease == nil || lease.PID != os.Getpid() {
			t.Errorf("%s with a live owner: live %v (want %v), lease %+v, %v", sel, live, want, lease, err)
		}
		if gone, err := a.OwnerGone(); gone || err != nil {
			t.Errorf("%s with a live owner: owner gone %v, %v", sel, gone, err)
		}
	}
}

// TestAnEndedAttemptOfARunningAgentIsSettled: an attempt that was retried
// (even one that ended without an error) or that ended with an error
// before its retry exists runs no more, though its agent does: the engine
// starts a retry only after the previous attempt ended. With the owner
// alive, opening it inspects it instead of taking over the agent.
func TestAnEndedAttemptOfARunningAgentIsSettled(t *testing.T) {
	h := newHome(t)
	dir := h.run(h.cwd, "r1", `{"id":"r1","workflowName":"w","state":"running","agents":[
		{"id":"r1:1","name":"a","state":"retrying","attemptDetails":[{"attempt":2,"setup":{}},{"attempt":1,"setup":{}}]},
		{"id":"r1:2","name":"b","state":"retrying","attemptDetails":[{"attempt":1,"setup":{},"error":{"code":"AGENT_FAILED","message":"429"}}]}]}`, 0)
	writeSelfLease(t, h, filepath.Dir(dir))
	r, err := h.store().FindRun("r1")
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]bool{"a#1": true, "a#2": false, "b#1": true} {
		a, err := r.PickText(sel)
		if err != nil {
			t.Fatal(err)
		}
		if a.Settled() != want {
			t.Errorf("%s: settled %v, want %v", sel, a.Settled(), want)
		}
		if live, _, err := a.Live(); live == want || err != nil {
			t.Errorf("%s: live %v, %v; want %v", sel, live, err, !want)
		}
	}
}

// TestPickPrefersNameThenLabelThenNumber: a word that is one agent's name
// and another's label (or number) picks the named one, as the order in
// Pick's doc says; it is not a guess between them.
func TestPickPrefersNameThenLabelThenNumber(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "r2", `{"id":"r2","workflowName":"w","state":"running","agents":[
		{"id":"r2:1","name":"review","label":"fix","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]},
		{"id":"r2:2","name":"fix","label":"3","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]},
		{"id":"r2:3","name":"lint","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]}]}`, 0)
	r, err := h.store().FindRun("r2")
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{"fix": "r2:2", "3": "r2:2", "review": "r2:1", "lint": "r2:3"} {
		a, err := r.PickText(sel)
		if err != nil || a.Agent.ID != want {
			t.Errorf("%s: picked %v (%v), want agent %s", sel, a, err, want)
		}
	}
}

// TestAnAttemptOfAnInterruptedRunIsNotLive: the engine marks a run
// interrupted when its owner goes (its shutdown) or when the next Pi of
// the same session starts and finds the run unfinished; that Pi holds the
// session's lease then, while the run's agents keep the state they had
// ("running", after a crash). Nothing runs them until the run is resumed
// (it is "running" again then): asking that Pi for a handoff of such an
// attempt could only be refused. Open forks what it left, as for an
// owner that is gone; it is not settled (a resume may carry it on).
func TestAnAttemptOfAnInterruptedRunIsNotLive(t *testing.T) {
	h := newHome(t)
	dir := h.run(h.cwd, "r1", `{"id":"r1","workflowName":"w","state":"interrupted","agents":[
		{"id":"r1:1","name":"a","state":"running","attemptDetails":[{"attempt":1,"setup":{}}]}]}`, 0)
	writeSelfLease(t, h, filepath.Dir(dir))
	r, err := h.store().FindRun("r1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.PickText("a")
	if err != nil {
		t.Fatal(err)
	}
	if live, _, err := a.Live(); live || err != nil {
		t.Errorf("an attempt of an interrupted run with a live lease: live %v, %v; want not live", live, err)
	}
	if gone, err := a.OwnerGone(); !gone || err != nil {
		t.Errorf("owner gone %v, %v; want gone", gone, err)
	}
	if a.Settled() {
		t.Error("settled; an interrupted run may be resumed")
	}
}
