package signals

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// channelWait is one kind of wait another extension opens on Pi's bus: the
// event that opens it and the one that closes it, as the probe forwards
// them.
type channelWait struct {
	name         string
	open, closes control.Event
}

func parsed(t *testing.T, name, payload string) control.Event {
	t.Helper()
	ev, err := control.ParseEvent(name, json.RawMessage(payload))
	if err != nil {
		t.Fatalf("%s %s: %v", name, payload, err)
	}
	return ev
}

func channelWaits(t *testing.T) []channelWait {
	return []channelWait{
		{"pi-ask", control.AskStarted{FlowID: "f1", Title: "Which region?"}, control.AskCompleted{FlowID: "f1"}},
		{"permission prompt",
			parsed(t, control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "req-1", "git status")),
			parsed(t, control.EvPermissionDecided, childDecision)},
		{"herdr:blocked from another extension", control.HerdrBlocked{Active: true, Label: "deploy"}, control.HerdrBlocked{}},
		{"pi:waiting-for-user-input", control.WaitingForInput{Source: "plan-md", ID: "call-1", Waiting: true},
			control.WaitingForInput{Source: "plan-md", ID: "call-1"}},
	}
}

func (r *rig) reasonEvents() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.reasons, " ")
}

// A channel wait (a pi-ask question, a permission prompt, a herdr:blocked
// of another extension, a pi:waiting-for-user-input) open when the probe
// lost its connection stays open while it is away, and across its return
// as the same Pi process in the same session: no idle in between, no close
// and reopen of the reason, no second notification. What the returning
// probe says happened meanwhile (the events it kept) closes it; a probe
// that does not return in time, another session, another Pi process, or a
// probe that says it lost events close it.
func TestChannelWaitsSurviveAProbeReconnect(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	again := start
	again.Reason = "reconnect"
	otherSession := again
	otherSession.SessionID, otherSession.SessionFile, otherSession.SessionSeq = "sid2", "/t.jsonl", 2
	reload := again
	reload.SessionSeq = 2 // /reload while away: the same session file and id, a new session start
	fresh := start
	fresh.Reason = "startup"

	type outcome int
	const (
		kept outcome = iota
		closed
	)
	cases := []struct {
		name string
		// back is what comes once the probe left (nil: nothing, it never
		// returns); wait is how long after the loss it comes.
		back []control.Event
		want outcome
	}{
		{"back with nothing new", []control.Event{control.ProbeConnected{PID: 7}, again}, kept},
		{"back saying it closed meanwhile", []control.Event{control.ProbeConnected{PID: 7}, again, nil}, closed},
		{"never back", nil, closed},
		{"back in another session", []control.Event{control.ProbeConnected{PID: 7}, otherSession}, closed},
		{"back after a reload", []control.Event{control.ProbeConnected{PID: 7}, reload}, closed},
		{"another Pi in the same session", []control.Event{control.ProbeConnected{PID: 8}, again}, closed},
		{"a new Pi starting", []control.Event{control.ProbeConnected{PID: 8}, fresh}, closed},
		{"back having lost events", []control.Event{control.ProbeConnected{PID: 7}, again, control.ChannelEventsLost{Dropped: 3}}, closed},
	}
	for _, w := range channelWaits(t) {
		for _, c := range cases {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRig()
					defer r.m.Stop()
					r.feed(control.ProbeConnected{PID: 7}, start)
					time.Sleep(2 * time.Second)
					r.feed(w.open)
					time.Sleep(time.Minute)
					transitions, notes := r.got()
					opened := r.reasonEvents()
					if !strings.HasSuffix(transitions, "blocked("+r.s.Status().Reasons[0].Label+")") || strings.Count(opened, "+") != 1 {
						t.Fatalf("the wait did not open: %q, %q", transitions, opened)
					}

					r.feed(control.ProbeDisconnected{PID: 7})
					time.Sleep(time.Second)
					if gt, _ := r.got(); gt != transitions || r.reasonEvents() != opened {
						t.Fatalf("a second after the loss: transitions %q, reasons %q; want them unchanged", gt, r.reasonEvents())
					}
					for _, ev := range c.back {
						if ev == nil {
							ev = w.closes
						}
						r.feed(ev)
					}
					time.Sleep(time.Minute)

					gt, gn := r.got()
					key := strings.TrimPrefix(opened, "+")
					switch c.want {
					case kept:
						if gt != transitions || gn != notes || r.reasonEvents() != opened || r.s.Status().State != "blocked" {
							t.Fatalf("after the return: transitions %q, notifications %q, reasons %q (state %s); want %q, %q, %q, blocked",
								gt, gn, r.reasonEvents(), r.s.Status().State, transitions, notes, opened)
						}
						// It is still the wait the extension closes.
						r.feed(w.closes)
					case closed:
						if gn != notes || r.reasonEvents() != opened+" -"+key || r.s.Status().State != "idle" {
							t.Fatalf("after the return: notifications %q, reasons %q (state %s); want %q, %q, idle",
								gn, r.reasonEvents(), r.s.Status().State, notes, opened+" -"+key)
						}
						// Once closed, the extension's late close is nothing.
						r.feed(w.closes)
					}
					if got := r.reasonEvents(); got != opened+" -"+key || slices.ContainsFunc(r.s.Status().Reasons, func(x control.Reason) bool { return x.Key == key }) {
						t.Fatalf("after the extension closed it: reasons %q; want %q", got, opened+" -"+key)
					}
				})
			})
		}
	}
}

