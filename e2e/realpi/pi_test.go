package realpi

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/probe"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// These tests run the probe inside a real Pi under a real pty, against a
// fake model server and a control server standing in for the wrapper.

// wrapper is the test's stand-in for `herdr-pi wrap`: a control run (private
// dir, socket, token) recording what the probe sends.
type wrapper struct {
	run *control.Run

	mu     sync.Mutex
	events []control.Event
	conns  int
	ch     chan control.Event
	// also hears every event too, as wrap's signals would (nil: none).
	also control.EventSink
}

func newWrapper(t *testing.T) *wrapper {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "hpr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	w := &wrapper{ch: make(chan control.Event, 256)}
	w.run, err = control.Start(control.RunConfig{RuntimeBase: filepath.Join(base, "rt"), Events: w, Requests: w, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.run.Close() })
	return w
}

func (w *wrapper) ProbeEvent(ev control.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := ev.(control.ProbeConnected); ok {
		w.conns++
	}
	w.events = append(w.events, ev)
	if w.also != nil {
		w.also.ProbeEvent(ev)
	}
	w.ch <- ev
}
func (w *wrapper) Wait(control.WaitRequest) error { return nil }
func (w *wrapper) Status() control.Status         { return control.Status{} }

// lifecycle returns the events so far, without connection brackets.
func (w *wrapper) lifecycle() []control.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []control.Event
	for _, ev := range w.events {
		switch ev.(type) {
		case control.ProbeConnected, control.ProbeDisconnected:
			continue
		}
		out = append(out, ev)
	}
	return out
}

// saidDialogs is what the probe's first connection said in its hello:
// whether its Pi tells it of its own dialogs.
func (w *wrapper) saidDialogs(t *testing.T) bool {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if c, ok := ev.(control.ProbeConnected); ok {
			return c.Dialogs
		}
	}
	t.Fatal("the probe never connected")
	return false
}

// waitEvent waits for an event of the given name.
func (w *wrapper) waitEvent(t *testing.T, name string, timeout time.Duration) control.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-w.ch:
			if ev.EventName() == name {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within %v; got %#v", name, timeout, w.lifecycle())
			return nil
		}
	}
}

// sentinels records the session watcher's reports.
type sentinels struct {
	mu  sync.Mutex
	got []session.Sentinel
}

func (s *sentinels) SessionSentinel(x session.Sentinel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, x)
}

// SessionRetryPending: the retries these tests make are not theirs to follow.
func (s *sentinels) SessionRetryPending(bool) {}

func (s *sentinels) last() (session.Sentinel, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return session.Sentinel{}, 0
	}
	return s.got[len(s.got)-1], len(s.got)
}

func waitSentinel(t *testing.T, s *sentinels, open bool) session.Sentinel {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if x, n := s.last(); n > 0 && x.Open == open {
			return x
		}
		time.Sleep(20 * time.Millisecond)
	}
	x, n := s.last()
	t.Fatalf("session sentinel never became open=%v (%d reports, last %+v)", open, n, x)
	return session.Sentinel{}
}

var herdrEnv = []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=/tmp/x", "HERDR_PANE_ID=w1:p1"}

