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

// unblocker is a Sink that wants to hear when the agent stops waiting for
// the person ([Notifier.Unblocked]).
type unblocker interface{ Unblocked() }

// Triggers decides which of the state machine's events the person hears
// about:
//   - the agent turning blocked, once per blocked spell whatever keeps it
//     blocked — unless what opened the spell is Restored (a reload, resume
//     or restart of a session that already waited: the person was told);
//   - a dialog of Pi's that opens while the agent is blocked already, or
//     opens over another (Pi's status channel then names the newer), when
//     it asks what the spell has not told yet: Pi shows it in place of its
//     editor, so it is what the person finds on switching to the pane, and
//     the last notification names it — but not while a pi-ask flow or a
//     permission prompt told of is open: that dialog is the flow's or the
//     prompt's own, nor while a pi:waiting-for-user-input wait is open:
//     that extension asks through it, and the wait was told;
//   - a wait a script opens (herdr-pi waiting start) while the agent is
//     blocked already, once: a new thing to act on;
//   - a sentinel that asks anew while the agent is blocked already: another
//     reply of the session file ends with the marker; and a reply that asks
//     while the agent is blocked on something else (a wait a script
//     holds), but for a spell told for an extension's wait on Pi's bus;
//   - a pi-ask flow or a permission prompt, once per id while it is open,
//     also when it opens while the agent is blocked already; its close
//     lets the same id be told again — but not the one whose mirror on
//     herdr:blocked (pi-terminal-notifications, if still installed) turned
//     the agent blocked just before and was told;
//   - a wait of an extension on Pi's bus (pi:waiting-for-user-input) that
//     opens while the agent is blocked already, once, by itself; the dialog
//     it asks in is not told again while it is open;
//   - a run that ended on its own: failed always, finished only when it
//     ran at least the finished-after duration. Aborted runs are silent,
//     and a run that ends asking (the sentinel open) is told as blocked;
//     one that ends while the agent is blocked on something else (a
//     script's wait) is told as it would be otherwise.
//
// It is the machine's sink (or one of them): events come one at a time, in
// order. It is not safe for concurrent use.
type Triggers struct {
	sink          Sink
	finishedAfter time.Duration
	current       state.State
	spells        int
	dialogs       int
	// asked holds the questions told in the current blocked spell (nil
	// while not blocked).
	asked map[string]struct{}
	// announced holds the pi-ask and permission reasons told and still
	// open, by key.
	announced map[string]Kind
	// byWait: the current spell was told for a wait of an extension on
	// Pi's bus (pi:waiting-for-user-input, or a herdr:blocked), which says
	// no question; waits holds the pi:waiting-for-user-input waits open in
	// the spell, by key.
	byWait bool
	waits  map[string]struct{}
	// mirror is the label of the herdr:blocked that opened the current
	// spell and was told, until a pi-ask question or permission prompt
	// asking in the same words takes it: pi-terminal-notifications (or
	// pi-notify), if still installed, mirrors the one that turns Pi
	// blocked on herdr:blocked, labelled as it, from its own listener of
	// the same event, which may run before the probe's.
	mirror string
	// unsure: the current spell was told for a herdr:blocked labelled
	// "input needed", pi-herdr-integration's mirror of either a reply's
	// question or a wait, until the probe's word on one of them says
	// which (see mirrored).
	unsure bool
	// asking: the sentinel is open (a reply's question): a run that ends
	// with it open ended asking, and is told as blocked.
	asking bool
	// hushed, when set, is asked before each notification: true keeps it
	// from the sink (see HushWhile).
	hushed func() bool
}

// HushWhile has every notification asked first whether it should be
// kept back: while hushed says so, the triggers follow the machine as
// ever but tell the sink nothing (a closing reason is still passed on).
// A wrapper whose agent runs another herdr-pi wrapper sees that one's
// agent on its own screen; while that one tells the person, a second
// notification of the same question would be noise. Not safe to call
// while events arrive.
func (t *Triggers) HushWhile(hushed func() bool) { t.hushed = hushed }

// tell hands ev to the sink unless the triggers are hushed.
func (t *Triggers) tell(ev Event) {
	if t.hushed != nil && t.hushed() {
		return
	}
	t.sink.Notify(ev)
}

// NewTriggers tells sink. A run that completes in less than finishedAfter
// gives no "finished" notification (0: every run does).
func NewTriggers(sink Sink, finishedAfter time.Duration) *Triggers {
	return &Triggers{sink: sink, finishedAfter: finishedAfter, current: state.Unknown, announced: map[string]Kind{}, waits: map[string]struct{}{}}
}

