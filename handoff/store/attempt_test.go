package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Selector
		err  string
	}{
		{"api", Selector{"api", 0}, ""},
		{"api#2", Selector{"api", 2}, ""},
		{"api#02", Selector{"api", 2}, ""},
		{"3", Selector{"3", 0}, ""},
		{"3#1", Selector{"3", 1}, ""},
		{"run:3#1", Selector{"run:3", 1}, ""},
		{"fix #12 now", Selector{"fix #12 now", 0}, ""}, // '#' inside a label
		{"issue#7#2", Selector{"issue#7", 2}, ""},
		{"api#x", Selector{"api#x", 0}, ""},
		{"api#-x", Selector{"api#-x", 0}, ""},
		{"api#", Selector{}, "no attempt number after #"},
		{"api#-1", Selector{}, "attempt numbers start at 1"},
		{"api#-0", Selector{}, "attempt numbers start at 1"},
		{"", Selector{}, "empty"},
		{"  ", Selector{}, "empty"},
		{"#2", Selector{}, "no agent before #2"},
		{"api#0", Selector{}, "attempt numbers start at 1"},
		{"api#99999999999999999999", Selector{}, "too large"},
	} {
		got, err := ParseSelector(tc.text)
		if tc.err != "" {
			var se *SelectorError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want a SelectorError saying %q", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
}

func reviewStore(t *testing.T) (*home, *Run) {
	t.Helper()
	h := newHome(t)
	h.run(h.cwd, "3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44", strings.ReplaceAll(reviewRun, "%CWD%", h.cwd), time.Minute)
	h.write(filepath.Join(h.cwd, "api-1.jsonl"), piHeader, 0)
	h.write(filepath.Join(h.cwd, "api-2.jsonl"), piHeader, 0)
	r, err := h.store().FindRun("3f0c9a2e")
	if err != nil {
		t.Fatal(err)
	}
	return h, r
}

func TestPickMatchesNameLabelNumberAndID(t *testing.T) {
	_, r := reviewStore(t)
	for _, tc := range []struct{ sel, want string }{
		{"api", "api#2"}, // latest by default, whatever the record order
		{"api#1", "api#1"},
		{"api-label", "api#2"},
		{"api-label#1", "api#1"},
		{"3", "api#2"},
		{"3#1", "api#1"},
		{"3f0c9a2e-5b7d-4a51-9a8e-0d6f2c1b7e44:3#1", "api#1"},
		{"docs", "docs#1"},
		{"4", "docs#1"},
	} {
		a, err := r.PickText(tc.sel)
		if err != nil {
			t.Errorf("%s: %v", tc.sel, err)
			continue
		}
		if a.Name() != tc.want {
			t.Errorf("%s: picked %s, want %s", tc.sel, a.Name(), tc.want)
		}
	}
}

func TestPickErrorsNameTheWayOut(t *testing.T) {
	_, r := reviewStore(t)
	for _, tc := range []struct {
		sel, want string
		as        any
	}{
		{"lint#1", `run 3f0c9a2e: agent "lint" has no attempt #1 (attempts: api#1, api#2, docs#1)`, new(*NoAttemptError)},
		{"typo", `run 3f0c9a2e: no attempt named "typo" (attempts: api#1, api#2, docs#1)`, new(*NoAttemptError)},
		{"api#3", `run 3f0c9a2e: agent "api" has no attempt #3 (attempts: api#1, api#2, docs#1)`, new(*NoAttemptError)},
		{"lint", `run 3f0c9a2e: agent "lint" has not started an attempt yet (attempts: api#1, api#2, docs#1)`, new(*NoAttemptError)},
		{"9", `run 3f0c9a2e: no attempt named "9" (attempts: api#1, api#2, docs#1)`, new(*NoAttemptError)},
	} {
		_, err := r.PickText(tc.sel)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.sel, err, tc.want)
		}
		if !errors.As(err, tc.as) {
			t.Errorf("%s: %T is not %T", tc.sel, err, tc.as)
		}
	}
}

