package signals

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

func leaf(id string) control.Leaf { return &id }

func line(id, parent, role, text, stop string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	content := fmt.Sprintf("%q", text)
	if role == "assistant" {
		content = fmt.Sprintf(`[{"type":"text","text":%q}]`, text)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"t","message":{"role":%q,"content":%s,"stopReason":%q}}`, id, p, role, content, stop)
}

// holds checks that the transitions and notifications stay these for d:
// the file's word on another Pi's entries, read at once (inotify, and a
// look asked for), would change them within it (an answer closes the
// question after state.AnswerGrace).
func (r *rig) holds(t *testing.T, transitions, notes string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if gt, gn := r.got(); gt != transitions || gn != notes {
			t.Fatalf("transitions %q, want %q still\nnotifications %q, want %q still", gt, transitions, gn, notes)
		}
	}
}

// Two Pis on one session file (`pi -c` in two panes; Pi does not lock the
// file, pi-agent.md §5.1), read by the real watcher as wrap wires it. The
// probe names this Pi's leaf; the other Pi's entries, appended from its own
// leaf, neither answer this pane's question nor ask one here. This Pi's own
// run, and its move to another branch without a run, still do.
func TestAnotherPiOnTheSameFileNeitherAsksNorAnswersHere(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	ask := "Which file should I edit?\n:input_needed:"
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`,
		line("u1", "", "user", "hi", ""), line("a0", "u1", "assistant", "Hello.", "stop"))
	w := r.watchWhenAsked(t, "")
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: path, LeafID: leaf("a0")})
	r.m.Screen(state.Verdict{State: state.Idle})
	r.waitFor(t, "idle", "")

	// The other Pi, idle on the same leaf, runs: its reply asks.
	appendSession(t, path, line("b1", "a0", "user", "from the other pane", ""), line("b2", "b1", "assistant", ask, "stop"))
	w.Poke()
	r.holds(t, "idle", "", 1500*time.Millisecond)

	// This Pi's run, from its own leaf; its reply asks.
	r.feed(control.AgentStart{LeafID: leaf("a0")})
	appendSession(t, path, line("u2", "a0", "user", "from this pane", ""), line("a3", "u2", "assistant", ask, "stop"))
	r.feed(control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: "Which file should I edit?", LeafID: leaf("a3")},
		control.AgentSettled{Idle: true, InputNeeded: true, Question: "Which file should I edit?", LeafID: leaf("a3")})
	r.waitFor(t, "idle working blocked(input needed)", "input-needed("+q+")")

	// The other pane's person answers their own question, and asks again
	// from a3 (a Pi that continued after this one's run, say): still this
	// pane's question, unanswered.
	appendSession(t, path, line("b3", "b2", "user", "answer there", ""), line("b4", "a3", "user", "another answer, another Pi", ""))
	w.Poke()
	r.holds(t, "idle working blocked(input needed)", "input-needed("+q+")", 1500*time.Millisecond)

	// /tree in this Pi, back to before the question: no run, and the
	// question is no longer the session's.
	r.feed(control.SessionTree{LeafID: leaf("u1")})
	r.waitFor(t, "idle working blocked(input needed) idle", "input-needed("+q+")")
}

// A probe that names no leaf (an older one) leaves the watcher on the
// file's last line, as before.
func TestWithoutALeafTheLastLineCounts(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`,
		line("u1", "", "user", "hi", ""), line("a0", "u1", "assistant", "Hello.", "stop"))
	w := r.watchWhenAsked(t, "")
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: path})
	r.m.Screen(state.Verdict{State: state.Idle})
	r.waitFor(t, "idle", "")
	appendSession(t, path, line("b1", "a0", "user", "x", ""), line("b2", "b1", "assistant", "Which file should I edit?\n:input_needed:", "stop"))
	w.Poke()
	r.waitFor(t, "idle blocked(input needed)", "")
}

// A probe that goes away (it crashed, or lost the socket) while its Pi is
// idle names no leaf any more, and its Pi runs on: what that Pi writes
// next must be read, as without the probe. Left pinned, the watcher
// would wait for a leaf that never comes, and the question of the Pi's
// next run would never turn the pane blocked.
func TestAProbeThatLeftLeavesTheLastLineToCount(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendSession(t, path, `{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/p"}`,
		line("u1", "", "user", "hi", ""), line("a0", "u1", "assistant", "Hello.", "stop"))
	w := r.watchWhenAsked(t, "")
	r.feed(control.ProbeConnected{PID: 1, Conn: 1}, control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: path, LeafID: leaf("a0")})
	r.m.Screen(state.Verdict{State: state.Idle})
	r.waitFor(t, "idle", "")
	r.feed(control.ProbeDisconnected{PID: 1, Conn: 1})
	appendSession(t, path, line("u2", "a0", "user", "go on", ""), line("a1", "u2", "assistant", "Which file should I edit?\n:input_needed:", "stop"))
	w.Poke()
	r.waitFor(t, "idle blocked(input needed)", "")
}
