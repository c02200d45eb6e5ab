package e2e

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// These tests run a real Pi 1.6.0 under `herdr-pi wrap --no-probe`: its
// state comes from its screen, its session file and — the subject here —
// its own status reports (OSC 7501) in the output stream.

// The bytes Pi 1.6.0 writes on its status channel (pi-agent.md §10); a
// session without a name adds no msg.
const (
	piStatusQuery   = "\x1b]7501;?\x1b\\"
	piStatusWorking = "\x1b]7501;state=working:app=pi\x1b\\"
	piStatusDone    = "\x1b]7501;state=done:app=pi\x1b\\"
	piStatusReport  = "\x1b]7501;state="
)

// wrapStatusChannelOnly starts Pi under wrap without the probe and with
// PI_PROGRAM_STATUS=1, tracing to a file it returns: its status channel and
// the session file are all that tell its runs. A failed test logs the
// screen, the toasts and the traced transitions.
func (r *piRig) wrapStatusChannelOnly() (*pitest.Term, string) {
	r.t.Helper()
	trace := filepath.Join(r.t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS=1"})
	r.t.Cleanup(func() {
		if r.t.Failed() {
			r.t.Logf("screen:\n%s\nnotifications: %+v\ntransitions: %q", tm.Screen(), r.herdr.Notifications(), transitionCauses(r.t, trace))
		}
	})
	return tm, trace
}

// wrapNoProbe starts `herdr-pi wrap --no-probe pi args…` with a trace and
// waits for Pi's editor. Nothing tells when Pi takes input; prompts are
// typed with submitted.
func (r *piRig) wrapNoProbe(trace string, extraEnv []string, args ...string) *pitest.Term {
	r.t.Helper()
	r.extra = append(r.extra, "HERDR_PI_TRACE="+trace)
	argv := append([]string{r.hp, "wrap", "--no-probe", r.pi.Bin}, args...)
	tm := pitest.StartTerm(r.t, argv, r.env(extraEnv...), r.agent.Project, 40, 120)
	r.t.Cleanup(tm.Close)
	waitEditor(r.t, tm)
	return tm
}

// transitionCauses lists the trace's transitions as "to<-cause".
func transitionCauses(t *testing.T, trace string) []string {
	t.Helper()
	var out []string
	for _, e := range readTrace(t, trace) {
		if e.Kind == "transition" {
			out = append(out, e.To+"<-"+e.Cause)
		}
	}
	return out
}

// waitTraced is waitStates that says, when it fails, what the pane
// reported and why (the trace).
func (r *piRig) waitTraced(trace, what string, want ...string) {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); strings.Join(r.states(), " ") != strings.Join(want, " "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: reports\n got %q\nwant %q\ntransitions %q", what, r.states(), want, transitionCauses(r.t, trace))
		}
	}
}

func (r *piRig) noGuidance() {
	r.t.Helper()
	for _, req := range r.llm.Requests() {
		if strings.Contains(req.System(), "<herdr_integration>") {
			r.t.Fatal("the probe was in Pi; --no-probe should keep it out")
		}
	}
}

// Acceptance (issue 14): a Pi started with PI_PROGRAM_STATUS=1 and no probe
// still reports working, idle and blocked correctly — and its status
// reports decide: working and idle come from them at once (not from the
// screen after a debounce), the sentinel reply (which Pi reports as done)
// is blocked through the session file, and Pi's own dialog, which no
// screen rule sees, is blocked through them alone.
func TestWrapPiStatusChannelWithoutProbe(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		switch u := req.LastUser(); {
		case strings.Contains(u, "hello"):
			return fakellm.Reply{Text: "Hello! Nothing to do here, all is well today.", WordDelay: 100 * time.Millisecond}
		case strings.Contains(u, "ANSWER"):
			return fakellm.Reply{Text: "Editing main.go now. Done.", WordDelay: 100 * time.Millisecond}
		}
		return fakellm.Reply{Text: question + "\n" + session.Marker, WordDelay: 100 * time.Millisecond}
	}, true)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	ext, err := filepath.Abs("testdata/pistatus/confirm.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS=1"}, "-e", ext)
	r.waitTraced(trace, "the start", "unknown", "idle")

	// A turn: working, then idle.
	tm.Type(t, "hello")
	r.submitted(tm)
	r.waitTraced(trace, "the turn", "unknown", "idle", "working", "idle")

	// The sentinel: blocked.
	tm.Type(t, "which file?")
	r.waitTraced(trace, "the question", "unknown", "idle", "working", "idle", "working", "blocked(input needed)")
	r.herdr.WaitFor(t, 2*time.Minute, "a notification for the question", func() bool { return len(r.herdr.Notifications()) == 1 })
	tm.Type(t, "ANSWER: use main.go")
	r.waitTraced(trace, "the answer", "unknown", "idle", "working", "idle", "working", "blocked(input needed)", "working", "idle")

	// Pi's own dialog: blocked; Escape cancels it: idle.
	tm.Type(t, "/ask-confirm")
	tm.WaitText(t, "Deploy now?", 10*time.Second)
	r.waitTraced(trace, "the dialog", "unknown", "idle", "working", "idle", "working", "blocked(input needed)", "working", "idle",
		"blocked(waiting for your permission)")
	if err := tm.Send("\x1b"); err != nil {
		t.Fatal(err)
	}
	r.waitTraced(trace, "the dialog's end", "unknown", "idle", "working", "idle", "working", "blocked(input needed)", "working", "idle",
		"blocked(waiting for your permission)", "idle")
	r.noGuidance()
	// The dialog's title, from Pi's report, is what the person is asked
	// (without the probe the sentinel's question is not known). The toast
	// follows the report on its own goroutine, so it may land after the
	// dialog is gone: wait for it.
	r.herdr.WaitFor(t, 2*time.Minute, "a notification for the dialog", func() bool { return len(r.herdr.Notifications()) >= 2 })
	if n := r.herdr.Notifications(); len(n) != 2 || !strings.HasPrefix(n[1].Body, "Deploy now? · ") {
		t.Fatalf("notifications %+v, want the question's and the dialog's", n)
	}

	// The first idle comes from the screen when Pi takes longer to start
	// than the startup grace, else from Pi's first report. The answer
	// reaches the session file and Pi's report that it works on it at the
	// same moment: the question closes on whichever comes second, straight
	// to working either way.
	want := []string{
		"idle<-program-status:idle",
		"working<-program-status:working", "idle<-program-status:done",
		"working<-program-status:working", "blocked<-open:sentinel",
		"working<-answered:sentinel", "idle<-program-status:done",
		"blocked<-program-status:blocked", "idle<-program-status:done",
	}
	got := transitionCauses(t, trace)
	if len(got) > 0 && got[0] == "idle<-screen" {
		want[0] = got[0]
	}
	if len(got) > 5 && got[5] == "working<-program-status:working" {
		want[5] = got[5]
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("transitions\n got %q\nwant %q", got, want)
	}
	// Every report reached the outer terminal as Pi wrote it.
	raw := tm.Raw()
	if bytes.Count(raw, []byte(piStatusWorking)) != 3 || !bytes.Contains(raw, []byte("\x1b]7501;state=idle:app=pi\x1b\\")) || bytes.Count(raw, []byte(piStatusDone)) < 3 ||
		!bytes.Contains(raw, []byte("\x1b]7501;state=blocked:app=pi:kind=permission:msg=RGVwbG95IG5vdz8=\x1b\\")) {
		t.Fatalf("the outer terminal did not get Pi's reports:\n%q", statusSequences(raw))
	}
	quit(t, tm)
}