// Names come from whatever wrote the store: one with terminal controls or
// a bidi override is listed quoted, escapes written out, and the others as
// they are.
func TestPickErrorsQuoteUnprintableNames(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "evil", `{"id":"evil","workflowName":"w","state":"running","agents":[
		{"id":"evil:1","name":"a\u001b]0;PWNED\u0007\u009b1m\u202eb","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]},
		{"id":"evil:2","name":"docs","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]}]}`, 0)
	r, err := h.store().FindRun("evil")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.PickText("nobody")
	want := `run evil: no attempt named "nobody" (attempts: "a\x1b]0;PWNED\a\u009b1m\u202eb#1", docs#1)`
	if err == nil || err.Error() != want {
		t.Fatalf("\n got %v\nwant %s", err, want)
	}
}

func TestPickRefusesAnAmbiguousName(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "loop", `{"id":"loop","workflowName":"w","state":"running","agents":[
		{"id":"loop:1","name":"developer","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]},
		{"id":"loop:2","name":"developer","state":"completed","attemptDetails":[{"attempt":1,"setup":{}}]}]}`, 0)
	r, err := h.store().FindRun("loop")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.PickText("developer")
	var ae *AmbiguousAgentError
	if !errors.As(err, &ae) || err.Error() != `run loop: "developer" names 2 agents (loop:1, loop:2); pick one by its id or number` {
		t.Fatalf("%v", err)
	}
	if a, err := r.PickText("2"); err != nil || a.Agent.ID != "loop:2" {
		t.Fatalf("by number: %v %v", a, err)
	}
}

func TestAttemptFacts(t *testing.T) {
	h, r := reviewStore(t)
	pick := func(sel string) *Attempt {
		a, err := r.PickText(sel)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	api1, api2, docs := pick("api#1"), pick("api#2"), pick("docs")

	if m := api2.Model(); m != "openai/gpt-5:high" {
		t.Errorf("api#2 model %q", m)
	}
	if m := api1.Model(); m != "openai/gpt-5" {
		t.Errorf("api#1 model %q (no thinking recorded)", m)
	}
	// api#2's worktree is gone: the run's cwd stands in.
	if cwd, err := api2.Cwd(); err != nil || cwd != h.cwd {
		t.Errorf("api#2 cwd %q, %v; want the run's %s", cwd, err, h.cwd)
	}
	if p, err := api1.SessionFile(); err != nil || p != filepath.Join(h.cwd, "api-1.jsonl") {
		t.Errorf("api#1 session %q, %v", p, err)
	}
	_, err := docs.SessionFile()
	var se *SessionFileError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "missing.jsonl does not exist any more: the attempt has ended") ||
		!strings.HasPrefix(err.Error(), "run 3f0c9a2e: attempt docs#1: session file ") {
		t.Errorf("missing session file: %v", err)
	}
	// api#1 failed and was retried: settled though its agent runs; api#2
	// runs; docs completed.
	if !api1.Settled() || api2.Settled() || !docs.Settled() {
		t.Errorf("settled: api#1 %v api#2 %v docs %v", api1.Settled(), api2.Settled(), docs.Settled())
	}
	// No owner.json: nothing is live, the running attempt's owner is gone.
	if live, lease, err := api2.Live(); live || lease != nil || err != nil {
		t.Errorf("api#2 without a lease: live %v lease %v err %v", live, lease, err)
	}
	if gone, _ := api2.OwnerGone(); !gone {
		t.Error("api#2's owner should be gone")
	}
	if gone, _ := api1.OwnerGone(); gone {
		t.Error("a settled attempt has no owner to lose")
	}

	// Both cwds gone.
	if err := os.RemoveAll(h.cwd); err != nil {
		t.Fatal(err)
	}
	_, err = api2.Cwd()
	var ce *NoCwdError
	if !errors.As(err, &ce) || err.Error() != "run 3f0c9a2e: attempt api#2: no working directory left (tried "+h.cwd+"/gone-worktree, "+h.cwd+"); restore one of them to open it" {
		t.Errorf("no cwd: %v", err)
	}
}

