package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// These tests run the whole product: a real Pi from npm under the real
// `herdr-pi wrap`, in a real pty, against the Go fake model server and the
// strict fake Herdr. They skip when Pi is not installed (.ci/install-pi).

const question = "Which file should I edit?"

// piRig is one wrapped-Pi setup.
type piRig struct {
	t       *testing.T
	pi      pitest.Pi
	llm     *fakellm.Server
	respond fakellm.Responder // the model's answers, before any gate
	agent   *pitest.Agent
	herdr   *herdrtest.Server // nil outside Herdr
	hp      string
	private string   // XDG_STATE_HOME and XDG_RUNTIME_DIR
	extra   []string // more environment for wrap
}

func newPiRig(t *testing.T, respond fakellm.Responder, inHerdr bool) *piRig {
	t.Helper()
	pi := pitest.Current(t)
	hp, err := exec.LookPath("herdr-pi")
	if err != nil {
		t.Fatal(err)
	}
	r := &piRig{t: t, pi: pi, hp: hp, llm: fakellm.Start(respond), respond: respond}
	t.Cleanup(r.llm.Close)
	r.agent = pitest.NewAgent(t, pi, r.llm.BaseURL())
	if inHerdr {
		r.herdr = herdrtest.Start(t)
	}
	r.private, err = os.MkdirTemp("", "hpe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(r.private) })
	return r
}

func (r *piRig) env(extra ...string) []string {
	env := r.agent.With(append([]string{"XDG_STATE_HOME=" + r.private, "XDG_RUNTIME_DIR=" + r.private, "HERDR_PI_LOG=debug"}, r.extra...)...)
	if r.herdr != nil {
		env = append(env, r.herdr.Env()...)
	}
	return append(env, extra...)
}

// wrap starts `herdr-pi wrap pi args…` under a 40x120 pty.
func (r *piRig) wrap(args ...string) *pitest.Term {
	argv := append([]string{r.hp, "wrap", r.pi.Bin}, args...)
	starts := r.sessionStarts()
	tm := pitest.StartTerm(r.t, argv, r.env(), r.agent.Project, 40, 120)
	r.t.Cleanup(tm.Close)
	// Pi draws its editor between two full-width rules before its start-up
	// is over, and answers a prompt typed then with "Startup is still in
	// progress": it takes input once the probe heard session_start (the
	// wrapper's log says so).
	tm.WaitFor(r.t, "Pi's editor", 30*time.Second, func(s string) bool {
		return strings.Count(s, strings.Repeat("─", 100)) >= 2
	})
	deadline := time.Now().Add(30 * time.Second)
	for r.sessionStarts() == starts {
		if time.Now().After(deadline) {
			r.t.Fatalf("the probe never heard session_start:\n%s", tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tm
}

// submitted makes sure a prompt typed into a Pi without the probe reached
// the model: Pi keeps a prompt submitted before its start-up is over in
// the editor ("Startup is still in progress"), so Enter is pressed again
// until the model is asked. Nothing but the model's request says Pi took
// it (no probe tells when Pi is ready).
func (r *piRig) submitted(tm *pitest.Term) {
	r.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); len(r.llm.Requests()) == 0; {
		if time.Now().After(deadline) {
			r.t.Fatalf("the prompt never reached the model:\n%s", tm.Screen())
		}
		if strings.Contains(tm.Screen(), "Startup is still in progress") {
			if err := tm.Send("\r"); err != nil {
				r.t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sessionStarts counts the session_start lines in the wrappers' log.
func (r *piRig) sessionStarts() int {
	b, _ := os.ReadFile(filepath.Join(r.private, "herdr-pi", "herdr-pi.log"))
	return strings.Count(string(b), "probe: session_start (")
}

// states lists the pane's accepted reports, "state" or "state(message)".
func (r *piRig) states() []string {
	var out []string
	for _, c := range r.herdr.Reports(r.herdr.PaneID()) {
		if !c.Accepted {
			continue
		}
		s := c.State
		if c.Message != "" {
			s += "(" + c.Message + ")"
		}
		out = append(out, s)
	}
	return out
}

// answerOnceWorking holds each of the model's answers until Herdr's
// newest accepted report for the pane is "working" (untilWorking). Only
// for tests where the pane reads working whenever Pi asks the model (no
// wait, ask or dialog open then, no other Pi on the same model).
func (r *piRig) answerOnceWorking() {
	r.llm.SetResponder(func(req fakellm.Request) fakellm.Reply { return r.untilWorking(r.respond(req)) })
}

// untilWorking holds reply until Herdr's newest accepted report for the
// pane is "working". The reporter sends one report per 100 ms at most, and
// then only the newest state, so a run that starts and ends within that
// gap after the report before it reaches Herdr as its end alone (a fake
// model answers in a few ms): held here, the run lasts until Herdr has
// shown it, on any machine.
func (r *piRig) untilWorking(reply fakellm.Reply) fakellm.Reply {
	return untilLastWorking(r.states, reply)
}

// untilLastWorking holds reply until the newest of states is "working".
func untilLastWorking(states func() []string, reply fakellm.Reply) fakellm.Reply {
	reply.Until = func() bool {
		s := states()
		return len(s) > 0 && s[len(s)-1] == "working"
	}
	return reply
}

// waitStates waits until the accepted reports are exactly want. Reports
// only ever append, so once they stop being a beginning of want the wait
// is over: it fails at once and says what was reported instead.
func (r *piRig) waitStates(what string, want ...string) {
	r.t.Helper()
	r.waitStatesOf(what, r.states, want)
}

// waitRestart is waitStates for a wrapper started on a session file, want
// following the claim's "unknown": what the file restores can be known
// before that first report goes out, and the reporter sends only the
// latest state, so Herdr may never see the unknown.
func (r *piRig) waitRestart(what string, want ...string) {
	r.t.Helper()
	r.waitStatesOf(what, func() []string {
		got := r.states()
		if len(got) > 0 && got[0] == "unknown" {
			got = got[1:]
		}
		return got
	}, want)
}

func (r *piRig) waitStatesOf(what string, states func() []string, want []string) {
	r.t.Helper()
	wanted := strings.Join(want, " ")
	var got string
	diverged := false
	r.herdr.Await(2*time.Minute, func() bool {
		got = strings.Join(states(), " ")
		diverged = !strings.HasPrefix(wanted, got)
		return got == wanted || diverged
	})
	if got != wanted {
		r.t.Fatalf("%s: reports %q, want %q (diverged: %v); requests: %s\n%s", what, got, wanted, diverged, strings.Join(r.herdr.Methods(), " "), r.logTail())
	}
}

// logTail is the end of the wrappers' log, for a failure to say what the
// wrapper heard and decided: a state that never came is otherwise a
// silence.
func (r *piRig) logTail() string {
	b, _ := os.ReadFile(filepath.Join(r.private, "herdr-pi", "herdr-pi.log"))
	const most = 12 << 10
	if len(b) > most {
		b = b[len(b)-most:]
	}
	return "herdr-pi.log (its end):\n" + string(b)
}

func (r *piRig) herdrPi(args ...string) (string, error) {
	cmd := exec.Command(r.hp, args...)
	cmd.Env = r.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func quit(t *testing.T, tm *pitest.Term) {
	t.Helper()
	tm.Type(t, "/quit")
	var code int
	var err error
	for try := 0; try < 4; try++ {
		if code, err = tm.ExitCode(15 * time.Second); err == nil {
			break
		}
		// Pi opens its command suggestions a moment after "/quit" is
		// typed; an Enter that lands just then picks the suggestion
		// instead of sending it, and "/quit" stays in the editor (seen
		// once in four starts on a busy machine). Enter again sends it.
		if strings.Contains(tm.Screen(), "/quit") {
			_ = tm.Send("\r")
		}
	}
	if err != nil || code != 0 {
		t.Fatalf("/quit: exit %d, %v\n%s", code, err, tm.Screen())
	}
}

// markerVisible: any line shows the marker or, as its whole text, a
// beginning of it (":", ":input", …).
func markerVisible(screen string) bool {
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, session.Marker) || l != "" && strings.HasPrefix(session.Marker, l) {
			return true
		}
	}
	return false
}

// answerOr replies to "ANSWER…" without the marker, else asks the
// question, streaming the marker in pieces so every beginning of it is on
// its way to the screen at some point.
func answerOr() fakellm.Responder {
	return func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "ANSWER") {
			return fakellm.Reply{Text: "Editing main.go now. Done.", WordDelay: 80 * time.Millisecond}
		}
		return fakellm.Reply{
			Chunks:    []string{"Which ", "file ", "should ", "I ", "edit?\n", ":", "input", "_need", "ed", ":"},
			WordDelay: 120 * time.Millisecond,
		}
	}
}

// A reply ending with the marker turns the pane blocked ("input needed"),
// the marker never shows on Pi's screen, the session file keeps it;
// answering turns it working, then idle, and nothing stale is left.
func TestWrapPiSentinelBlocksAndAnswerClears(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	// A named session: its toasts end with the name, as pi-notify's do.
	tm.Type(t, "/name auth refactor")
	tm.WaitText(t, "auth refactor", 15*time.Second)

	tm.Type(t, "hello")
	samples := 0
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(strings.Join(r.states(), " "), "blocked"); samples++ {
		if s := tm.Screen(); markerVisible(s) {
			t.Fatalf("the marker (or a beginning of it) is on screen:\n%s", s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("never blocked; reports %q\n%s", r.states(), tm.Screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tm.WaitText(t, question, 5*time.Second)
	time.Sleep(400 * time.Millisecond)
	if s := tm.Screen(); markerVisible(s) {
		t.Fatalf("the marker is on screen after the reply:\n%s", s)
	}
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	t.Logf("%d screen samples while streaming, none showed the marker", samples)
	files := r.agent.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Contains(b, []byte(`edit?\n:input_needed:"`)) {
		t.Fatalf("the stored session lost the marker:\n%s", b)
	}
	// The toast follows the report on its own goroutine.
	r.herdr.WaitFor(t, 2*time.Minute, "the toast", func() bool { return len(r.herdr.Notifications()) >= 1 })
	if n := r.herdr.Notifications(); len(n) != 1 || n[0].Title == "" || !strings.HasSuffix(n[0].Body, " · auth refactor") {
		t.Fatalf("notifications %+v, want one for the blocked pane, naming its session", n)
	}

	tm.Type(t, "ANSWER: use main.go")
	r.waitStates("the answer", "unknown", "idle", "working", "blocked(input needed)", "working", "idle")
	tm.WaitText(t, "Done.", 5*time.Second)
	time.Sleep(500 * time.Millisecond)
	if got := r.states(); got[len(got)-1] != "idle" {
		t.Fatalf("stale state after the answer: %q", got)
	}
	quit(t, tm)
	r.herdr.WaitFor(t, 2*time.Minute, "the release", func() bool { return len(r.herdr.Releases(r.herdr.PaneID())) == 1 })
	reps, rel := r.herdr.Reports(r.herdr.PaneID()), r.herdr.Releases(r.herdr.PaneID())
	if rel[0].Seq <= reps[len(reps)-1].Seq || !rel[0].Accepted {
		t.Fatalf("release seq %d not above the last report's %d", rel[0].Seq, reps[len(reps)-1].Seq)
	}
}

// Issue 10: /reload while blocked. Pi shuts the session down and, about
// 100 ms later, starts it again with the question restored: the pane stays
// blocked without a blip of idle — in the state machine (the trace) and in
// the reports — and the only toast is the first one, which says the
// question.
func TestWrapPiReloadWhileBlockedReportsNothing(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	r.herdr.SetDelivery("herdr")
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	r.extra = []string{"HERDR_PI_TRACE=" + trace}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(trace)
			t.Logf("the wrapper's trace:\n%s", b)
		}
	})
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	tm.Type(t, "/reload")
	tm.WaitText(t, "Reloaded", 15*time.Second)
	// Reports are delivered in order: any report the reloads caused comes
	// before the answer's.
	tm.Type(t, "ANSWER: use main.go")
	r.waitStates("the answer", "unknown", "idle", "working", "blocked(input needed)", "working", "idle")
	var transitions []string
	for _, e := range readTrace(t, trace) {
		if e.Kind == "transition" {
			transitions = append(transitions, e.To)
		}
	}
	if got := strings.Join(transitions, " "); got != "idle working blocked working idle" {
		t.Errorf("state transitions %q: the reload changed the state", got)
	}
	quit(t, tm) // wrap drains its queued toasts before it exits
	notes := r.herdr.Notifications()
	if len(notes) != 1 || notes[0].Title != "Pi needs your input" || !strings.HasPrefix(notes[0].Body, question+" · ") {
		t.Fatalf("toasts %+v, want the one for the question (the short answer is under finished_after)", notes)
	}
}

// Quit while blocked and start again on the same session file: blocked
// again, with no new model call. Once a later user message is in the file,
// a restart restores nothing.
func TestWrapPiRestoresUnansweredQuestion(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), true)
	r.answerOnceWorking()
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	quit(t, tm)
	files := r.agent.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	calls := len(r.llm.Requests())

	r.herdr.ClearRecords()
	tm = r.wrap("--session", files[0])
	r.waitRestart("the restart", "blocked(input needed)")
	time.Sleep(500 * time.Millisecond)
	if n := len(r.llm.Requests()); n != calls {
		t.Fatalf("the restore called the model: %d requests, was %d", n, calls)
	}
	quit(t, tm)

	// A user message after the question: answered, nothing to restore.
	appendUserMessage(t, files[0], "use main.go")
	r.herdr.ClearRecords()
	tm = r.wrap("--session", files[0])
	r.waitRestart("the restart after an answer", "idle")
	time.Sleep(800 * time.Millisecond)
	if got := r.states(); strings.Contains(strings.Join(got, " "), "blocked") {
		t.Fatalf("an answered question was restored: %q", got)
	}
	quit(t, tm)
}

// The next run clears the marker's blocked state as it starts, even when
// no user message answered: here an extension starts it with a message of
// its own, which the session rule passes over (only a user message
// answers). The model holds its reply, so nothing but the run's start can
// say the question is gone: the session file still ends with it.
func TestWrapPiNextRunClearsTheMarker(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		if strings.Contains(req.LastUser(), "go on") {
			return fakellm.Reply{Hang: true}
		}
		return fakellm.Reply{Text: question + "\n" + session.Marker}
	}, true)
	r.answerOnceWorking()
	waiter, err := filepath.Abs("realpi/testdata/waiter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrap("-e", waiter)
	r.waitStates("the probe connected", "unknown", "idle")
	tm.Type(t, "hello")
	r.waitStates("the question", "unknown", "idle", "working", "blocked(input needed)")
	tm.Type(t, "/nudge")
	if _, err := r.llm.WaitRequests(2, time.Minute); err != nil {
		t.Fatalf("the extension's run never asked the model: %v", err)
	}
	r.waitStates("the extension's run", "unknown", "idle", "working", "blocked(input needed)", "working")
	if blocked, _ := treeOf(t, r.agent.SessionFiles()).Blocked(); !blocked {
		t.Fatal("the session rule says answered: the test no longer tells the run's start apart")
	}
	if err := tm.Send("\x1b"); err != nil { // Escape: abort the held run
		t.Fatal(err)
	}
	r.waitStates("the abort", "unknown", "idle", "working", "blocked(input needed)", "working", "idle")
	quit(t, tm)
}

// treeOf reads the one session file of files.
func treeOf(t *testing.T, files []string) *session.Tree {
	t.Helper()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	return pitest.SessionTree(t, files[0])
}

// appendUserMessage adds a user message to a Pi session file, as the next
// entry of its current branch.
func appendUserMessage(t *testing.T, file, text string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last struct{ ID string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.ID == "" {
		t.Fatalf("last entry %q: %v", lines[len(lines)-1], err)
	}
	entry, _ := json.Marshal(map[string]any{
		"type": "message", "id": "beefcafe", "parentId": last.ID, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": text}}, "timestamp": time.Now().UnixMilli()},
	})
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(entry, '\n')); err != nil {
		t.Fatal(err)
	}
}

// Two overlapping waits from `herdr-pi waiting` and two
// pi:waiting-for-user-input waits of one extension (plan-md holds one per
// tool call): one blocked report, and one clear, when the last of all
// four closes.
func TestWrapPiWaitsAggregate(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	waiter, err := filepath.Abs("realpi/testdata/waiter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := r.wrap("-e", waiter)
	r.waitStates("the probe connected", "unknown", "idle")

	waiting := func(args ...string) {
		t.Helper()
		if out, err := r.herdrPi(append([]string{"waiting"}, args...)...); err != nil {
			t.Fatalf("herdr-pi waiting %q: %v\n%s", args, err, out)
		}
	}
	type status struct {
		State          string
		Reasons        []struct{ Kind, Key string }
		SessionFile    string `json:"session_file"`
		ProbeConnected bool   `json:"probe_connected"`
	}
	// reasons waits until the wrapper holds exactly the reasons keys.
	reasons := func(what string, keys ...string) status {
		t.Helper()
		var st status
		var got []string
		for deadline := time.Now().Add(30 * time.Second); ; {
			out, err := r.herdrPi("status", "--json")
			if err != nil {
				t.Fatalf("status: %v\n%s", err, out)
			}
			validateJSON(t, docSchema(t, "status"), []byte(out))
			st = status{}
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("status %s: %v", out, err)
			}
			got = got[:0]
			for _, r := range st.Reasons {
				got = append(got, r.Key)
			}
			if slices.Equal(got, keys) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: reasons %q, want %q", what, got, keys)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waiting("start", "--source", "deploy", "--id", "a", "--label", "approve deploy")
	r.waitStates("the first wait", "unknown", "idle", "blocked(approve deploy)")
	waiting("start", "--source", "deploy", "--id", "b")
	tm.Type(t, "/wait-on")
	reasons("the extension's first wait", "hook:deploy:a", "hook:deploy:b", "wait:test-ext:w1")
	tm.Type(t, "/wait-on w2")
	st := reasons("four waits", "hook:deploy:a", "hook:deploy:b", "wait:test-ext:w1", "wait:test-ext:w2")
	if st.State != "blocked" || !st.ProbeConnected || st.SessionFile == "" {
		t.Fatalf("status %+v", st)
	}
	// Each reason the pane is reported with that closes while others
	// stay open hands the report to the oldest still open: Herdr says
	// what the pane waits for now (docs/blocked.md, "More than one
	// reason"), blocked throughout.
	waiting("stop", "--source", "deploy", "--id", "a")
	reasons("the first hook wait closed", "hook:deploy:b", "wait:test-ext:w1", "wait:test-ext:w2")
	moved := []string{"unknown", "idle", "blocked(approve deploy)", "blocked(waiting for deploy)"}
	r.waitStates("the report moved to the second hook wait", moved...)
	waiting("stop", "--source", "deploy", "--id", "b")
	reasons("the hook waits closed", "wait:test-ext:w1", "wait:test-ext:w2")
	moved = append(moved, "blocked(input needed)")
	r.waitStates("two waits closed, two open", moved...)
	tm.Type(t, "/wait-off w1")
	reasons("the extension's first wait closed", "wait:test-ext:w2")
	// The same message: nothing to report again.
	r.waitStates("one wait open", moved...)
	tm.Type(t, "/wait-off w2")
	r.waitStates("the last wait closed", append(moved, "idle")...)
	reasons("none left")
	quit(t, tm)
	r.waitStates("nothing more", append(moved, "idle")...)
}

// Print and JSON mode are a pure passthrough: same stdout and exit code as
// Pi alone, no probe (no guidance in the prompt), nothing sent to Herdr.
func TestWrapPiPrintModeIsPassthrough(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "hello back"}), true)
	run := func(argv ...string) (string, int) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = r.env()
		cmd.Dir = r.agent.Project
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		return out.String(), exitStatus(err)
	}
	bare, bareCode := run(r.pi.Bin, "-p", "hi")
	wrapped, wrappedCode := run(r.hp, "wrap", r.pi.Bin, "-p", "hi")
	if bare != wrapped || bareCode != wrappedCode || bareCode != 0 {
		t.Fatalf("bare pi -p: %q exit %d; wrapped: %q exit %d", bare, bareCode, wrapped, wrappedCode)
	}
	// JSON mode, from a terminal (whose stdout alone would keep the
	// probe out): its lines carry ids and times, so no byte compare, but
	// they are Pi's own event stream.
	tm := pitest.StartTerm(t, []string{r.hp, "wrap", r.pi.Bin, "--mode", "json", "hi"}, r.env(), r.agent.Project, 40, 120)
	t.Cleanup(tm.Close)
	if code, err := tm.ExitCode(time.Minute); err != nil || code != 0 || !bytes.Contains(tm.Raw(), []byte(`{"type":"session"`)) || !bytes.Contains(tm.Raw(), []byte("hello back")) {
		t.Fatalf("wrapped pi --mode json in a terminal: exit %d, %v\n%q", code, err, tm.Raw())
	}
	if n := len(r.llm.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	for _, req := range r.llm.Requests() {
		if strings.Contains(req.System(), "<herdr_integration>") {
			t.Fatalf("print or JSON mode got the guidance:\n%s", req.System())
		}
	}
	if m := r.herdr.Methods(); len(m) != 0 {
		t.Fatalf("print or JSON mode talked to Herdr: %q", m)
	}
	t.Logf("both printed %q, exit %d", bare, bareCode)
}

// Outside a complete Herdr environment: no guidance reaches the model and
// nothing is reported, yet the sentinel rule still reads the session.
func TestWrapPiOutsideHerdr(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}), false)
	other := herdrtest.Start(t) // a Herdr that must hear nothing
	tm := r.wrap()
	tm.Type(t, "hello")
	tm.WaitText(t, question, 20*time.Second)
	reqs, err := r.llm.WaitRequests(1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if sys := reqs[0].System(); strings.Contains(sys, "<herdr_integration>") || sys == "" {
		t.Fatalf("outside Herdr the system prompt must not carry the guidance:\n%s", sys)
	}
	out, err := r.herdrPi("status", "--json")
	if err == nil {
		t.Fatalf("status outside Herdr and outside the child found a wrapper: %s", out)
	}
	quit(t, tm)
	if m := other.Methods(); len(m) != 0 {
		t.Fatalf("something reached Herdr: %q", m)
	}
}