// startPi runs an interactive Pi with the probe loaded, as wrap would.
func startPi(t *testing.T, a *pitest.Agent, w *wrapper, extraEnv []string, args ...string) *pitest.Term {
	t.Helper()
	if !probe.Interactive(args, true, true) {
		t.Fatalf("test bug: %q is not an interactive Pi command line", args)
	}
	path, err := probe.Write(w.run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	env := a.With(append(w.run.Env(), extraEnv...)...)
	argv := append([]string{a.Pi.Bin}, probe.Inject(path, args)...)
	return pitest.StartTerm(t, argv, env, a.Project, 30, 100)
}

// editorReady waits until Pi takes input: its editor is drawn (the two
// border rows) and the probe heard session_start. Pi draws the editor
// before its startup ends and answers a prompt typed before then with
// "Startup is still in progress"; extensions get session_start only once it
// accepts prompts. (On a busy machine the gap is seconds long.)
func editorReady(t *testing.T, tm *pitest.Term, w *wrapper) {
	t.Helper()
	tm.WaitFor(t, "the editor", 2*time.Minute, func(s string) bool { return strings.Count(s, "────────") >= 2 })
	deadline := time.Now().Add(20 * time.Second)
	for !w.seen(control.EvSessionStart) {
		if time.Now().After(deadline) {
			t.Fatalf("the probe never heard session_start; events %#v\n%s", w.lifecycle(), tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seen reports whether an event of that name arrived, without taking it
// from the channel waitEvent reads.
func (w *wrapper) seen(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if ev.EventName() == name {
			return true
		}
	}
	return false
}

// markerShown is true when any screen line shows the marker or, as its last
// non-blank text, a beginning of it (":", ":input", …).
func markerShown(screen string) bool {
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, session.Marker) || (l != "" && strings.HasPrefix(session.Marker, l)) {
			return true
		}
	}
	return false
}

const question = "Which file should I edit?"

func TestPiBlockedReplyInsideHerdr(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{
		// The marker itself arrives in pieces, so every streaming prefix
		// of it is on its way to the screen at some point.
		Chunks:    []string{"Which ", "file ", "should ", "I ", "edit?\n", ":", "input", "_need", "ed", ":"},
		WordDelay: 120 * time.Millisecond,
	}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	// A Herdr socket that listens: the probe must never dial it, the
	// wrapper owns the transport to Herdr (as Herdr's own Pi integration
	// does for the sentinel extension).
	herdrSock := filepath.Join(t.TempDir(), "herdr.sock")
	herdrLn, err := net.Listen("unix", herdrSock)
	if err != nil {
		t.Fatal(err)
	}
	defer herdrLn.Close()
	tm := startPi(t, a, w, []string{"HERDR_ENV=1", "HERDR_SOCKET_PATH=" + herdrSock, "HERDR_PANE_ID=w1:p1"})
	editorReady(t, tm, w)
	start := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if start.Reason != "startup" || start.Mode != "tui" || start.ModeInferred || !start.HasUI || start.SessionFile == "" || start.InputNeeded {
		t.Fatalf("session_start %+v", start)
	}
	if !w.saidDialogs(t) {
		t.Fatal("the probe in Pi 1.6.0 says it cannot report Pi's dialogs")
	}
	sink := &sentinels{}
	watch := session.Watch(session.WatchConfig{Sink: sink, Interval: 20 * time.Millisecond})
	defer watch.Close()
	watch.Follow(start.SessionFile)

	tm.Type(t, "hello")
	// Sample the screen while the reply streams and after it completed.
	samples := 0
	deadline := time.Now().Add(15 * time.Second)
	for settled := false; !settled; samples++ {
		s := tm.Screen()
		if markerShown(s) {
			t.Fatalf("the marker (or a beginning of it) is on screen:\n%s", s)
		}
		w.mu.Lock()
		for _, ev := range w.events {
			if ev.EventName() == control.EvAgentSettled {
				settled = true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the run never settled; events %#v\n%s", w.lifecycle(), s)
		}
		time.Sleep(15 * time.Millisecond)
	}
	screen := tm.WaitText(t, question, 5*time.Second)
	time.Sleep(300 * time.Millisecond) // the idle redraw
	if s := tm.Screen(); markerShown(s) {
		t.Fatalf("the marker is on screen after the reply:\n%s", s)
	}
	t.Logf("%d screen samples, none showed the marker; final screen:\n%s", samples, screen)

	// The probe names Pi's leaf: in a new session, the entry Pi opens it
	// with (kept in memory until the first reply ends, then written), the
	// same as the run starts, and the reply once the run is over — the
	// file's last entry, which this Pi alone writes.
	if start.LeafID == nil || *start.LeafID == "" || !inFile(t, start.SessionFile, *start.LeafID) {
		t.Fatalf("session_start of a new session names leaf %v, not an entry of the file", start.LeafID)
	}
	reply := lastEntry(t, start.SessionFile)
	got := w.lifecycle()
	want := []control.Event{
		start,
		control.AgentStart{LeafID: start.LeafID},
		control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: question, QuestionEntry: reply.ID, LeafID: leafID(reply.ID)},
		control.AgentSettled{Idle: true, InputNeeded: true, Question: question, QuestionEntry: reply.ID, LeafID: leafID(reply.ID)},
	}
	if !reflect.DeepEqual(got, want) || reply.Role != "assistant" {
		t.Fatalf("events:\n got %s\nwant %s\n(the file's last entry %+v)", showEvents(got), showEvents(want), reply)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0].System(), "\n\n"+probe.Instruction) {
		t.Fatalf("the system prompt does not end with the guidance (%d requests):\n%q", len(reqs), tail(reqs))
	}
	// The stored session keeps the marker, and the session rule says blocked.
	x := waitSentinel(t, sink, true)
	b, _ := os.ReadFile(start.SessionFile)
	if x.File != start.SessionFile || !strings.Contains(string(b), `"text":"Which file should I edit?\n:input_needed:"`) {
		t.Fatalf("stored session lacks the marker (%+v):\n%s", x, b)
	}

	tm.Type(t, "/quit")
	if code, err := tm.ExitCode(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("/quit: exit %d, %v", code, err)
	}
	if ev := w.waitEvent(t, control.EvSessionShutdown, 5*time.Second); ev != (control.SessionShutdown{Reason: "quit"}) {
		t.Fatalf("shutdown %#v", ev)
	}
	// Pi has exited: a connection it made to Herdr's socket, closed or
	// not, waits in the listener's backlog.
	herdrLn.(*net.UnixListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := herdrLn.Accept(); err == nil {
		c.Close()
		t.Fatal("Pi connected to Herdr's socket itself")
	}
}

// Quit while blocked, start again on the same session file (as after a
// crash, or when herdr-pi restarts): blocked again without any model call,
// and the redrawn history hides the marker; once a later user message
// answered, a restart restores nothing.
func TestPiRestoresAfterRestart(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	// A session that ended blocked (print mode writes the same file).
	if out, err := a.Command(a.Env, "-p", "hello").CombinedOutput(); err != nil {
		t.Fatalf("pi -p: %v\n%s", err, out)
	}
	files := a.SessionFiles()
	if len(files) != 1 {
		t.Fatalf("session files %q", files)
	}
	start := control.SessionStart{SessionFile: files[0]}

	// Restart on the same session: blocked again without a model call,
	// and the history redraw does not show the marker either.
	w2 := newWrapper(t)
	tm2 := startPi(t, a, w2, herdrEnv, "--session", start.SessionFile)
	editorReady(t, tm2, w2)
	restart := w2.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if !restart.InputNeeded || restart.Question != question || restart.SessionFile != start.SessionFile {
		t.Fatalf("restart session_start %+v", restart)
	}
	// Pi loads the file with its last entry line as the leaf, and the
	// probe names it.
	if last := lastEntry(t, start.SessionFile); restart.LeafID == nil || *restart.LeafID != last.ID {
		t.Fatalf("restart session_start names leaf %v, want %q", restart.LeafID, last.ID)
	}
	s2 := tm2.WaitText(t, question, 5*time.Second)
	if markerShown(s2) {
		t.Fatalf("the marker shows in the redrawn history:\n%s", s2)
	}
	sink2 := &sentinels{}
	watch2 := session.Watch(session.WatchConfig{Sink: sink2, Interval: 20 * time.Millisecond, Locator: session.Locator{Path: restart.SessionFile}})
	defer watch2.Close()
	waitSentinel(t, sink2, true)
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("restoring made %d model calls", n-1)
	}

	// Answering closes it: the user message lands in the file at once.
	llm.SetResponder(fakellm.Fixed(fakellm.Reply{Text: "Editing main.go now."}))
	tm2.Type(t, "main.go")
	w2.waitEvent(t, control.EvAgentSettled, 10*time.Second)
	waitSentinel(t, sink2, false)
	// Hiding is for the screen only: the model is sent the stored reply,
	// marker and all, so it sees what it asked.
	if reqs := llm.Requests(); len(reqs) != 2 || !assistantSaid(reqs[1], question+"\n"+session.Marker) {
		t.Fatalf("the answer's request lacks the question with its marker (%d requests): %+v", len(reqs), reqs[len(reqs)-1].Messages[1:])
	}
	tm2.Type(t, "/quit")
	if code, err := tm2.ExitCode(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("/quit: exit %d, %v", code, err)
	}
	// Restarting now restores nothing: a later user message answered.
	w3 := newWrapper(t)
	tm3 := startPi(t, a, w3, herdrEnv, "--session", start.SessionFile)
	editorReady(t, tm3, w3)
	if ev := w3.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.InputNeeded {
		t.Fatalf("answered session restored as blocked: %+v", ev)
	}
	if blocked, _ := pitest.SessionTree(t, start.SessionFile).Blocked(); blocked {
		t.Fatal("the session rule says blocked after the answer")
	}
}

func leafID(id string) control.Leaf { return &id }

// lastEntry is the last entry line of a session file.
func lastEntry(t *testing.T, path string) session.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	e, err := session.ParseLine([]byte(lines[len(lines)-1]))
	if err != nil {
		t.Fatalf("the last line of %s: %v", path, err)
	}
	return e
}