// StateEvent takes one event of the machine.
func (t *Triggers) StateEvent(e state.Event) {
	switch e.Kind {
	case state.EventOpened:
		if e.Reason.Kind == state.KindWait {
			t.waits[e.Reason.Key] = struct{}{}
		}
		if e.Reason.Kind == state.KindSentinel {
			t.asking = true
		}
		// One that makes the agent blocked is told by the transition right
		// after it; this is for one that opens while blocked already.
		if t.current == state.Blocked && !t.mirrored(*e.Reason) {
			t.announce(*e.Reason)
			t.dialog(*e.Reason)
			t.joined(*e.Reason)
			t.scripted(*e.Reason)
			t.waited(*e.Reason)
		}
	case state.EventAsked:
		if t.current == state.Blocked {
			t.dialog(*e.Reason)
			t.question(*e.Reason)
		}
	case state.EventClosed:
		delete(t.waits, e.Reason.Key)
		if e.Reason.Kind == state.KindSentinel {
			t.asking = false
		}
		if k, ok := t.announced[e.Reason.Key]; ok {
			delete(t.announced, e.Reason.Key)
			t.sink.Resolved(Event{Kind: k, Key: e.Reason.Key})
		}
	case state.EventTransition:
		if t.current == state.Blocked && e.To != state.Blocked {
			if u, ok := t.sink.(unblocker); ok {
				u.Unblocked()
			}
		}
		t.current = e.To
		t.asked, t.byWait, t.mirror, t.unsure = nil, false, "", false
		if e.To != state.Blocked || e.Reason == nil {
			t.waits = map[string]struct{}{}
			return
		}
		t.asked = map[string]struct{}{}
		if e.Reason.Restored {
			return
		}
		t.byWait = e.Reason.Kind == state.KindWait || e.Reason.Kind == state.KindHerdrBlocked
		if e.Reason.Kind == state.KindHerdrBlocked {
			t.mirror = e.Reason.Question
			t.unsure = e.Reason.Question == ""
		}
		t.asked[e.Reason.Question] = struct{}{}
		if e.Reason.Entry != "" {
			t.asked[entryKey(e.Reason.Entry)] = struct{}{}
		}
		if _, keyed := itemKind(e.Reason.Kind); keyed {
			t.announce(*e.Reason)
			return
		}
		t.spells++
		t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: e.Reason.Question})
	case state.EventRunFinished:
		if t.current == state.Blocked && t.asking {
			// It ended asking: told as blocked. A run that ends while
			// the pane waits on something else (a script's wait) is
			// news of its own.
			return
		}
		key := fmt.Sprintf("run@%d", e.At.UnixNano())
		switch e.Outcome {
		case state.Completed:
			if e.Duration >= t.finishedAfter {
				t.tell(Event{Kind: Finished, Key: key})
			}
		case state.Errored:
			t.tell(Event{Kind: Failed, Key: key, Error: runError(e)})
		}
	}
}

// mirrored says whether r, opening while blocked, is what the
// herdr:blocked that opened the spell mirrored, told with it: the first
// reply's question or extension's wait the probe hears after
// pi-herdr-integration's "input needed". A question mirrored so makes the
// spell one told for a question, not for a wait: a wait that opens later
// in it is news (waited), and so is a dialog.
func (t *Triggers) mirrored(r state.Reason) bool {
	if !t.unsure || r.Restored {
		return false
	}
	switch r.Kind {
	case state.KindSentinel:
		t.unsure, t.byWait = false, false
		if r.Entry != "" {
			t.asked[entryKey(r.Entry)] = struct{}{}
		}
		return true
	case state.KindWait:
		t.unsure = false
		return true
	}
	return false
}