// The probe may repeat its session on the connection it has (it fell
// behind a wrapper that stopped reading and dropped events): the same
// session on the same connection keeps its waits and dialogs as they are.
func TestResyncOnTheSameConnectionIsNoNews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
		r.feed(control.ProbeConnected{PID: 7}, start)
		time.Sleep(2 * time.Second)
		dialog := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
		r.feed(control.AskStarted{FlowID: "f1", Title: "Which region?"}, dialog)
		time.Sleep(time.Minute)
		transitions, notes := r.got()
		opened := r.reasonEvents()

		again := start
		again.Reason = "reconnect"
		r.feed(again, dialog)
		time.Sleep(time.Minute)
		if gt, gn := r.got(); gt != transitions || gn != notes || r.reasonEvents() != opened {
			t.Fatalf("after the resync: transitions %q, notifications %q, reasons %q; want %q, %q, %q",
				gt, gn, r.reasonEvents(), transitions, notes, opened)
		}
		r.feed(control.UIPromptEnd{Kind: "confirm", Title: "Deploy now?"}, control.AskCompleted{FlowID: "f1"})
		if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
			t.Fatalf("after both closed: %+v", s)
		}
	})
}

// The probe closed its end and connected again at once: the new
// connection's repeat can arrive before the end of the old one (the
// server serves each on its own). That late end is no news: the waits and
// dialogs the repeat kept stay, and the probe still counts as connected.
func TestALateEndOfTheReplacedConnectionChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		defer r.m.Stop()
		start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
		r.feed(control.ProbeConnected{PID: 7, Conn: 1}, start)
		time.Sleep(2 * time.Second)
		dialog := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
		r.feed(control.AskStarted{FlowID: "f1", Title: "Which region?"}, dialog)
		time.Sleep(time.Minute)
		transitions, notes := r.got()
		opened := r.reasonEvents()

		again := start
		again.Reason = "reconnect"
		r.feed(control.ProbeConnected{PID: 7, Conn: 2}, again, dialog, control.ProbeDisconnected{PID: 7, Conn: 1})
		time.Sleep(time.Minute)
		if gt, gn := r.got(); gt != transitions || gn != notes || r.reasonEvents() != opened {
			t.Fatalf("after the late end: transitions %q, notifications %q, reasons %q; want %q, %q, %q",
				gt, gn, r.reasonEvents(), transitions, notes, opened)
		}
		// Still connected: the probe's word ends the run, not the screen.
		r.feed(control.UIPromptEnd{Kind: "confirm", Title: "Deploy now?"}, control.AskCompleted{FlowID: "f1"}, control.AgentStart{})
		time.Sleep(time.Minute)
		if s := r.s.Status(); s.State != "working" {
			t.Fatalf("after a run started: %+v; want working", s)
		}
	})
}