// inFile says whether the session file has an entry of this id.
func inFile(t *testing.T, path, id string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if e, err := session.ParseLine([]byte(l)); err == nil && e.ID == id {
			return true
		}
	}
	return false
}

// showEvents prints events with their leaves (%#v shows addresses).
func showEvents(evs []control.Event) string {
	var out []string
	for _, e := range evs {
		b, _ := json.Marshal(e)
		out = append(out, e.EventName()+string(b))
	}
	return strings.Join(out, " ")
}

// assistantSaid: the request carries an assistant message of exactly text.
func assistantSaid(r fakellm.Request, text string) bool {
	for _, m := range r.Messages {
		if m.Role == "assistant" && m.Text == text {
			return true
		}
	}
	return false
}

func tail(reqs []fakellm.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	s := reqs[len(reqs)-1].System()
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// Outside a complete Herdr environment the probe changes nothing Pi shows
// or sends: no guidance in the system prompt, the marker stays visible
// (which also proves the screen check above can fail). The wrapper still
// hears the lifecycle.
func TestPiOutsideHerdrAddsNoGuidance(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	tm := startPi(t, a, w, []string{"HERDR_ENV=1", "HERDR_PANE_ID=w1:p1"}) // no HERDR_SOCKET_PATH
	editorReady(t, tm, w)
	tm.Type(t, "hello")
	w.waitEvent(t, control.EvAgentSettled, 15*time.Second)
	tm.WaitFor(t, "the marker on screen", 5*time.Second, markerShown)
	reqs := llm.Requests()
	if len(reqs) != 1 || reqs[0].System() == "" || strings.Contains(reqs[0].System(), "herdr_integration") {
		t.Fatalf("system prompt outside Herdr:\n%q", tail(reqs))
	}
	got := w.lifecycle()
	end, _ := got[min(2, len(got)-1)].(control.AgentEnd)
	end.LeafID, end.QuestionEntry = nil, "" // TestPiBlockedReplyInsideHerdr checks them
	if len(got) != 4 || end != (control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: question}) {
		t.Fatalf("events %s", showEvents(got))
	}
}

