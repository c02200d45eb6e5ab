package realpi

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
	"github.com/herdr-pi/herdr-pi/pane/signals"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// The probe's connection lost mid-session, with a real Pi: what was open
// stays open, without a blip or a second notification. A dialog of Pi's
// is repeated by the probe when it is back; a channel wait that opened
// and one that closed while it was away come with it, from the events it
// kept. The connection is cut from the wrapper's side (as a wrapper that
// drops a connection does), and while the probe is away the socket's path
// leads to a stand-in that never answers, so the events it sends then are
// seen to be sent — and kept, since no wrapper took them.
func TestPiProbeReconnectKeepsWhatIsOpen(t *testing.T) {
	w, seen, m, tm := startWaiterPi(t, fakellm.Fixed(fakellm.Reply{Text: "Sure."}))
	socket := w.run.Endpoint.Socket

	// A dialog of Pi's, open when the connection drops.
	tm.Type(t, "/ask-confirm")
	if ev := w.waitEvent(t, control.EvUIPromptStart, 10*time.Second).(control.UIPromptStart); ev.Title != "Deploy now?" {
		t.Fatalf("ui_prompt_start: %#v", ev)
	}
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	seen.await(t, "idle blocked", "input-needed(Deploy now?)")
	cutAway(t, w, socket)
	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" {
		t.Fatalf("after the cut: session_start %+v, want reason reconnect", ev)
	}
	if ev := w.waitEvent(t, control.EvUIPromptStart, 5*time.Second).(control.UIPromptStart); ev.Title != "Deploy now?" {
		t.Fatalf("the repeated dialog: %#v", ev)
	}
	// Past the wait for a repeat: had the repeat been taken for a new
	// dialog, the old one would have closed by now.
	time.Sleep(signals.ReplayGrace + 500*time.Millisecond)
	seen.expect(t, "idle blocked", "input-needed(Deploy now?)")
	expectReasons(t, m, "Deploy now?")
	if err := tm.Send("\x1b"); err != nil { // Escape cancels the dialog
		t.Fatal(err)
	}
	w.waitEvent(t, control.EvUIPromptEnd, 10*time.Second)
	seen.await(t, "idle blocked idle", "input-needed(Deploy now?)")

	// A channel wait, open when the connection drops; while the probe is
	// away another opens and the first closes.
	tm.Type(t, "/wait-on w1")
	w.waitEvent(t, control.EvWaitingForInput, 10*time.Second)
	seen.await(t, "idle blocked idle blocked", "input-needed(Deploy now?),input-needed")
	away := mute(t, socket)
	cutAway(t, w, socket)
	away.await(t, control.EvSessionStart, "", false) // the probe redialled: into the stand-in
	tm.Type(t, "/wait-on w2")
	away.await(t, control.EvWaitingForInput, "w2", true)
	tm.Type(t, "/wait-off w1")
	away.await(t, control.EvWaitingForInput, "w1", false)
	away.restore(t) // the wrapper's socket is back; the stand-in hangs up

	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" {
		t.Fatalf("after the stand-in: session_start %+v, want reason reconnect", ev)
	}
	for _, want := range []control.WaitingForInput{{Source: "test-ext", ID: "w2", Waiting: true}, {Source: "test-ext", ID: "w1"}} {
		ev := w.waitEvent(t, control.EvWaitingForInput, 5*time.Second).(control.WaitingForInput)
		if ev.Source != want.Source || ev.ID != want.ID || ev.Waiting != want.Waiting {
			t.Fatalf("kept event %+v, want %+v", ev, want)
		}
	}
	time.Sleep(500 * time.Millisecond) // nothing more comes
	seen.expect(t, "idle blocked idle blocked", "input-needed(Deploy now?),input-needed")
	expectReasons(t, m, "wait:"+control.WaitKey("test-ext", "w2"))

	tm.Type(t, "/wait-off w2")
	seen.await(t, "idle blocked idle blocked idle", "input-needed(Deploy now?),input-needed")
}

// expectReasons checks the machine's open reasons, each named by its
// question or else its key.
func expectReasons(t *testing.T, m *state.Machine, want ...string) {
	t.Helper()
	var got []string
	for _, r := range m.Snapshot().Reasons {
		if r.Question != "" {
			got = append(got, r.Question)
		} else {
			got = append(got, r.Key)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("open reasons %q, want %q", got, want)
	}
}

// await waits until the transitions and notifications are as given, then
// checks them with expect.
func (l *stateLog) await(t *testing.T, transitions, notes string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l.mu.Lock()
		done := strings.Join(l.transitions, " ") == transitions && strings.Join(l.notes, ",") == notes
		l.mu.Unlock()
		if done {
			break
		}
	}
	l.expect(t, transitions, notes)
}