// A probe that comes back later than the wrapper holds what it had open
// (ProbeReturnGrace: a machine so busy that its hello is late) finds the
// pane idle: the waits and dialogs closed when the hold ended. Back as the
// same Pi in the same session, what Pi still has open is open again — the
// dialogs it repeats, the channel waits no kept event closes — and blocks
// the pane, without a second notification: the person was told. The
// extension's close still closes it.
func TestWhatAProbeBackLateStillHasOpenBlocksAgain(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	again := start
	again.Reason = "reconnect"
	dialog := control.UIPromptStart{Kind: "confirm", Title: "Deploy now?"}
	waits := append(channelWaits(t), channelWait{"Pi's dialog", dialog, control.UIPromptEnd{Kind: "confirm", Title: "Deploy now?"}})
	for _, w := range waits {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig()
				defer r.m.Stop()
				r.feed(control.ProbeConnected{PID: 7}, start)
				time.Sleep(2 * time.Second)
				r.feed(w.open)
				time.Sleep(time.Minute)
				_, notes := r.got()
				if s := r.s.Status(); s.State != "blocked" || notes == "" {
					t.Fatalf("the wait did not open: %+v, %q", s, notes)
				}

				r.feed(control.ProbeDisconnected{PID: 7})
				time.Sleep(ProbeReturnGrace + time.Second)
				if s := r.s.Status(); s.State != "idle" {
					t.Fatalf("past the hold: %s, want idle", s.State)
				}
				back := []control.Event{control.ProbeConnected{PID: 7}, again}
				if w.open == control.Event(dialog) {
					back = append(back, dialog) // the probe repeats its open dialogs
				}
				r.feed(back...)
				time.Sleep(time.Minute)
				if s := r.s.Status(); s.State != "blocked" || len(s.Reasons) != 1 {
					t.Fatalf("back as the same Pi: %+v, want blocked on the wait still open", s)
				}
				if _, gn := r.got(); gn != notes {
					t.Fatalf("back as the same Pi: notifications %q, want %q (no second)", gn, notes)
				}
				r.feed(w.closes)
				time.Sleep(time.Minute)
				if s := r.s.Status(); s.State != "idle" || len(s.Reasons) != 0 {
					t.Fatalf("after the extension closed it: %+v", s)
				}
			})
		})
	}
}

// Back late, as the same Pi, with the kept event that closed the wait
// while away (or in another session): nothing opens again, not even for a
// moment.
func TestWhatAProbeBackLateClosedMeanwhileStaysClosed(t *testing.T) {
	start := control.SessionStart{Reason: "startup", Mode: "tui", SessionFile: "/s.jsonl", SessionID: "sid", SessionSeq: 1}
	again := start
	again.Reason = "reconnect"
	other := again
	other.SessionSeq = 2
	for _, w := range channelWaits(t) {
		for _, back := range [][]control.Event{{control.ProbeConnected{PID: 7}, again, w.closes}, {control.ProbeConnected{PID: 7}, other}} {
			t.Run(w.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRig()
					defer r.m.Stop()
					r.feed(control.ProbeConnected{PID: 7}, start)
					time.Sleep(2 * time.Second)
					r.feed(w.open)
					time.Sleep(time.Minute)
					r.feed(control.ProbeDisconnected{PID: 7})
					time.Sleep(ProbeReturnGrace + time.Second)
					transitions, notes := r.got()
					r.feed(back...)
					time.Sleep(time.Minute)
					if gt, gn := r.got(); gt != transitions || gn != notes || r.s.Status().State != "idle" {
						t.Fatalf("back: transitions %q, notifications %q, state %s; want %q, %q, idle", gt, gn, r.s.Status().State, transitions, notes)
					}
				})
			})
		}
	}
}