// Only a marker on the final line blocks. A reply that mentions it, or ends
// with it inside a closed code fence (the closing ``` is then the final
// line), does not: neither for the session rule nor for the probe.
func TestPiMarkerMidTextOrInFenceDoesNotBlock(t *testing.T) {
	pi := pitest.Current(t)
	replies := map[string]string{
		"mention": "The marker is " + session.Marker + " when input is required.",
		"fence":   "Put this at the end:\n```\n" + session.Marker + "\n```",
	}
	llm := fakellm.Start(func(r fakellm.Request) fakellm.Reply { return fakellm.Reply{Text: replies[r.LastUser()]} })
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	tm := startPi(t, a, w, herdrEnv)
	editorReady(t, tm, w)
	start := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	for _, prompt := range []string{"mention", "fence"} {
		tm.Type(t, prompt)
		settled := w.waitEvent(t, control.EvAgentSettled, 15*time.Second).(control.AgentSettled)
		if settled.InputNeeded {
			t.Errorf("%s: the probe says input needed", prompt)
		}
		tm.WaitText(t, session.Marker, 5*time.Second) // shown: not a final marker
		if blocked, id := pitest.SessionTree(t, start.SessionFile).Blocked(); blocked {
			t.Errorf("%s: the session rule says blocked by %s", prompt, id)
		}
	}
	b, _ := os.ReadFile(start.SessionFile)
	if !strings.Contains(string(b), "```\\n:input_needed:\\n```") {
		t.Fatalf("the fenced reply is not in the session:\n%s", b)
	}
	guidedEveryRun(t, llm.Requests(), 2)
}

