package notify

import (
	"fmt"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// Sink is what [Triggers] tell: a [Notifier], or whatever records them.
type Sink interface {
	Notify(Event)
	Resolved(Event)
}

// Triggers decides which of the state machine's events the person hears
// about:
//   - the agent turning blocked, once per blocked spell whatever keeps it
//     blocked — unless what opened the spell is Restored (a reload, resume
//     or restart of a session that already waited: the person was told) —
//     and again when a dialog opens over another in the spell and asks
//     what the spell has not told yet: the toast names what the person
//     finds on switching to the pane;
//   - a pi-ask flow or a permission prompt, once per id while it is open,
//     also when it opens while the agent is blocked already; its close
//     lets the same id be told again;
//   - a run that ended on its own: failed always, finished only when it
//     ran at least the finished-after duration. Aborted runs are silent,
//     and a run that ends waiting for the person is told as blocked.
//
// It is the machine's sink (or one of them): events come one at a time, in
// order. It is not safe for concurrent use.
type Triggers struct {
	sink          Sink
	finishedAfter time.Duration
	current       state.State
	spells        int
	// asked holds the questions told in the current blocked spell; nil
	// when the spell was not told as one (a Restored opener, a pi-ask flow
	// or permission prompt, which are told by their ids).
	asked map[string]struct{}
	// announced holds the pi-ask and permission reasons told and still
	// open, by key.
	announced map[string]Kind
}

// NewTriggers tells sink. A run that completes in less than finishedAfter
// gives no "finished" notification (0: every run does).
func NewTriggers(sink Sink, finishedAfter time.Duration) *Triggers {
	return &Triggers{sink: sink, finishedAfter: finishedAfter, current: state.Unknown, announced: map[string]Kind{}}
}

// StateEvent takes one event of the machine.
func (t *Triggers) StateEvent(e state.Event) {
	switch e.Kind {
	case state.EventOpened:
		// One that makes the agent blocked is told by the transition right
		// after it; this is for one that opens while blocked already.
		if t.current == state.Blocked {
			t.announce(*e.Reason)
		}
	case state.EventClosed:
		if k, ok := t.announced[e.Reason.Key]; ok {
			delete(t.announced, e.Reason.Key)
			t.sink.Resolved(Event{Kind: k, Key: e.Reason.Key})
		}
	case state.EventTransition:
		t.current = e.To
		t.asked = nil // a spell the person was not told of tells no dialog over its first either
		if e.To != state.Blocked || e.Reason == nil || e.Reason.Restored {
			return
		}
		if _, keyed := itemKind(e.Reason.Kind); keyed {
			t.announce(*e.Reason)
			return
		}
		t.spells++
		t.asked = map[string]struct{}{e.Reason.Question: {}}
		t.sink.Notify(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: e.Reason.Question})
	case state.EventAsked:
		// Another dialog over the one the spell was told about: the person
		// will find it, not the first, on the pane. One they were told of
		// already (the first again, once the newer is answered) is no news.
		if t.current != state.Blocked || t.asked == nil {
			return
		}
		if _, told := t.asked[e.Reason.Question]; told {
			return
		}
		t.asked[e.Reason.Question] = struct{}{}
		t.sink.Notify(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d/%d", t.spells, len(t.asked)), Question: e.Reason.Question})
	case state.EventRunFinished:
		if t.current == state.Blocked {
			return
		}
		key := fmt.Sprintf("run@%d", e.At.UnixNano())
		switch e.Outcome {
		case state.Completed:
			if e.Duration >= t.finishedAfter {
				t.sink.Notify(Event{Kind: Finished, Key: key})
			}
		case state.Errored:
			t.sink.Notify(Event{Kind: Failed, Key: key})
		}
	}
}

// announce tells a pi-ask flow or permission prompt once while it is open.
func (t *Triggers) announce(r state.Reason) {
	kind, keyed := itemKind(r.Kind)
	if !keyed || r.Restored {
		return
	}
	if _, done := t.announced[r.Key]; done {
		return
	}
	t.announced[r.Key] = kind
	t.sink.Notify(Event{Kind: kind, Key: r.Key, Question: r.Question})
}

// itemKind is the notification for reasons told one by one, by their id
// (notifications-and-sentinel.md §10).
func itemKind(k state.Kind) (Kind, bool) {
	switch k {
	case state.KindPermission:
		return PermissionNeeded, true
	case state.KindAsk:
		return AskStarted, true
	}
	return 0, false
}
