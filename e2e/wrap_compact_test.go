package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// /compact in a real Pi: Pi calls the model for a summary outside any run
// ("Compacting context..."), which the probe hears as no run at all. The
// pane reads working while the summary is being written, and idle once it
// is in — the summary's reply is held until the test saw working, so the
// order is the test, not the timing.
func TestWrapPiCompactionIsWorking(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 300)
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k <= 3 {
			// Streamed over a second: a run too short would reach Herdr
			// as no change at all (the reporter sends the newest state).
			return fakellm.Reply{Chunks: []string{long, long, long}, WordDelay: 400 * time.Millisecond}
		}
		select { // the summary: held until the pane was seen working
		case <-release:
		case <-time.After(2 * time.Minute):
		}
		return fakellm.Reply{Text: "## Goal\nsummary of the lorem ipsum"}
	}, true)
	smallCompactionBudget(t, r.agent.AgentDir)

	tm := r.wrap()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("model requests: %d; screen:\n%s", len(r.llm.Requests()), tm.Screen())
		}
	})
	want := []string{"unknown", "idle"}
	r.waitStates("start", want...)
	for i, p := range []string{"tell me more a", "tell me more b", "tell me more c"} {
		tm.Type(t, p)
		want = append(want, "working", "idle")
		r.waitStates("run "+string(rune('1'+i)), want...)
	}
	tm.Type(t, "/compact")
	want = append(want, "working")
	r.waitStates("compacting", want...)
	if !strings.Contains(tm.Screen(), "Compacting context") {
		t.Logf("screen while compacting:\n%s", tm.Screen())
	}
	close(release)
	want = append(want, "idle")
	r.waitStates("compacted", want...)
	quit(t, tm)
}