// startWaiterPi starts a real Pi answering with respond, with the test
// extension that waits and asks (testdata/waiter.mjs), under a wrapper
// whose machine's transitions and notifications seen records; it returns
// once Pi's editor is ready.
func startWaiterPi(t *testing.T, respond fakellm.Responder) (*wrapper, *stateLog, *state.Machine, *pitest.Term) {
	t.Helper()
	pi := pitest.Current(t)
	llm := fakellm.Start(respond)
	t.Cleanup(llm.Close)
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	seen, m := w.machine(t)
	ext, err := filepath.Abs("testdata/waiter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	tm := startPi(t, a, w, herdrEnv, "-e", ext)
	editorReady(t, tm, w)
	return w, seen, m, tm
}

// cutAway cuts the probe's one connection from the wrapper's side and
// waits until the wrapper has heard it go.
func cutAway(t *testing.T, w *wrapper, socket string) {
	t.Helper()
	if n := cutProbe(t, socket); n != 1 {
		t.Fatalf("cut %d probe connections, want 1", n)
	}
	w.waitEvent(t, control.ProbeDisconnected{}.EventName(), 5*time.Second)
}

// cutProbe shuts down, in this process (the wrapper's side), every
// connection accepted on the control socket at path, and says how many:
// the probe sees the wrapper hang up.
func cutProbe(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if u, ok := sa.(*unix.SockaddrUnix); err != nil || !ok || u.Name != path {
			continue
		}
		if listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || listening == 1 {
			continue
		}
		if unix.Shutdown(fd, unix.SHUT_RDWR) == nil {
			n++
		}
	}
	return n
}

// standIn is a socket that takes the place of the wrapper's at its path,
// accepts the probe and never answers it, recording what it is sent.
type standIn struct {
	path, moved string
	ln          net.Listener
	mu          sync.Mutex
	got         strings.Builder
	conns       []net.Conn
	done        sync.WaitGroup
}

// mute moves the wrapper's socket aside and listens at its path.
func mute(t *testing.T, path string) *standIn {
	t.Helper()
	s := &standIn{path: path, moved: path + ".moved"}
	if err := os.Rename(path, s.moved); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.done.Add(1)
			go func() {
				defer s.done.Done()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					s.mu.Lock()
					s.got.WriteString(line)
					s.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { s.close() })
	return s
}

// await waits until the stand-in was sent the event name (of a wait: its
// id and whether it is waiting).
func (s *standIn) await(t *testing.T, name, id string, waiting bool) {
	t.Helper()
	sent := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for line := range strings.Lines(s.got.String()) {
			var ev struct {
				Name string
				Data struct {
					ID      string
					Waiting bool
				}
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Name == name && ev.Data.ID == id && ev.Data.Waiting == waiting {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if sent() {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("the probe never sent the stand-in %s %q waiting=%v; it sent:\n%s", name, id, waiting, s.got.String())
}

// restore puts the wrapper's socket back at its path and hangs up on the
// probe, which redials it.
func (s *standIn) restore(t *testing.T) {
	t.Helper()
	if err := os.Rename(s.moved, s.path); err != nil {
		t.Fatal(err)
	}
	s.close()
}

func (s *standIn) close() {
	s.ln.(*net.UnixListener).SetUnlinkOnClose(false) // the path is the wrapper's again
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.done.Wait()
}

// A question Pi asks while its probe is away reaches the wrapper only as
// the session the probe repeats on its return: the run's end was sent to a
// socket no wrapper read. It is news all the same — the pane turns blocked
// and the person is told, once; the repeat of a question told already is
// not told again.
func TestPiQuestionAskedWhileTheProbeIsAwayIsTold(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: question + "\n\n:input_needed:"}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	seen, _ := w.machine(t)
	tm := startPi(t, a, w, herdrEnv)
	editorReady(t, tm, w)
	socket := w.run.Endpoint.Socket

	away := mute(t, socket)
	cutAway(t, w, socket)
	away.await(t, control.EvSessionStart, "", false) // the probe redialled: into the stand-in
	tm.Type(t, "hello")
	away.await(t, control.EvAgentSettled, "", false) // asked, and sent where no one reads
	away.restore(t)
	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" || !ev.InputNeeded {
		t.Fatalf("after the stand-in: session_start %+v, want reason reconnect, input needed", ev)
	}
	seen.await(t, "idle blocked", "input-needed("+question+")")

	// Away again, and back with the same question open: no news.
	cutAway(t, w, socket)
	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" || !ev.InputNeeded {
		t.Fatalf("after the second cut: session_start %+v, want reason reconnect, input needed", ev)
	}
	time.Sleep(signals.ReplayGrace + 500*time.Millisecond)
	seen.expect(t, "idle blocked", "input-needed("+question+")")
}

// With a real Pi: a probe back later than the wrapper holds what it had
// open finds the pane idle; a wait and a dialog Pi still has open block it
// again on its return, without a second notification.
func TestPiProbeBackLateBlocksAgainOnWhatIsStillOpen(t *testing.T) {
	w, seen, m, tm := startWaiterPi(t, fakellm.Fixed(fakellm.Reply{Text: "Sure."}))
	socket := w.run.Endpoint.Socket

	tm.Type(t, "/wait-on w1")
	w.waitEvent(t, control.EvWaitingForInput, 10*time.Second)
	tm.Type(t, "/ask-confirm")
	w.waitEvent(t, control.EvUIPromptStart, 10*time.Second)
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	seen.await(t, "idle blocked", "input-needed")

	away := mute(t, socket)
	cutAway(t, w, socket)
	away.await(t, control.EvSessionStart, "", false)
	seen.await(t, "idle blocked idle", "input-needed") // the hold ended
	away.restore(t)
	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" {
		t.Fatalf("after the stand-in: session_start %+v, want reason reconnect", ev)
	}
	seen.await(t, "idle blocked idle blocked", "input-needed")
	time.Sleep(signals.ReplayGrace + 500*time.Millisecond)
	seen.expect(t, "idle blocked idle blocked", "input-needed")
	// The repeated dialog opened again at once, the wait a moment later.
	expectReasons(t, m, "Deploy now?", "wait:"+control.WaitKey("test-ext", "w1"))
	if err := tm.Send("\x1b"); err != nil { // Escape cancels the dialog
		t.Fatal(err)
	}
	w.waitEvent(t, control.EvUIPromptEnd, 10*time.Second)
	tm.Type(t, "/wait-off w1")
	seen.await(t, "idle blocked idle blocked idle", "input-needed")
}