// Without PI_PROGRAM_STATUS, Pi asks the terminal whether it takes status
// reports. wrap passes the query to the outer terminal and answers nothing
// itself: a terminal that stays silent gets no reports, even after a whole
// turn (the screen decides then). Once the outer terminal answers, the
// answer passes to Pi, which reports from then on, and wrap reads the
// reports on their way out.
func TestWrapPassesPiStatusQueryThrough(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "Hello! Nothing to do here, all is well today.", WordDelay: 100 * time.Millisecond}), true)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tm := r.wrapNoProbe(trace, []string{"PI_PROGRAM_STATUS="})
	if raw := tm.Raw(); bytes.Count(raw, []byte(piStatusQuery)) != 1 {
		t.Fatalf("the outer terminal did not get Pi's query once:\n%q", statusSequences(raw))
	}
	tm.Type(t, "hello")
	r.submitted(tm)
	tm.WaitText(t, "all is well today.", 20*time.Second)
	r.herdr.WaitFor(t, 2*time.Minute, "idle after the turn", func() bool {
		st := r.states()
		return len(st) > 1 && st[len(st)-1] == "idle"
	})
	if raw := tm.Raw(); bytes.Contains(raw, []byte(piStatusReport)) {
		t.Fatalf("Pi reported to a terminal that never answered its query:\n%q", statusSequences(raw))
	}
	for _, c := range transitionCauses(t, trace) {
		if strings.Contains(c, "program-status") {
			t.Fatalf("a transition from the status channel before it spoke: %q", c)
		}
	}

	// The outer terminal answers: Pi reports what it rests at (done), then
	// the next turn.
	if err := tm.Send(piStatusQuery); err != nil {
		t.Fatal(err)
	}
	tm.WaitFor(t, "Pi's first report", 10*time.Second, func(string) bool { return bytes.Contains(tm.Raw(), []byte(piStatusDone)) })
	n := len(transitionCauses(t, trace))
	tm.Type(t, "hello again")
	r.herdr.WaitFor(t, 2*time.Minute, "the second turn, from Pi's reports", func() bool {
		got := transitionCauses(t, trace)
		return strings.Join(got[n:], " ") == "working<-program-status:working idle<-program-status:done"
	})
	if raw := tm.Raw(); bytes.Count(raw, []byte(piStatusWorking)) != 1 || bytes.Count(raw, []byte(piStatusDone)) != 2 {
		t.Fatalf("the outer terminal did not get Pi's reports:\n%q", statusSequences(raw))
	}
	quit(t, tm)
	// The resume line keeps --no-probe.
	if line := "herdr-pi wrap --no-probe " + r.pi.Bin + " --session " + r.sessionID(); !bytes.Contains(tm.Raw(), []byte(line)) {
		t.Fatalf("no resume line %q:\n%s", line, tm.Screen())
	}
}

// statusSequences picks the OSC 7501 sequences out of raw output, for
// failure messages.
func statusSequences(raw []byte) []string {
	var out []string
	for _, part := range bytes.Split(raw, []byte("\x1b]7501;"))[1:] {
		end := bytes.Index(part, []byte("\x1b\\"))
		if end < 0 || end > 200 {
			end = min(len(part), 40)
		}
		out = append(out, string(part[:end]))
	}
	return out
}
