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

// Pi 1.6.0 retries a reply that failed on an overloaded or unreachable
// model server (HTTP 429, 5xx, a connection error), after a countdown the
// person may cancel with Escape: "Retrying (1/3) in 2s... (escape to
// cancel)". A reply refused for a context overflow it recovers from by
// compacting the context, which the person may cancel too.

// failOr answers a prompt containing FAIL with HTTP 503, which Pi retries,
// and anything else with the question and the marker, streamed slowly
// enough for the pane to be seen working.
func failOr() fakellm.Responder {
	return func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "FAIL") {
			return fakellm.Reply{Status: 503, Text: "overloaded"}
		}
		return fakellm.Reply{Text: question + "\n" + session.Marker, WordDelay: 100 * time.Millisecond}
	}
}

// retryAfter sets Pi's retry countdown: base doubles with each attempt.
func (r *piRig) retryAfter(base time.Duration) {
	r.t.Helper()
	r.setting("retry", map[string]any{"enabled": true, "maxRetries": 3, "baseDelayMs": base.Milliseconds()})
}

// setting sets one key of Pi's settings.json.
func (r *piRig) setting(key string, value any) {
	r.t.Helper()
	path := filepath.Join(r.agent.AgentDir, "settings.json")
	var s map[string]any
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	s[key] = value
	if b, err = json.Marshal(s); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// Escape on the retry countdown ends the run with the failed reply's stop
// reason, error, and Pi says no more (its retries do not reach extensions):
// the person cancelled it and is not told it failed, as with any run they
// abort. The question asked next is the only notification.
func TestWrapPiEscapeOnTheRetryCountdownIsSilent(t *testing.T) {
	r := newPiRig(t, failOr(), true)
	r.retryAfter(10 * time.Minute) // the countdown outlasts any slow machine
	tm := r.wrap()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s", tm.Screen())
		}
	})
	tm.Type(t, "FAIL please")
	tm.WaitText(t, "Retrying (1/3)", time.Minute)
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Retry cancelled", time.Minute)
	r.waitStates("the cancelled retry", "unknown", "idle", "working", "idle")

	tm.Type(t, "which file?")
	r.waitStates("the question", "unknown", "idle", "working", "idle", "working", "blocked(input needed)")
	r.herdr.WaitFor(t, 2*time.Minute, "the question's toast", func() bool { return len(r.herdr.Notifications()) >= 1 })
	// Toasts go in order, one at a time: one for the cancelled run would
	// be before the question's, or merged into it ("+1 more").
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi needs your input" || strings.Contains(n[0].Body, "more") {
		t.Fatalf("notifications %+v, want only the question's", n)
	}
	quit(t, tm)
}

// The same without the probe (`wrap --no-probe`), Pi reporting on its
// status channel (PI_PROGRAM_STATUS=1): the channel says error for the
// cancelled retry, as for a run that failed; the session file says Pi left
// the failed reply out to retry it and no retry came, so the person, who
// pressed Escape, is not told it failed. Every finished run is told
// (finished_after 0s), so a cancelled run taken for a finished one would
// show too.
func TestWrapPiEscapeOnTheRetryCountdownIsSilentWithoutTheProbe(t *testing.T) {
	r := newPiRig(t, failOr(), true)
	r.retryAfter(10 * time.Minute) // the countdown outlasts any slow machine
	r.extra = append(r.extra, everyRun(t))
	tm, trace := r.wrapStatusChannelOnly()
	tm.Type(t, "FAIL please")
	r.submitted(tm)
	tm.WaitText(t, "Retrying (1/3)", time.Minute)
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Retry cancelled", time.Minute)
	// The run's end is told, or not, when its idle counts: a debounce
	// after Pi's error.
	awaitTracedRunEnd(t, trace, "program-status:error")

	tm.Type(t, "which file?")
	awaitToasts(t, r.herdr, "the question's toast", 1)
	quit(t, tm) // wrap drains its queued toasts before it exits
	// Toasts go in order, one at a time: one for the cancelled run would
	// be before the question's, or merged into it ("+1 more").
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi needs your input" || strings.Contains(n[0].Body, "more") {
		t.Fatalf("notifications %+v, want only the question's", n)
	}
	r.noGuidance()
}