// With a real Pi: while the probe is away the person answers Pi's dialog
// and another opens. The probe, back, repeats only the new one: it is
// told by its own title, and the answered one closes.
func TestPiDialogOpenedWhileTheProbeIsAwayIsTold(t *testing.T) {
	w, seen, m, tm := startWaiterPi(t, fakellm.Fixed(fakellm.Reply{Text: "Sure."}))
	socket := w.run.Endpoint.Socket

	tm.Type(t, "/ask-confirm")
	w.waitEvent(t, control.EvUIPromptStart, 10*time.Second)
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	seen.await(t, "idle blocked", "input-needed(Deploy now?)")

	away := mute(t, socket)
	cutAway(t, w, socket)
	away.await(t, control.EvSessionStart, "", false)
	if err := tm.Send("\x1b"); err != nil { // Escape cancels the dialog
		t.Fatal(err)
	}
	away.await(t, control.EvUIPromptEnd, "", false)
	tm.Type(t, "/ask-region")
	away.await(t, control.EvUIPromptStart, "", false)
	tm.WaitText(t, "Which region?", 5*time.Second)
	away.restore(t)
	if ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart); ev.Reason != "reconnect" {
		t.Fatalf("after the stand-in: session_start %+v, want reason reconnect", ev)
	}
	if ev := w.waitEvent(t, control.EvUIPromptStart, 5*time.Second).(control.UIPromptStart); ev.Title != "Which region?" {
		t.Fatalf("the repeated dialog: %#v", ev)
	}
	time.Sleep(signals.ReplayGrace + 500*time.Millisecond)
	seen.expect(t, "idle blocked", "input-needed(Deploy now?),input-needed(Which region?)")
	expectReasons(t, m, "Which region?")
}

// With a real Pi: a run that starts while the probe is there and ends
// while it is away is told when the probe is back — its agent_settled was
// sent where no wrapper read it, and the repeated session says how the
// session's latest run ended. Once: a second return says nothing new.
func TestPiRunThatEndedWhileTheProbeWasAwayIsTold(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: "All done here, nothing else to do.", WordDelay: 150 * time.Millisecond}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	seen, _ := w.machine(t)
	tm := startPi(t, a, w, herdrEnv)
	editorReady(t, tm, w)
	socket := w.run.Endpoint.Socket

	tm.Type(t, "hello")
	w.waitEvent(t, control.EvAgentStart, 10*time.Second)
	seen.await(t, "idle working", "")
	away := mute(t, socket)
	cutAway(t, w, socket)
	away.await(t, control.EvAgentSettled, "", false) // ended, and sent where no one reads
	// Away a while after the run's end: the resync says how long ago it
	// ended, so the run is not counted to the return (a short run told
	// "finished" for the length of an outage).
	const outage = 2 * time.Second
	time.Sleep(outage)
	away.restore(t)
	ev := w.waitEvent(t, control.EvSessionStart, 10*time.Second).(control.SessionStart)
	if ev.Reason != "reconnect" || ev.LastRun == nil || ev.LastRun.Ended != 1 {
		t.Fatalf("after the stand-in: session_start %+v, want reason reconnect with the run's end", ev)
	}
	if ago := ev.LastRun.EndedMsAgo; ago == nil || *ago < float64(outage/time.Millisecond) {
		t.Fatalf("the resync says the run ended %v ms ago, want at least the outage's %v", ago, outage)
	}
	seen.await(t, "idle working idle", "finished")

	cutAway(t, w, socket)
	w.waitEvent(t, control.EvSessionStart, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	seen.expect(t, "idle working idle", "finished")
}