func TestSessionFileRecordsNone(t *testing.T) {
	h := newHome(t)
	h.run(h.cwd, "r1", `{"id":"r1","workflowName":"w","state":"running","agents":[
		{"id":"r1:1","name":"early","state":"failed","attemptDetails":[{"attempt":1,"setup":{}}]},
		{"id":"r1:2","name":"nolocator","state":"failed","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"x"},"setup":{}}]},
		{"id":"r1:3","name":"dir","state":"failed","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"x","locator":{"sessionFile":"`+h.cwd+`"}},"setup":{}}]},
		{"id":"r1:4","name":"relative","state":"failed","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"x","locator":{"sessionFile":"s.jsonl"}},"setup":{}}]}]}`, 0)
	r, err := h.store().FindRun("r1")
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{
		"early":     "run r1: attempt early#1 records no session file (it never started a session); pick another attempt from `herdr-pi open --list r1`",
		"nolocator": "run r1: attempt nolocator#1 records no session file (the engine wrote none for it); pick another attempt from `herdr-pi open --list r1`",
		"dir":       "run r1: attempt dir#1: session file " + h.cwd + " is not a regular file; pick another attempt from `herdr-pi open --list r1`",
		"relative":  "run r1: attempt relative#1: session file s.jsonl is not an absolute path, so it cannot be found; pick another attempt from `herdr-pi open --list r1`",
	} {
		a, err := r.PickText(sel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.SessionFile(); err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", sel, err, want)
		}
	}
}

// piHeader is the first line of every transcript Pi writes.
const piHeader = `{"type":"session","version":3,"id":"01a2462e-c525-766d-a09e-17354accd7c9","timestamp":"2026-12-05T12:29:59.973Z","cwd":"/src/api"}` + "\n"

// TestSessionFileForkable: a transcript Pi's fork refuses (no line that
// parses, or a first entry that is not the session header) is refused
// here, naming the file, so that open says it before Herdr hears anything;
// one Pi forks (a cut last line, garbled or blank lines before the header)
// is taken.
func TestSessionFileForkable(t *testing.T) {
	const (
		empty    = "is empty or holds no JSON line, so Pi cannot fork it (a transcript cut short, or not Pi's)"
		noHeader = `does not start with Pi's session header (a line {"type":"session","id":…}), so Pi cannot fork it`
	)
	for name, tc := range map[string]struct{ text, problem string }{
		"header":              {piHeader, ""},
		"cut after header":    {piHeader + `{"type":"mess`, ""},
		"no newline":          {strings.TrimSuffix(piHeader, "\n"), ""},
		"garbled then header": {"garbage\n\n  \nnull\n0\nfalse\n\"\"\n" + piHeader, ""},
		"empty":               {"", empty},
		"blank lines":         {"\n\n", empty},
		"cut in header":       {piHeader[:40], empty},
		"message first":       {`{"type":"message","id":"a1"}` + "\n" + piHeader, noHeader},
		"header without id":   {`{"type":"session","version":3}` + "\n", noHeader},
		"numeric id":          {`{"type":"session","id":7}` + "\n", noHeader},
		"an array":            {"[1]\n" + piHeader, noHeader},
		"a string":            {`"session"` + "\n", noHeader},
		// Both Pis parse a number past float64's range (Infinity): a
		// header holding one is a header, and one alone is an entry.
		"huge number in header": {`{"type":"session","id":"x","n":1e400}` + "\n", ""},
		"huge number first":     {"1e400\n" + piHeader, noHeader},
		// Pi 0.73.1 trims the whole text before it splits it into lines
		// (a byte order mark and other leading Unicode space go) and
		// forks it; Pi 1.6.0 does not: left to the Pi that runs.
		"byte order mark":            {"\ufeff" + piHeader, ""},
		"space then byte order mark": {"\n\u00a0\n\ufeff\u3000" + piHeader, ""},
		// Pi 1.6.0 skips the marked line and forks; 0.73.1 takes a
		// message first and refuses: left to the Pi that runs.
		"byte order mark then no header": {"\ufeff" + `{"type":"message","id":"a1"}` + "\n" + piHeader, ""},
		"byte order mark, then null":     {"\ufeffnull\n" + `{"type":"message","id":"a1"}` + "\n" + piHeader, noHeader},
		"space inside, not leading":      {piHeader[:1] + "\ufeff" + piHeader[1:], empty},
	} {
		h := newHome(t)
		file := filepath.Join(h.cwd, "s.jsonl")
		h.write(file, tc.text, 0)
		h.run(h.cwd, "r1", `{"id":"r1","workflowName":"w","state":"completed","agents":[
			{"id":"r1:1","name":"api","state":"completed","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"x","locator":{"sessionFile":"`+file+`"}},"setup":{}}]}]}`, 0)
		r, err := h.store().FindRun("r1")
		if err != nil {
			t.Fatal(err)
		}
		a, err := r.PickText("api")
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.SessionFile()
		want := ""
		if tc.problem != "" {
			want = "run r1: attempt api#1: session file " + file + " " + tc.problem + "; pick another attempt from `herdr-pi open --list r1`"
		}
		var se *SessionFileError
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && (got != want || !errors.As(err, &se))) {
			t.Errorf("%s: %q:\n got %v\nwant %q", name, tc.text, err, want)
		}
	}
}