// guidedEveryRun: each of the n model calls, one per agent run, carries
// the guidance once, at the end of its system prompt — not only the
// first run's.
func guidedEveryRun(t *testing.T, reqs []fakellm.Request, n int) {
	t.Helper()
	if len(reqs) != n {
		t.Fatalf("%d model calls, want %d", len(reqs), n)
	}
	for i, r := range reqs {
		if sys := r.System(); !strings.HasSuffix(sys, "\n\n"+probe.Instruction) || strings.Count(sys, probe.Instruction) != 1 {
			t.Fatalf("run %d of %d: the system prompt does not end with the guidance once:\n%q", i+1, n, tail(reqs[i:i+1]))
		}
	}
}

// `pi -p "hi"`: the argv rule keeps the probe out, so Pi runs untouched and
// never talks to the wrapper, even with the wrapper's environment present.
func TestPiPrintModeGetsNoProbe(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: "hello back"}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	args := []string{"-p", "hi"}
	if probe.Interactive(args, true, true) {
		t.Fatal("the argv rule would give the probe to pi -p")
	}
	cmd := a.Command(a.With(append(w.run.Env(), herdrEnv...)...), args...)
	out, err := cmd.Output()
	if err != nil || string(out) != "hello back\n" {
		t.Fatalf("pi -p hi: %q, %v", out, err)
	}
	time.Sleep(100 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) != 0 {
		t.Fatalf("print mode reached the wrapper: %#v", w.events)
	}
	if reqs := llm.Requests(); len(reqs) != 1 || strings.Contains(reqs[0].System(), "herdr_integration") {
		t.Fatalf("print mode request changed:\n%q", tail(reqs))
	}
}

