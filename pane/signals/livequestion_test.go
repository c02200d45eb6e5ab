package signals

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/session"
)

// Without the probe and without Pi's status channel only the screen and
// the session file speak. A run quicker than the screen's debounce is
// never confirmed working, so the file's word alone must tell a question
// Pi writes now from one it wrote before herdr-pi looked. These run a real
// watcher on a real file, as wrap wires it (no screen at all: the screen
// never saw the run).

// sessionLine is one line of a session file, stamped at when as Pi stamps
// its entries.
func sessionLine(t *testing.T, id, parent, role, text string, when time.Time) string {
	t.Helper()
	m := map[string]any{"role": role, "content": []any{map[string]string{"type": "text", "text": text}}}
	if role == "assistant" {
		m["stopReason"] = "stop"
	}
	var p any
	if parent != "" {
		p = parent
	}
	b, err := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": p,
		"timestamp": when.UTC().Format("2006-01-02T15:04:05.000Z"), "message": m})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sessionHeader(dir string, when time.Time) string {
	b, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": "01a22799-ba7b-7032-8994-b66058536b75",
		"timestamp": when.UTC().Format("2006-01-02T15:04:05.000Z"), "cwd": dir})
	return string(b)
}

// watchFile runs a real session watcher on path feeding r, as wrap does
// for a Pi without the probe.
func (r *rig) watchFile(t *testing.T, path string) {
	t.Helper()
	w := session.Watch(session.WatchConfig{Sink: r.s, Locator: session.Locator{Path: path}, Interval: 10 * time.Millisecond})
	t.Cleanup(w.Close)
	r.s.SetWatcher(w)
}

// watchWhenAsked wires a real session watcher to the rig as wrap wires it,
// looking only when asked (its interval is an hour): Pi's reports, the
// probe's events, Poke. It follows path, or, when path is "", the file the
// probe's session_start names. It is closed when the test ends.
func (r *rig) watchWhenAsked(t *testing.T, path string) *session.Watcher {
	t.Helper()
	w := session.Watch(session.WatchConfig{Sink: r.s, Interval: time.Hour})
	t.Cleanup(w.Close)
	if path != "" {
		w.Follow(path)
	}
	r.s.SetWatcher(w)
	return w
}

// awaitReasons waits until the machine has opened or closed n reasons in
// all, and returns them.
func (r *rig) awaitReasons(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		got := append([]string(nil), r.reasons...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("reasons %q, want %d of them", got, n)
		}
	}
}

const (
	asks    = "Which file should I edit?\n" + session.Marker
	asksToo = "Which function should I change?\n" + session.Marker
)

// Pi's first reply asks, in a run the screen never confirmed: Pi writes the
// whole session at once as the reply ends (lazy write), while herdr-pi
// watches. It is news, and told.
func TestAQuickQuestionWithoutTheProbeIsTold(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	r.watchFile(t, file)
	now := time.Now()
	appendSession(t, file, sessionHeader(dir, now), sessionLine(t, "u1", "", "user", "which file?", now),
		sessionLine(t, "a1", "u1", "assistant", asks, time.Now()))
	// The reason opens first; its transition and notification follow on
	// the machine's sink.
	r.waitFor(t, "blocked(input needed)", "input-needed")
}

// The person answers and Pi asks again, both quicker than the screen: the
// file shows another reply that asks while the pane is still blocked on
// the first. Each question is told.
func TestAQuickQuestionAskedAgainWithoutTheProbeIsTold(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	r.watchFile(t, file)
	now := time.Now()
	appendSession(t, file, sessionHeader(dir, now), sessionLine(t, "u1", "", "user", "which file?", now),
		sessionLine(t, "a1", "u1", "assistant", asks, time.Now()))
	r.awaitReasons(t, 1)
	appendSession(t, file, sessionLine(t, "u2", "a1", "user", "main.go", time.Now()),
		sessionLine(t, "a2", "u2", "assistant", asksToo, time.Now()))
	r.awaitAsked(t)
	r.expect(t, "blocked(input needed)", "input-needed,input-needed")
}

// What the file held before herdr-pi looked is history, told before: a
// session Pi resumes (the file last written before the wrapper started),
// and a session Pi copies into a new file as it starts (`--fork`, `/fork`,
// `/clone`, `/import`: the file is new, its entries are not). Both are
// blocked, and neither is told again.
func TestAQuestionFromHistoryWithoutTheProbeIsNotTold(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fileNew: the file is written after the watcher starts.
		fileNew bool
	}{{"resumed", false}, {"copied", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.jsonl")
			then := time.Now().Add(-time.Hour)
			lines := []string{sessionHeader(dir, then), sessionLine(t, "u1", "", "user", "which file?", then),
				sessionLine(t, "a1", "u1", "assistant", asks, then.Add(time.Second))}
			if !tc.fileNew {
				appendSession(t, file, lines...)
				if err := os.Chtimes(file, then, then); err != nil {
					t.Fatal(err)
				}
			}
			r := newRig()
			defer r.m.Stop()
			r.watchFile(t, file)
			if tc.fileNew {
				appendSession(t, file, lines...)
			}
			r.awaitReasons(t, 1)
			r.waitFor(t, "blocked(input needed)", "")
		})
	}
}

// awaitAsked waits until the open sentinel stands for the reply a2.
func (r *rig) awaitAsked(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rs := r.m.Snapshot().Reasons
		if len(rs) == 1 && rs[0].Entry == "a2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("open reasons %+v, want the sentinel of a2", rs)
		}
	}
}