// A header line longer than the scan reads is left to Pi, not refused.
func TestSessionFileLongFirstLine(t *testing.T) {
	long := `{"type":"session","id":"x","pad":"` + strings.Repeat("a", headerScanLimit) + `"}` + "\n"
	if p := forkHeaderProblem(strings.NewReader(long)); p != "" {
		t.Errorf("a long header: %s", p)
	}
	if p := forkHeaderProblem(strings.NewReader(strings.Repeat("x\n", headerScanLimit))); p != "" {
		t.Errorf("a MiB of garbled lines: %s", p)
	}
}

// TestLiveWithABrokenLease: a corrupt owner.json blocks the judgement of a
// running attempt (the error names the file), never a settled one.
func TestLiveWithABrokenLease(t *testing.T) {
	h, r := reviewStore(t)
	h.write(filepath.Join(r.RunsDir, LeaseFile), `{"pid":"12"}`, 0)
	r, err := h.store().FindRun(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := r.PickText("docs")
	if live, _, err := docs.Live(); live || err != nil {
		t.Errorf("settled docs#1: live %v, %v", live, err)
	}
	api, _ := r.PickText("api")
	_, _, err = api.Live()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(r.RunsDir, LeaseFile) || !strings.Contains(err.Error(), `invalid owner lease (pid "12" is not a positive integer)`) {
		t.Errorf("running api#2: %v", err)
	}
}

// TestSettledByRunState: an agent left "running" in a run that is over
// (completed, failed, stopped) runs no more; in a paused or interrupted
// run it may resume, so it is not settled (whether it is live is the
// lease's to say, and an interrupted run's never is: see
// TestAnAttemptOfAnInterruptedRunIsNotLive).
func TestSettledByRunState(t *testing.T) {
	for state, want := range map[string]bool{"completed": true, "failed": true, "stopped": true, "running": false, "interrupted": false, "paused": false} {
		rec, err := DecodeRun([]byte(`{"id":"r","workflowName":"w","state":"` + state + `","agents":[{"id":"r:1","name":"a","state":"running","attemptDetails":[{"attempt":1,"setup":{}}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		a, err := (&Run{ID: "r", Record: rec}).PickText("a")
		if err != nil {
			t.Fatal(err)
		}
		if a.Settled() != want {
			t.Errorf("run %s: settled %v, want %v", state, a.Settled(), want)
		}
	}
}

// A transcript you may not read: the error says how to make it readable
// (or which directory to open), not only to pick another attempt, which
// is no way to the one asked for.
func TestSessionFileUnreadableSaysTheFix(t *testing.T) {
	h := newHome(t)
	file := filepath.Join(h.cwd, "s.jsonl")
	h.write(file, piHeader, 0)
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(h.cwd, "r1", `{"id":"r1","workflowName":"w","state":"completed","agents":[
		{"id":"r1:1","name":"api","state":"completed","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"x","locator":{"sessionFile":"`+file+`"}},"setup":{}}]}]}`, 0)
	r, err := h.store().FindRun("r1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.PickText("api")
	if err != nil {
		t.Fatal(err)
	}
	h.openDirs()
	testenv.AsUnprivileged(t, file, func() { _, err = a.SessionFile() })
	if err == nil || !strings.Contains(err.Error(), "session file "+file+" cannot be read: permission denied; make it readable by the user running herdr-pi") ||
		!strings.Contains(err.Error(), "chmod u+r") {
		t.Fatalf("SessionFile: %v\nwant the way to make it readable", err)
	}
	// A shut directory on the way is named instead.
	if err := os.Chmod(h.cwd, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(h.cwd, 0o700) })
	testenv.AsUnprivileged(t, file, func() { _, err = a.SessionFile() })
	if err == nil || !strings.Contains(err.Error(), "the directory "+h.cwd+" cannot be entered") {
		t.Fatalf("SessionFile: %v\nwant %s named", err, h.cwd)
	}
}

// A missing transcript means different things by the attempt's state: a
// running one has not had its first reply yet (Pi writes the file then),
// while one that has ended had its file written unless it ended before any
// reply, and has most likely had it moved or removed since (a cleaned
// sessions directory). One that nothing runs any more although it never
// ended (its owner Pi was killed, or its run is interrupted) gets no reply
// either: its file is not on its way. Telling the person to wait for a
// reply that came long ago, or that nothing will bring, sends them the
// wrong way.
func TestMissingSessionFileIsSaidByTheAttemptsState(t *testing.T) {
	for _, tc := range []struct {
		sel   string
		owned bool // the run's owner Pi is alive (this test process)
		want  string
	}{
		// docs completed: its transcript was written and is gone now.
		{"docs", false, "missing.jsonl does not exist any more: the attempt has ended, so it was moved or removed since (unless it ended before its first reply)"},
		{"docs", true, "missing.jsonl does not exist any more: the attempt has ended, so it was moved or removed since (unless it ended before its first reply)"},
		// api#2 runs in a live owner: nothing written yet.
		{"api#2", true, "api-2.jsonl does not exist: Pi writes it only after the agent's first reply"},
		// api#2's owner is gone: no reply is coming.
		{"api#2", false, "api-2.jsonl does not exist: Pi writes it only after the agent's first reply, and nothing runs the attempt now (its owner Pi is gone, or its run is interrupted)"},
	} {
		h, r := reviewStore(t)
		if err := os.Remove(filepath.Join(h.cwd, "api-2.jsonl")); err != nil {
			t.Fatal(err)
		}
		if tc.owned {
			writeSelfLease(t, h, r.RunsDir)
		}
		a, err := r.PickText(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.SessionFile()
		var se *SessionFileError
		if !errors.As(err, &se) || !strings.HasSuffix(err.Error(), tc.want+"; pick another attempt from `herdr-pi open --list 3f0c9a2e`") {
			t.Errorf("%s (owner alive: %v): %v\nwant it to end %q", tc.sel, tc.owned, err, tc.want)
		}
	}
}