// Pi 0.73.1 has no ctx.mode, no agent_settled, no dialog events and no
// Markdown transformers: the probe still loads without error, adds the
// guidance and reports; the marker stays visible there (documented
// limitation).
func TestOldPiLoadsTheProbe(t *testing.T) {
	pi := pitest.Old(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: question + "\n" + session.Marker}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	tm := startPi(t, a, w, herdrEnv)
	editorReady(t, tm, w)
	start := w.waitEvent(t, control.EvSessionStart, 15*time.Second).(control.SessionStart)
	if start.Mode != "tui" || !start.ModeInferred || start.Reason != "startup" {
		t.Fatalf("session_start %+v", start)
	}
	// …and no dialog events: the wrapper leaves its dialogs to the screen.
	if w.saidDialogs(t) {
		t.Fatal("the probe in Pi 0.73.1 says it reports Pi's dialogs")
	}
	tm.Type(t, "hello")
	end := w.waitEvent(t, control.EvAgentEnd, 15*time.Second).(control.AgentEnd)
	// Pi 0.73.1 has getLeafId too: the run's reply, the file's last entry.
	last := lastEntry(t, start.SessionFile)
	if end.LeafID == nil || *end.LeafID != last.ID {
		t.Fatalf("agent_end names leaf %v, want %q", end.LeafID, last.ID)
	}
	// …and the reply that asks, the same entry.
	if end.QuestionEntry != last.ID {
		t.Fatalf("agent_end names the reply that asks %q, want %q", end.QuestionEntry, last.ID)
	}
	end.LeafID, end.QuestionEntry = nil, ""
	if end != (control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: question}) {
		t.Fatalf("agent_end %#v", end)
	}
	tm.WaitFor(t, "the marker on screen (0.73.1 cannot hide it)", 5*time.Second, markerShown)
	reqs := llm.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].System(), probe.Instruction) {
		t.Fatalf("guidance missing on 0.73.1:\n%q", tail(reqs))
	}
	if blocked, _ := pitest.SessionTree(t, start.SessionFile).Blocked(); !blocked {
		t.Fatal("the session rule does not see the marker in a 0.73.1 session")
	}
	tm.Type(t, "/quit")
	if code, err := tm.ExitCode(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("/quit: exit %d, %v\n%s", code, err, tm.Screen())
	}
	got := w.lifecycle()
	if len(got) == 0 || got[len(got)-1] != (control.SessionShutdown{Reason: "quit"}) {
		t.Fatalf("events %#v", got)
	}
}

// Seed 001: the Herdr integration of workflow agents gives the model no
// tool of its own; herdr-pi's probe, which takes its place (and the sentinel
// integration's) in every wrapped Pi, neither. A Pi with the probe inside
// Herdr offers its model exactly the tools the same Pi offers without it.
func TestPiProbeGivesTheModelNoTools(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: "ok"}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	ask := func(tm *pitest.Term, ready func()) []string {
		t.Helper()
		ready()
		n := len(llm.Requests())
		tm.Type(t, "hello")
		for deadline := time.Now().Add(time.Minute); len(llm.Requests()) == n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no model call:\n%s", tm.Screen())
			}
		}
		tm.WaitText(t, "ok", 15*time.Second)
		names := toolNames(t, llm.Requests()[n])
		tm.Type(t, "/quit")
		if code, err := tm.ExitCode(10 * time.Second); err != nil || code != 0 {
			t.Fatalf("/quit: exit %d, %v", code, err)
		}
		return names
	}
	// Both runs load ready.mjs, which gives no tool and shows on screen
	// when Pi's start-up is over (a prompt typed before is refused).
	ready, err := filepath.Abs("testdata/ready.mjs")
	if err != nil {
		t.Fatal(err)
	}
	bare := pitest.StartTerm(t, []string{a.Pi.Bin, "-e", ready}, a.With(herdrEnv...), a.Project, 30, 100)
	without := ask(bare, func() { bare.WaitText(t, "started", 2*time.Minute) })
	tm := startPi(t, a, w, herdrEnv, "-e", ready)
	with := ask(tm, func() { editorReady(t, tm, w); tm.WaitText(t, "started", time.Minute) })
	if len(without) == 0 {
		t.Fatal("test bug: bare Pi offered no tools, so nothing can be compared")
	}
	if !slices.Equal(with, without) {
		t.Fatalf("with the probe the model is offered tools %q, without it %q", with, without)
	}
	if reqs := llm.Requests(); !strings.Contains(reqs[len(reqs)-1].System(), "herdr_integration") {
		t.Fatal("test bug: the probe was not loaded inside Herdr (no guidance)")
	}
}

// toolNames are the names of the tools a model request offers, sorted.
func toolNames(t *testing.T, r fakellm.Request) []string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("the model request is not JSON: %v\n%s", err, r.Body)
	}
	var names []string
	for _, tool := range body.Tools {
		names = append(names, tool.Name+tool.Function.Name)
	}
	slices.Sort(names)
	return names
}