// smallCompactionBudget gives Pi a small budget of recent tokens in the
// agent directory's settings.json, so three long replies give it
// something to compact.
func smallCompactionBudget(t *testing.T, agentDir string) {
	t.Helper()
	settings := filepath.Join(agentDir, "settings.json")
	var s map[string]any
	b, err := os.ReadFile(settings)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	s["compaction"] = map[string]any{"enabled": true, "keepRecentTokens": 50}
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// /compact while a question waits: compacting is no run, so the question
// stays open through it (the pane stays blocked, as the sentinel
// integration keeps it until the next run starts), and the compaction
// entry Pi then writes after the reply is passed over: a restart on the
// session restores the question.
func TestWrapPiCompactionKeepsTheQuestion(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 300)
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		switch {
		case strings.Contains(req.LastUser(), "tell me more"):
			return fakellm.Reply{Chunks: []string{long, long, long}, WordDelay: 400 * time.Millisecond}
		case strings.Contains(req.LastUser(), "which file"):
			return fakellm.Reply{Text: question + "\n" + session.Marker, WordDelay: 50 * time.Millisecond}
		}
		return fakellm.Reply{Text: "## Goal\nsummary of the lorem ipsum"}
	}, true)
	smallCompactionBudget(t, r.agent.AgentDir)
	tm := r.wrap()
	want := []string{"unknown", "idle"}
	r.waitStates("start", want...)
	for i, p := range []string{"tell me more a", "tell me more b", "which file?"} {
		tm.Type(t, p)
		want = append(want, "working", "idle")
		if i == 2 {
			want[len(want)-1] = "blocked(input needed)"
		}
		r.waitStates("run "+string(rune('1'+i)), want...)
	}
	files := r.agent.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	compactions := func() int { return strings.Count(readFile(t, files[0]), `"type":"compaction"`) }
	before, calls := compactions(), len(r.llm.Requests())
	tm.Type(t, "/compact")
	if _, err := r.llm.WaitRequests(calls+1, time.Minute); err != nil {
		t.Fatalf("no summary asked for: %v\n%s", err, tm.Screen())
	}
	for deadline := time.Now().Add(30 * time.Second); compactions() == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction entry in the session file:\n%s", tm.Screen())
		}
	}
	time.Sleep(time.Second)
	r.waitStates("compacted", want...) // nothing changed
	quit(t, tm)

	r.herdr.ClearRecords()
	tm = r.wrap("--session", files[0])
	r.waitRestart("the restart after the compaction", "blocked(input needed)")
	quit(t, tm)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Pi compacts on its own right after the reply that asks (its context is
// over the threshold as the run ends), with nothing but the screen to
// tell runs (no probe, no status channel): its "Auto-compacting..." is
// drawn where a run's indicator is, but it follows the run that asked
// without a frame between, so it is no run that began after the question
// was read, and the question stays open through it: the pane stays
// blocked, and is not told a second time. The summary is held until the
// test has looked, so the order is the test's, not the timing's. (Pi
// 0.73.1 does the same: HERDR_PI_TEST_PI=.ci/cache/pi073/node_modules/.bin/pi.)
func TestWrapPiAutoCompactionAfterAQuestionFromTheScreenAlone(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 300)
	release := make(chan struct{})
	var asked sync.WaitGroup
	asked.Add(1)
	var once sync.Once
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		summary := strings.Contains(req.System(), "context summarization assistant")
		switch {
		case summary && strings.Contains(req.LastUser(), "which file"):
			once.Do(asked.Done)
			select { // the summary after the question: held until the test looked
			case <-release:
			case <-time.After(2 * time.Minute):
			}
			return fakellm.Reply{Text: "## Goal\nsummary of the lorem ipsum and a question"}
		case summary:
			return fakellm.Reply{Text: "## Goal\nsummary of the lorem ipsum"}
		case strings.Contains(req.LastUser(), "which file"):
			return fakellm.Reply{Chunks: []string{long, "\n" + question + "\n" + session.Marker}, WordDelay: 400 * time.Millisecond}
		}
		return fakellm.Reply{Chunks: []string{long, long, long}, WordDelay: 400 * time.Millisecond}
	}, true)
	smallCompactionBudget(t, r.agent.AgentDir)
	compactAtEveryRunsEnd(t, r.agent.AgentDir)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS=0"})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nnotifications: %+v\ntransitions: %q", tm.Screen(), r.herdr.Notifications(), transitionCauses(t, trace))
		}
	})
	tm.Type(t, "tell me more a")
	r.submitted(tm)
	// Its reply, then the summary of its compaction.
	if _, err := r.llm.WaitRequests(2, 2*time.Minute); err != nil {
		t.Fatalf("no compaction after the first run: %v\n%s", err, tm.Screen())
	}
	r.herdr.Await(2*time.Minute, func() bool {
		s := r.states()
		return len(s) > 0 && s[len(s)-1] == "idle"
	})
	tm.Type(t, "which file?")
	asked.Wait()
	// The run's reply is in the file, and Pi compacts; the screen shows it.
	r.herdr.Await(2*time.Minute, func() bool {
		s := r.states()
		return len(s) > 0 && s[len(s)-1] == "blocked(input needed)"
	})
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s := r.states(); s[len(s)-1] != "blocked(input needed)" {
			t.Fatalf("while Pi compacts after the question: reports %q", s)
		}
	}
	if !strings.Contains(tm.Screen(), "ompacting") {
		t.Logf("screen while the summary is held:\n%s", tm.Screen())
	}
	close(release)
	time.Sleep(2 * time.Second)
	if s := r.states(); s[len(s)-1] != "blocked(input needed)" || strings.Count(strings.Join(s, " "), "blocked") != 1 {
		t.Fatalf("after the compaction: reports %q, want blocked once, still", s)
	}
	if n := len(r.herdr.Notifications()); n != 1 {
		t.Fatalf("%d notifications, want the question's one: %+v", n, r.herdr.Notifications())
	}
}

// compactAtEveryRunsEnd sets the threshold so low that Pi compacts at the
// end of every run.
func compactAtEveryRunsEnd(t *testing.T, agentDir string) {
	t.Helper()
	settings := filepath.Join(agentDir, "settings.json")
	var s map[string]any
	b, err := os.ReadFile(settings)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	s["compaction"].(map[string]any)["reserveTokens"] = 31990
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