// Retries that run out are a failure: "Retry failed after 3 attempts".
func TestWrapPiRetriesThatRunOutNotifyAnError(t *testing.T) {
	r := newPiRig(t, failOr(), true)
	r.retryAfter(50 * time.Millisecond)
	tm := r.wrap()
	tm.Type(t, "FAIL please")
	tm.WaitText(t, "Retry failed after 3 attempts", time.Minute)
	r.waitStates("the failed run", "unknown", "idle", "working", "idle")
	r.herdr.WaitFor(t, 2*time.Minute, "the error's toast", func() bool { return len(r.herdr.Notifications()) >= 1 })
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi stopped with an error" {
		t.Fatalf("notifications %+v, want the error's", n)
	}
	quit(t, tm)
}

// overflowOnce answers a prompt containing OVERFLOW, the first time, with
// the refusal of a context overflow, which Pi recovers from by compacting;
// the summary it then asks for is held for ever (until Escape cancels
// it). A question ("which file") is asked with the marker; anything else
// gets a long reply, to give Pi something to compact.
func overflowOnce() fakellm.Responder {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 300)
	var mu sync.Mutex
	overflowed, summary := false, false
	return func(req fakellm.Request) fakellm.Reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(req.LastUser(), "OVERFLOW") && !overflowed:
			overflowed = true
			return fakellm.Reply{Status: 400, Text: "This model's maximum context length is 32000 tokens. However, your messages resulted in 40000 tokens."}
		case overflowed && !summary: // the summary: held until Escape cancels it
			summary = true
			return fakellm.Reply{Hang: true}
		case strings.Contains(req.LastUser(), "which file"):
			return fakellm.Reply{Text: question + "\n" + session.Marker, WordDelay: 100 * time.Millisecond}
		}
		return fakellm.Reply{Text: long}
	}
}

// The same without the probe: the session file, which said the retry was
// pending during each countdown, says otherwise once the last attempt
// failed, within the debounce after Pi's error: told as a failure.
func TestWrapPiRetriesThatRunOutNotifyAnErrorWithoutTheProbe(t *testing.T) {
	r := newPiRig(t, failOr(), true)
	r.retryAfter(50 * time.Millisecond)
	tm, _ := r.wrapStatusChannelOnly()
	tm.Type(t, "FAIL please")
	r.submitted(tm)
	tm.WaitText(t, "Retry failed after 3 attempts", time.Minute)
	awaitToasts(t, r.herdr, "the error's toast", 1)
	quit(t, tm)
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi stopped with an error" {
		t.Fatalf("notifications %+v, want the error's", n)
	}
}

// Escape on the compaction Pi makes to recover from a context overflow
// ("Context overflow detected, Auto-compacting... (escape to cancel)")
// ends the run with the refused reply's stop reason, error: the person
// cancelled it and is not told it failed.
func TestWrapPiEscapeOnTheOverflowCompactionIsSilent(t *testing.T) {
	r := newPiRig(t, overflowOnce(), true)
	r.answerOnceWorking()
	// A small budget of recent tokens, so one long reply gives Pi
	// something to compact.
	r.setting("compaction", map[string]any{"enabled": true, "keepRecentTokens": 50})
	tm := r.wrap()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s", tm.Screen())
		}
	})
	tm.Type(t, "tell me more")
	r.waitStates("the first run", "unknown", "idle", "working", "idle")
	tm.Type(t, "OVERFLOW please")
	tm.WaitText(t, "Auto-compacting", time.Minute)
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Auto-compaction cancelled", time.Minute)
	r.waitStates("the cancelled compaction", "unknown", "idle", "working", "idle", "working", "idle")

	tm.Type(t, "which file?")
	r.waitStates("the question", "unknown", "idle", "working", "idle", "working", "idle", "working", "blocked(input needed)")
	r.herdr.WaitFor(t, 2*time.Minute, "the question's toast", func() bool { return len(r.herdr.Notifications()) >= 1 })
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title != "Pi needs your input" || strings.Contains(n[0].Body, "more") {
		t.Fatalf("notifications %+v, want only the question's", n)
	}
	quit(t, tm)
}