// dialog tells a dialog of Pi's shown while blocked (opened then, or asking
// anew), unless the spell told its question already — the first dialog
// showing again once the one over it is answered is no news.
func (t *Triggers) dialog(r state.Reason) {
	if (r.Kind != state.KindUIPrompt && r.Kind != state.KindProgramStatus) || r.Restored || t.asked == nil {
		return
	}
	// pi-ask and pi-permission-system ask through Pi's dialogs, which Pi
	// announces right after their own event: while a flow or prompt told
	// of is open, the dialog on screen is its, and telling it again would
	// be two notifications for one question (seed 003).
	if len(t.announced) > 0 {
		return
	}
	// So do the extensions that say on Pi's bus that they wait for the
	// person (pi:waiting-for-user-input: plan-md's request_user_input,
	// task-subagents' reviews) before they ask in a dialog: while such a
	// wait is open the dialog is its question, and the wait was told — by
	// itself (the spell's notification, or waited), or by the herdr:blocked
	// that pi-herdr-integration emits for it first.
	if len(t.waits) > 0 {
		return
	}
	if _, told := t.asked[r.Question]; told {
		return
	}
	t.asked[r.Question] = struct{}{}
	t.dialogs++
	t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("dialog#%d", t.dialogs), Question: r.Question})
}

// question tells a sentinel that asks anew while blocked: another reply of
// the session file ends with the marker (state.Reason.Entry), a question
// the spell has not told — the agent asked again in a run the pane stayed
// blocked through.
func (t *Triggers) question(r state.Reason) {
	if r.Kind != state.KindSentinel || r.Entry == "" || r.Restored || t.asked == nil {
		return
	}
	if _, told := t.asked[entryKey(r.Entry)]; told {
		return
	}
	t.asked[entryKey(r.Entry)] = struct{}{}
	t.spells++
	t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: r.Question})
}

// joined tells a reply that asks while the agent is blocked already on
// something else — a wait a script holds keeps the pane blocked through
// the whole run that asks — once: the pane's colour does not change, so
// only the notification says there is a question now. Not in a spell told
// for a wait of an extension on Pi's bus: pi-herdr-integration, if
// installed, reports the reply's question on herdr:blocked itself, and
// the probe's word on the same question follows.
func (t *Triggers) joined(r state.Reason) {
	if r.Kind != state.KindSentinel || r.Restored || t.asked == nil || t.byWait {
		return
	}
	if _, told := t.asked[entryKey(r.Entry)]; r.Entry != "" && told {
		return
	}
	if _, told := t.asked[r.Question]; r.Entry == "" && r.Question != "" && told {
		return
	}
	if r.Entry != "" {
		t.asked[entryKey(r.Entry)] = struct{}{}
	}
	t.asked[r.Question] = struct{}{}
	t.spells++
	t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: r.Question})
}

// scripted tells a wait a script opens (herdr-pi waiting start) while the
// agent is blocked already, once: it is a new thing the person must act on,
// and the pane's colour does not change. Named by its label when it was
// given one (Reason.Question). Starting the same wait again opens nothing
// (the state machine relabels it), so it is not told again; stopped and
// started anew, it is another wait.
func (t *Triggers) scripted(r state.Reason) {
	if r.Kind != state.KindHook || r.Restored || t.asked == nil {
		return
	}
	if r.Question != "" {
		t.asked[r.Question] = struct{}{}
	}
	t.spells++
	t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: r.Question})
}

// waited tells a wait of an extension on Pi's bus
// (pi:waiting-for-user-input) that opens while the agent is blocked
// already, once: a thing of its own to act on, as a pi-ask question is,
// told by itself whether it turns the pane blocked or joins a spell (its
// label, "input needed", says no more than the title, so the notification
// names nothing). The dialog it asks in next is its question, not told
// again while it is open (see dialog). Not in a spell told for such a wait
// or its mirror on herdr:blocked: that notification was its, or said the
// same.
func (t *Triggers) waited(r state.Reason) {
	if r.Kind != state.KindWait || r.Restored || t.asked == nil || t.byWait {
		return
	}
	t.spells++
	t.tell(Event{Kind: InputNeeded, Key: fmt.Sprintf("blocked#%d", t.spells), Question: r.Question})
}

// entryKey is how a sentinel's reply is kept among the questions a spell
// told, apart from any question's text.
func entryKey(entry string) string { return "\x00entry:" + entry }

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
	if t.mirror != "" && r.Question == t.mirror {
		// Its mirror on herdr:blocked came first and was told: the same
		// question. Held as told, so its dialog is not told either.
		t.mirror = ""
		return
	}
	t.tell(Event{Kind: kind, Key: r.Key, Question: r.Question})
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

// lengthError says why a run that ran out of length stopped: Pi gives
// such a reply no error message.
const lengthError = "the reply was cut off at the model's output limit"

// runError is why the failed run of e stopped, as far as anyone said.
func runError(e state.Event) string {
	if e.Error == "" && e.StopReason == "length" {
		return lengthError
	}
	return e.Error
}
