package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// A real Pi 1.6.0 without the probe (`wrap --no-probe`, as behind a
// launcher herdr-pi cannot inject into), reporting on its status channel
// (PI_PROGRAM_STATUS=1): how its runs end reaches the person, as
// pi-terminal-notifications tells it from inside Pi (seed 003: "a desktop
// notification when Pi settles or needs input").

// everyRun is the environment entry of a config that tells every finished
// run (finished_after = "0s"; the default tells runs of 20 s or more).
func everyRun(t *testing.T) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, []byte("[notify]\nfinished_after = \"0s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "HERDR_PI_CONFIG=" + config
}

// awaitToasts waits for n toasts at the fake Herdr and returns them.
func awaitToasts(t *testing.T, h *herdrtest.Server, what string, n int) []herdrtest.NotificationCall {
	t.Helper()
	h.WaitFor(t, time.Minute, what, func() bool { return len(h.Notifications()) >= n })
	return h.Notifications()
}

// A run that ends done is "finished"; one the model refuses (a 400, which
// Pi does not retry) is "stopped with an error", naming the refusal.
func TestWrapNoProbeRunEndToasts(t *testing.T) {
	const refusal = "the model refuses this request"
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "REFUSE") {
			return fakellm.Reply{Status: 400, Text: refusal}
		}
		return fakellm.Reply{Text: "Hello! Nothing to do here, all is well today.", WordDelay: 50 * time.Millisecond}
	}, true)
	r.extra = append(r.extra, everyRun(t))
	tm, _ := r.wrapStatusChannelOnly()
	tm.Type(t, "hello")
	r.submitted(tm)
	if n := awaitToasts(t, r.herdr, "the finished run's toast", 1); n[0].Title != "Pi finished" {
		t.Fatalf("notifications %+v, want \"Pi finished\"", n)
	}
	tm.Type(t, "REFUSE please")
	n := awaitToasts(t, r.herdr, "the refused run's toast", 2)
	if n[1].Title != "Pi stopped with an error" || !strings.Contains(n[1].Body, refusal) {
		t.Fatalf("notifications %+v, want the second to be \"Pi stopped with an error\" naming %q", n, refusal)
	}
	quit(t, tm) // wrap drains its queued toasts before it exits
	if n := r.herdr.Notifications(); len(n) != 2 {
		t.Fatalf("notifications %+v, want one per run", n)
	}
	r.noGuidance()
}

// A reply that ends with the sentinel reads "done" on Pi's channel too; it
// is told as the question it is, never as a finished run.
func TestWrapNoProbeQuestionIsToldAsBlockedOnly(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), true)
	r.answerOnceWorking()
	r.extra = append(r.extra, everyRun(t))
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS=1"})
	tm.Type(t, "which file?")
	r.submitted(tm)
	r.waitTraced(trace, "the question", "unknown", "idle", "working", "blocked(input needed)")
	// The run's end is told when its idle counts, a debounce after Pi's
	// done, under the question: wait for it before looking at the toasts.
	awaitTracedRunEnd(t, trace, "program-status:done")
	quit(t, tm) // wrap drains its queued toasts before it exits
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi needs your input" {
		t.Fatalf("notifications %+v, want only the question's", n)
	}
}

// awaitTracedRunEnd waits, a minute at most, for a run_finished of cause
// in the trace.
func awaitTracedRunEnd(t *testing.T, trace, cause string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		for _, e := range readTrace(t, trace) {
			if e.Kind == "run_finished" && e.Cause == cause {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run_finished (%s) in the trace; transitions %q", cause, transitionCauses(t, trace))
		}
	}
}

// /compact is no run: Pi reports it as working ("Compacting context") and
// then done, outside any run, and nothing is told of its end. Three runs
// first, each told, to give Pi something to compact (a small budget of
// recent tokens); the summary's reply is held until the pane was seen
// working, so the order is the test, not the timing.
func TestWrapNoProbeCompactionIsNoRun(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 300)
	release := make(chan struct{})
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if !strings.Contains(req.LastUser(), "tell me more") {
			select { // the summary
			case <-release:
			case <-time.After(2 * time.Minute):
			}
			return fakellm.Reply{Text: "## Goal\nsummary of the lorem ipsum"}
		}
		return fakellm.Reply{Chunks: []string{long, long, long}, WordDelay: 400 * time.Millisecond}
	}, true)
	smallCompactionBudget(t, r.agent.AgentDir)
	r.extra = append(r.extra, everyRun(t))
	tm, trace := r.wrapStatusChannelOnly()
	for i, p := range []string{"tell me more a", "tell me more b", "tell me more c"} {
		tm.Type(t, p)
		if i == 0 {
			r.submitted(tm)
		}
		awaitToasts(t, r.herdr, "run "+string(rune('1'+i))+"'s toast", i+1)
	}
	n := len(transitionCauses(t, trace))
	tm.Type(t, "/compact")
	r.herdr.WaitFor(t, time.Minute, "working while Pi compacts", func() bool {
		return strings.Join(transitionCauses(t, trace)[n:], " ") == "working<-program-status:working"
	})
	close(release)
	// The idle and a run's end, were it told, come in one step.
	r.herdr.WaitFor(t, time.Minute, "idle once compacted", func() bool {
		return strings.Join(transitionCauses(t, trace)[n:], " ") == "working<-program-status:working idle<-program-status:done"
	})
	quit(t, tm) // wrap drains its queued toasts before it exits
	notes := r.herdr.Notifications()
	if len(notes) != 3 {
		t.Fatalf("notifications %+v, want one per run and none for the compaction", notes)
	}
	for _, note := range notes {
		if note.Title != "Pi finished" {
			t.Fatalf("notifications %+v, want three \"Pi finished\"", notes)
		}
	}
	if !bytes.Contains(tm.Raw(), []byte("\x1b]7501;state=working:app=pi:msg="+base64.StdEncoding.EncodeToString([]byte("Compacting context"))+"\x1b\\")) {
		t.Fatalf("Pi did not report its compaction as herdr-pi expects; reports: %q", statusSequences(tm.Raw()))
	}
}

// Without the probe and Pi's status channel, the session file and the
// screen alone: the person answers a question and Pi asks another at once,
// in a reply quicker than the screen's debounce. The pane stays blocked
// on the new question; the old answer does not close it.
func TestWrapNoProbeQuestionAskedAgainAtOnceStaysBlocked(t *testing.T) {
	const again = "Which function should I change?"
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "ANSWER") {
			return fakellm.Reply{Text: again + "\n" + session.Marker}
		}
		return fakellm.Reply{Text: question + "\n" + session.Marker}
	}, true)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, nil)
	tm.Type(t, "which file?")
	r.submitted(tm)
	r.herdr.WaitFor(t, time.Minute, "the question", func() bool {
		s := r.states()
		return len(s) > 0 && s[len(s)-1] == "blocked(input needed)"
	})
	tm.Type(t, "ANSWER: main.go")
	tm.WaitText(t, again, time.Minute)
	time.Sleep(2 * time.Second) // past the answer's grace
	if s := r.states(); s[len(s)-1] != "blocked(input needed)" {
		t.Fatalf("after the second question the pane reports %q; transitions %q", s, transitionCauses(t, trace))
	}
	quit(t, tm)
}