// The same without the probe: Pi's channel reports the cancelled
// compaction as idle, and the refused reply Pi left out before it compacts
// is no retry the person cancelled either way. Only the first run, which
// finished, and the question are told.
func TestWrapPiEscapeOnTheOverflowCompactionIsSilentWithoutTheProbe(t *testing.T) {
	r := newPiRig(t, overflowOnce(), true)
	r.setting("compaction", map[string]any{"enabled": true, "keepRecentTokens": 50})
	r.extra = append(r.extra, everyRun(t))
	tm, trace := r.wrapStatusChannelOnly()
	tm.Type(t, "tell me more")
	r.submitted(tm)
	awaitToasts(t, r.herdr, "the first run's toast", 1)
	tm.Type(t, "OVERFLOW please")
	tm.WaitText(t, "Auto-compacting", time.Minute)
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	tm.WaitText(t, "Auto-compaction cancelled", time.Minute)
	awaitTracedRunEnd(t, trace, "program-status:idle")
	tm.Type(t, "which file?")
	awaitToasts(t, r.herdr, "the question's toast", 2)
	quit(t, tm) // wrap drains its queued toasts before it exits
	if n := r.herdr.Notifications(); len(n) != 2 || n[0].Title != "Pi finished" || n[1].Title != "Pi needs your input" {
		t.Fatalf("notifications %+v, want the first run's and the question's", n)
	}
}

// A failed run's toast says why, as Pi said it, without the key Pi was
// refused with: a 401 Pi does not retry, then a 500 it retries until the
// retries run out. The model server words its 401 as OpenAI does, with
// the key it was given, masked but for its end.
func TestWrapPiErrorToastSaysWhy(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		switch u := req.LastUser(); {
		case strings.Contains(u, "AUTH"):
			key := strings.TrimPrefix(req.Auth, "Bearer ")
			return fakellm.Reply{Status: 401, Text: "Incorrect API key provided: sk-proj-****" + key[max(0, len(key)-4):] + ". You can find your API key at https://platform.openai.com/account/api-keys."}
		case strings.Contains(u, "BROKEN"):
			return fakellm.Reply{Status: 500, Text: "The server had an error while processing your request."}
		}
		return fakellm.Reply{Text: "ok"}
	}, true)
	r.answerOnceWorking()
	r.retryAfter(50 * time.Millisecond)
	tm := r.wrap()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nnotifications: %+v", tm.Screen(), r.herdr.Notifications())
		}
	})
	tm.Type(t, "AUTH please")
	r.waitStates("the refused run", "unknown", "idle", "working", "idle")
	r.herdr.WaitFor(t, 2*time.Minute, "the 401's toast", func() bool { return len(r.herdr.Notifications()) >= 1 })
	tm.Type(t, "BROKEN please")
	tm.WaitText(t, "Retry failed after 3 attempts", time.Minute)
	r.waitStates("the failed run", "unknown", "idle", "working", "idle", "working", "idle")
	r.herdr.WaitFor(t, 2*time.Minute, "the 500's toast", func() bool { return len(r.herdr.Notifications()) >= 2 })

	n := r.herdr.Notifications()
	project := " · " + filepath.Base(r.agent.Project)
	want := []string{
		"401 Unauthorized: Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/a…" + project,
		"500 Internal Server Error: The server had an error while processing your request." + project,
	}
	if len(n) != 2 {
		t.Fatalf("notifications %+v, want the two errors'", n)
	}
	for i, w := range want {
		if n[i].Title != "Pi stopped with an error" || n[i].Body != w {
			t.Errorf("toast %d: %q / %q, want %q / %q", i+1, n[i].Title, n[i].Body, "Pi stopped with an error", w)
		}
	}
	quit(t, tm)
}
