package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// home is a hand-made store for unit tests; the real engine's stores are
// in real_test.go.
type home struct {
	t   *testing.T
	dir string
	cwd string // the caller's project
	now time.Time
}

func newHome(t *testing.T) *home {
	t.Helper()
	dir := t.TempDir()
	h := &home{t: t, dir: dir, cwd: filepath.Join(dir, "src", "shop"), now: time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)}
	if err := os.MkdirAll(h.cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// openDirs lets every user into the store's directories (0755, and its
// parent), so that a test running as nobody (testenv.AsUnprivileged) gets
// as far as the one it shuts.
func (h *home) openDirs() {
	h.t.Helper()
	if err := os.Chmod(filepath.Dir(h.dir), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := filepath.WalkDir(h.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o755)
	}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *home) store() *Store {
	s := New(h.dir, h.cwd)
	s.Now = func() time.Time { return h.now }
	return s
}

func (h *home) runsDir(cwd, session string) string {
	return filepath.Join(h.dir, ".pi", "workflows", "projects", ProjectKey(cwd), "sessions", session, "runs")
}

// write puts a file at runsDir/rel with mtime age before now.
func (h *home) write(path, content string, age time.Duration) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		h.t.Fatal(err)
	}
	mt := h.now.Add(-age)
	if err := os.Chtimes(path, mt, mt); err != nil {
		h.t.Fatal(err)
	}
}

// run writes a run's state.json in cwd's project, session s1.
func (h *home) run(cwd, id, state string, age time.Duration) string {
	h.t.Helper()
	dir := filepath.Join(h.runsDir(cwd, "s1"), id)
	h.write(filepath.Join(dir, "state.json"), state, age)
	return dir
}

// reviewRun is a run like the engine's: api retried (#1 failed, #2
// running), docs completed, lint queued; agent numbers start at 3 (the
// session's second run).
const reviewRun = `{"id":"3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44","workflowName":"review-api","cwd":"%CWD%","sessionId":"s1","state":"running",
 "agents":[
  {"id":"3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44:3","name":"api","label":"api-label","state":"running","model":{"provider":"openai","model":"gpt-5","thinking":"high"},
   "attemptDetails":[
    {"attempt":2,"transport":"local","session":{"transport":"local","sessionId":"s-api-2","locator":{"sessionFile":"%CWD%/api-2.jsonl"}},"setup":{"model":{"provider":"openai","model":"gpt-5","thinking":"high"},"cwd":"%CWD%/gone-worktree"}},
    {"attempt":1,"transport":"local","session":{"transport":"local","sessionId":"s-api-1","locator":{"sessionFile":"%CWD%/api-1.jsonl"}},"setup":{"model":{"provider":"openai","model":"gpt-5"},"cwd":"%CWD%"},"error":{"code":"AGENT_FAILED","message":"400"}}]},
  {"id":"3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44:4","name":"docs","state":"completed","model":{"provider":"anthropic","model":"claude"},
   "attemptDetails":[{"attempt":1,"transport":"herdr","session":{"transport":"herdr","sessionId":"s-docs-1","locator":{"sessionFile":"%CWD%/missing.jsonl"}},"setup":{"model":{"provider":"anthropic","model":"claude"},"cwd":"%CWD%"}}]},
  {"id":"3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44:5","name":"lint","state":"queued","model":{"provider":"p","model":"m"}}]}`