// A reply that only mentions the marker, or ends with it inside a closed
// code fence (the closing fence is then the last line), does not block.
func TestWrapPiMarkerMentionedDoesNotBlock(t *testing.T) {
	r := newPiRig(t, func(req fakellm.Request) fakellm.Reply {
		// Streamed word by word, so each run is long enough for Herdr to
		// see it working (the reporter coalesces shorter spells).
		if strings.Contains(req.LastUser(), "FENCE") {
			return fakellm.Reply{Text: "Put this in the template:\n```\n" + session.Marker + "\n```", WordDelay: 80 * time.Millisecond}
		}
		return fakellm.Reply{Text: "The marker is " + session.Marker + " when input is required.", WordDelay: 80 * time.Millisecond}
	}, true)
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	tm.Type(t, "MID please")
	r.waitStates("the mid-text reply", "unknown", "idle", "working", "idle")
	tm.Type(t, "FENCE please")
	r.waitStates("the fenced reply", "unknown", "idle", "working", "idle", "working", "idle")
	time.Sleep(500 * time.Millisecond)
	r.waitStates("nothing more", "unknown", "idle", "working", "idle", "working", "idle")
	quit(t, tm)
}

// A script holds the pane blocked (`herdr-pi waiting start`, a deploy
// hook) while Pi works; Pi's reply asks. The pane stays blocked all along,
// so only the notification says there is a question now: it is told, once.
// When the script's wait ends, Herdr's pane names the question.
func TestWrapPiQuestionAskedWhileAScriptWaitsIsTold(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap()
	r.waitStates("the probe connected", "unknown", "idle")
	if out, err := r.herdrPi("waiting", "start", "--source", "deploy-hook", "--id", "42", "--label", "approve the deploy"); err != nil {
		t.Fatalf("waiting start: %v\n%s", err, out)
	}
	r.waitStates("the script's wait", "unknown", "idle", "blocked(approve the deploy)")
	tm.Type(t, "hello")
	tm.WaitText(t, question, time.Minute)
	notes := awaitToasts(t, r.herdr, "the question's toast", 2)
	if out, err := r.herdrPi("waiting", "stop", "--source", "deploy-hook", "--id", "42"); err != nil {
		t.Fatalf("waiting stop: %v\n%s", err, out)
	}
	// The pane waits on Pi's question now: Herdr says so (blocked again,
	// with the question's message; nothing in between).
	r.waitStates("the script done", "unknown", "idle", "blocked(approve the deploy)", "blocked(input needed)")
	quit(t, tm) // wrap drains its queued toasts before it exits
	notes = r.herdr.Notifications()
	if len(notes) != 2 || !strings.HasPrefix(notes[1].Body, question+" · ") {
		t.Fatalf("toasts %+v, want the script's wait's, then the question's", notes)
	}
}
