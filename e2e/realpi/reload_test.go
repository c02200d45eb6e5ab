package realpi

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/notify"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/pane/signals"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// /reload and a session switch inside one Pi process: the probe reports
// each new session (with its own reading of the marker), the old instance
// goes quiet, and the session watcher, told the file by session_start,
// restores the blocked state. Waits from another extension and Pi's own
// dialogs come through the same socket.
func TestPiReloadResumeAndOtherExtensions(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(func(r fakellm.Request) fakellm.Reply {
		if strings.Contains(r.LastUser(), "block") {
			return fakellm.Reply{Text: question + "\n:input_needed:"}
		}
		return fakellm.Reply{Text: "Sure."}
	})
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	// What wrap does with the events: the machine's transitions and the
	// notifications its triggers tell.
	seen, _ := w.machine(t)
	ext, err := filepath.Abs("testdata/waiter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := startPi(t, a, w, herdrEnv, "-e", ext)
	editorReady(t, tm, w)
	start := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	sink := &sentinels{}
	watch := session.Watch(session.WatchConfig{Sink: sink, Interval: 20 * time.Millisecond})
	defer watch.Close()
	follow := func(ev control.SessionStart) { watch.Follow(ev.SessionFile) }
	follow(start)

	tm.Type(t, "please block")
	w.waitEvent(t, control.EvAgentSettled, 15*time.Second)
	waitSentinel(t, sink, true)
	seen.expect(t, "idle working blocked", "input-needed("+question+")")

	// Another extension's wait, then Pi's own dialog.
	tm.Type(t, "/wait-on")
	if ev := w.waitEvent(t, control.EvWaitingForInput, 10*time.Second); ev != (control.WaitingForInput{Source: "test-ext", ID: "w1", Waiting: true}) {
		t.Fatalf("wait-on: %#v", ev)
	}
	tm.Type(t, "/wait-off")
	if ev := w.waitEvent(t, control.EvWaitingForInput, 10*time.Second); ev != (control.WaitingForInput{Source: "test-ext", ID: "w1"}) {
		t.Fatalf("wait-off: %#v", ev)
	}
	tm.Type(t, "/ask-confirm")
	if ev := w.waitEvent(t, control.EvUIPromptStart, 10*time.Second); ev != (control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}) {
		t.Fatalf("ui_prompt_start: %#v", ev)
	}
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	if err := tm.Send("\x1b"); err != nil { // Escape cancels the dialog
		t.Fatal(err)
	}
	if ev := w.waitEvent(t, control.EvUIPromptEnd, 10*time.Second); ev != (control.UIPromptEnd{Kind: "confirm", Title: "Deploy now?"}) {
		t.Fatalf("ui_prompt_end: %#v", ev)
	}
	// The wait was told by itself, though the question kept the pane
	// blocked; the dialog, shown in place of the editor once the wait
	// was over, was told as what the pane showed then.
	told := "input-needed(" + question + "),input-needed,input-needed(Deploy now?)"
	seen.expect(t, "idle working blocked", told)

	// /reload: shutdown(reload), then a new instance's session_start that
	// sees the unanswered marker; the file did not change, still blocked.
	tm.Type(t, "/reload")
	if ev := w.waitEvent(t, control.EvSessionShutdown, 10*time.Second); ev != (control.SessionShutdown{Reason: "reload"}) {
		t.Fatalf("reload shutdown: %#v", ev)
	}
	re := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if re.Reason != "reload" || !re.InputNeeded || re.Question != question || re.SessionFile != start.SessionFile {
		t.Fatalf("reload session_start: %+v", re)
	}
	// Issue 10: the reload changed nothing the person sees: no idle
	// between shutdown and start, no second toast.
	seen.expect(t, "idle working blocked", told)
	// The reloaded Pi redraws the reply, still without its marker.
	if s := tm.WaitText(t, "Reloaded", 10*time.Second); !strings.Contains(s, question) || markerShown(s) {
		t.Fatalf("after /reload the question is gone or its marker shows:\n%s", s)
	}
	// After the reload the bus is served by the new instance only: one
	// event per emit, not one per instance ever loaded.
	tm.Type(t, "/wait-on")
	w.waitEvent(t, control.EvWaitingForInput, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, ev := range w.lifecycle() {
		if ev.EventName() == control.EvWaitingForInput {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d waiting events after the reload, want 3 (one per emit)", n)
	}

	// /new: a fresh session file, not blocked.
	tm.Type(t, "/new")
	w.waitEvent(t, control.EvSessionShutdown, 10*time.Second)
	fresh := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if fresh.Reason != "new" || fresh.InputNeeded || fresh.SessionFile == start.SessionFile || fresh.PreviousSessionFile != start.SessionFile {
		t.Fatalf("/new session_start: %+v", fresh)
	}
	follow(fresh)
	waitSentinel(t, sink, false)
	tm.Type(t, "hello there")
	w.waitEvent(t, control.EvAgentSettled, 15*time.Second)

	// /resume the blocked session from the picker: restored.
	tm.Type(t, "/resume")
	tm.WaitText(t, "please block", 10*time.Second)
	screen := tm.Screen()
	if !strings.Contains(screen, "please block") {
		t.Fatalf("picker:\n%s", screen)
	}
	// The picker lists sessions most recent first; move to "please block".
	// It fills in as it reads the sessions, and under load an entry read
	// late moved the selection between the check and Enter (CI resumed
	// the current session): Enter only once the selection held still.
	for i := 0; i < 30; i++ {
		s := tm.Screen()
		if selected(s, "please block") {
			time.Sleep(300 * time.Millisecond)
			if tm.Screen() == s {
				break
			}
			continue
		}
		key := "\x1b[B"
		if row(s, "›") > row(s, "please block") {
			key = "\x1b[A"
		}
		tm.Send(key)
		time.Sleep(150 * time.Millisecond)
	}
	if !selected(tm.Screen(), "please block") {
		t.Fatalf("could not select the blocked session:\n%s", tm.Screen())
	}
	tm.Send("\r")
	w.waitEvent(t, control.EvSessionShutdown, 10*time.Second)
	back := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if back.Reason != "resume" || !back.InputNeeded || back.SessionFile != start.SessionFile {
		t.Fatalf("/resume session_start: %+v", back)
	}
	follow(back)
	// The resumed history shows the question, not its marker.
	if s := tm.WaitText(t, question, 10*time.Second); markerShown(s) {
		t.Fatalf("the resumed history shows the marker:\n%s", s)
	}
	x := waitSentinel(t, sink, true)
	if x.File != start.SessionFile {
		t.Fatalf("restored from %s", x.File)
	}
	// Blocked again, but the question was told before: no toast. (The
	// wait opened after the reload was told as it opened.)
	seen.expect(t, "idle working blocked idle working idle blocked", told+",input-needed,finished")
	if got := len(llm.Requests()); got != 2 {
		t.Fatalf("%d model calls, want 2 (restoring calls nothing)", got)
	}
	// The run after the /reload and the /new got the guidance too.
	guidedEveryRun(t, llm.Requests(), 2)
}

// selected is true when the picker's cursor row mentions text.
// row is the index of the first line of screen that holds text, or -1.
func row(screen, text string) int {
	return slices.IndexFunc(strings.Split(screen, "\n"), func(l string) bool { return strings.Contains(l, text) })
}

func selected(screen, text string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, text) && strings.Contains(l, "›") {
			return true
		}
	}
	return false
}

// machine gives the probe's events to wrap's signals and a state machine
// (stopped at the test's end), as wrap does, and returns the log of its
// transitions and of what notify's triggers tell.
func (w *wrapper) machine(t *testing.T) (*stateLog, *state.Machine) {
	seen := &stateLog{}
	tr := notify.NewTriggers(seen, 0)
	m := state.New(state.Config{Sink: func(e state.Event) { seen.event(e); tr.StateEvent(e) }})
	t.Cleanup(m.Stop)
	w.also = signals.New(signals.Config{Machine: m, Agent: "pi"})
	return seen, m
}

// stateLog records the machine's transitions and what notify's triggers
// tell.
type stateLog struct {
	mu          sync.Mutex
	transitions []string
	notes       []string
}

func (l *stateLog) event(e state.Event) {
	if e.Kind != state.EventTransition {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.transitions = append(l.transitions, string(e.To))
}

func (l *stateLog) Notify(ev notify.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := ev.Kind.String()
	if ev.Question != "" {
		s += "(" + ev.Question + ")"
	}
	l.notes = append(l.notes, s)
}

func (l *stateLog) Resolved(notify.Event) {}

func (l *stateLog) expect(t *testing.T, transitions, notes string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := strings.Join(l.transitions, " "); got != transitions {
		t.Fatalf("transitions %q, want %q", got, transitions)
	}
	if got := strings.Join(l.notes, ","); got != notes {
		t.Fatalf("notifications %q, want %q", got, notes)
	}
}
