package signals

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// wait is a pi:waiting-for-user-input payload.
func wait(source, id string, waiting bool) string {
	w := "false"
	if waiting {
		w = "true"
	}
	return `{"source":"` + source + `","id":"` + id + `","waiting":` + w + `}`
}

// pi:waiting-for-user-input waits are aggregated by source and id
// (notifications-and-sentinel.md §18): the pane stays blocked until every
// open wait has cleared. One source can hold several waits at once (plan-md
// emits one per tool call, with the call's id), so a wait that ends must
// not end its siblings.
func TestWaitsAggregateBySourceAndID(t *testing.T) {
	const ev = control.EvWaitingForInput
	const plan = "plan-md:request_user_input"
	cases := []struct {
		name  string
		steps []step
	}{
		{"two waits of one source: the first to clear leaves the other", []step{
			{ev, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-2", true), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", false), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", false), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-2", false), "idle working blocked(input needed) working"},
		}},
		{"a repeated start is one wait; an unknown id clears nothing", []step{
			{ev, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-9", false), "idle working blocked(input needed)"},
			{ev, wait("other", "call-1", false), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", false), "idle working blocked(input needed) working"},
		}},
		// D3.2 #8 (D3.3 #8): two producers, cleared in the order they began.
		{"D3.2#8 plan-md and task-subagents", []step{
			{ev, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{ev, wait("task-subagents:launch-review", "call-2", true), "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", false), "idle working blocked(input needed)"},
			{ev, wait("task-subagents:launch-review", "call-2", false), "idle working blocked(input needed) working"},
		}},
		// D3.2 #9 (D3.3 #9): the marker blocks a settled run; a wait opens;
		// the next agent_start clears the marker but the wait holds the
		// pane blocked until it ends.
		{"D3.2#9 a wait outlives the marker it joined", []step{
			{control.EvAgentEnd, `{"stopReason":"stop","inputNeeded":true,"question":"` + q + `"}`, "idle working"},
			{control.EvAgentSettled, `{"idle":true,"inputNeeded":true,"question":"` + q + `"}`, "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{control.EvAgentStart, `{}`, "idle working blocked(input needed)"},
			{ev, wait(plan, "call-1", false), "idle working blocked(input needed) working"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"}, control.AgentStart{})
			r.expect(t, "idle working", "")
			r.run(t, c.steps)
			if s := r.s.Status(); s.State != "working" || len(s.Reasons) != 0 {
				t.Fatalf("after every wait cleared: %+v", s)
			}
		})
	}
}

// Seed 000 and 003: every question is told once. An extension that waits
// for the person says so on Pi's bus (pi:waiting-for-user-input, as
// plan-md's request_user_input does, or herdr:blocked) and then asks
// through one of Pi's dialogs, which Pi announces right after
// (ui_prompt_start, a microtask later). The wait turned the pane blocked
// and was told; its dialog is the same question, not a second one. A
// dialog of another extension once the wait is over is news again.
func TestTheDialogOfAWaitIsNotToldTwice(t *testing.T) {
	const plan = "plan-md:request_user_input"
	cases := []struct {
		name  string
		steps []step
		notes string
	}{
		{"a plan-md wait and its select dialog", []step{
			{control.EvWaitingForInput, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{control.EvUIPromptStart, `{"kind":"select","title":"Which approach should I take?"}`, "idle working blocked(input needed)"},
			{control.EvUIPromptEnd, `{"kind":"select","title":"Which approach should I take?"}`, "idle working blocked(input needed)"},
			{control.EvWaitingForInput, wait(plan, "call-1", false), "idle working blocked(input needed) working"},
			// Another extension's dialog, after the wait: told.
			{control.EvUIPromptStart, `{"kind":"confirm","title":"Commit these changes?"}`, "idle working blocked(input needed) working blocked(waiting for your answer)"},
		}, "input-needed,input-needed(Commit these changes?)"},
		// pi-herdr-integration, if still installed, mirrors the wait on
		// herdr:blocked from its own listener, which may run before the
		// probe's: the mirror opens the spell, told, and the wait joins it.
		{"a wait mirrored on herdr:blocked first, and its dialog", []step{
			{control.EvHerdrBlocked, `{"active":true,"label":"input needed"}`, "idle working blocked(input needed)"},
			{control.EvWaitingForInput, wait(plan, "call-1", true), "idle working blocked(input needed)"},
			{control.EvUIPromptStart, `{"kind":"select","title":"Which approach should I take?"}`, "idle working blocked(input needed)"},
			{control.EvUIPromptEnd, `{"kind":"select","title":"Which approach should I take?"}`, "idle working blocked(input needed)"},
			{control.EvHerdrBlocked, `{"active":false}`, "idle working blocked(input needed)"},
			{control.EvWaitingForInput, wait(plan, "call-1", false), "idle working blocked(input needed) working"},
		}, "input-needed"},
		// The same mirror of a reply's question (pi-herdr-integration
		// reports the sentinel too): no wait of an extension, so a dialog
		// that opens under it is news, as under the question itself.
		{"a herdr:blocked with no wait, and a dialog", []step{
			{control.EvHerdrBlocked, `{"active":true,"label":"input needed"}`, "idle working blocked(input needed)"},
			{control.EvUIPromptStart, `{"kind":"confirm","title":"Commit these changes?"}`, "idle working blocked(input needed)"},
		}, "input-needed,input-needed(Commit these changes?)"},
		{"a wait whose dialog closes after it", []step{
			{control.EvWaitingForInput, wait(plan, "call-2", true), "idle working blocked(input needed)"},
			{control.EvUIPromptStart, `{"kind":"input","title":"Name the new module?"}`, "idle working blocked(input needed)"},
			{control.EvWaitingForInput, wait(plan, "call-2", false), "idle working blocked(input needed)"},
			{control.EvUIPromptEnd, `{"kind":"input","title":"Name the new module?"}`, "idle working blocked(input needed) working"},
		}, "input-needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"}, control.AgentStart{})
			r.run(t, c.steps)
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
		})
	}
}

// A wait of an extension on Pi's bus (pi:waiting-for-user-input) is a
// thing of its own to act on, as a pi-ask question or a permission prompt
// is: one that opens while the pane is blocked already — under a reply's
// question, a script's wait, a pi-ask flow — is told by itself, once, as
// a wait that turns the pane blocked is; the dialog it then asks in is its
// question, not told again while it is open. A wait opened again after it
// closed is another wait. In a spell told for a wait (or its mirror on
// herdr:blocked) a wait that joins was told with it: the notification
// would say nothing new.
func TestAWaitThatOpensWhileBlockedIsToldByItself(t *testing.T) {
	const review = "task-subagents:launch-review"
	dialog := []step{
		{control.EvUIPromptStart, `{"kind":"select","title":"Launch the review?"}`, ""},
		{control.EvUIPromptEnd, `{"kind":"select","title":"Launch the review?"}`, ""},
	}
	waitOn := func(id string) step { return step{control.EvWaitingForInput, wait(review, id, true), ""} }
	waitOff := func(id string) step { return step{control.EvWaitingForInput, wait(review, id, false), ""} }
	cases := []struct {
		name  string
		open  func(r *rig)
		steps []step
		notes string
	}{
		{"under a reply's question", func(r *rig) { r.feed(blockedReply...) },
			append([]step{waitOn("r-1")}, dialog...), "input-needed(" + q + "),input-needed"},
		{"under a script's wait", func(r *rig) { r.wait(t, control.WaitStart, "42", "approve the deploy") },
			append([]step{waitOn("r-1")}, dialog...), "input-needed(approve the deploy),input-needed"},
		{"under a pi-ask question", func(r *rig) { r.feed(control.AskStarted{FlowID: "f1", Title: "Which region?"}) },
			[]step{waitOn("r-1")}, "ask-started(Which region?),input-needed"},
		{"repeated, then closed and opened again", func(r *rig) { r.feed(blockedReply...) },
			[]step{waitOn("r-1"), waitOn("r-1"), waitOff("r-1"), waitOn("r-1")}, "input-needed(" + q + "),input-needed,input-needed"},
		{"joining a spell a wait opened", func(r *rig) { r.feed(control.WaitingForInput{Source: "plan-md", ID: "c1", Waiting: true}) },
			append([]step{waitOn("r-1")}, dialog...), "input-needed"},
		{"joining a spell its mirror on herdr:blocked opened", func(r *rig) { r.feed(control.HerdrBlocked{Active: true, Label: "input needed"}) },
			append([]step{waitOn("r-1")}, dialog...), "input-needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			c.open(r)
			for _, st := range c.steps {
				r.feed(parsed(t, st.name, st.payload))
			}
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
			if s := r.s.Status(); s.State != "blocked" {
				t.Fatalf("state %s, want blocked", s.State)
			}
		})
	}
}

// A reply that asks while the pane is blocked already — on a wait a script
// holds (`herdr-pi waiting start`, say a deploy hook), which keeps it
// blocked through Pi's whole run — is a question of its own: the person
// must hear of it, once, though the pane's colour does not change.
func TestAQuestionAskedWhileBlockedOnAWaitIsTold(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	if err := r.s.Wait(control.WaitRequest{Action: control.WaitStart, Source: "deploy-hook", ID: "42", Label: "approve the deploy"}); err != nil {
		t.Fatal(err)
	}
	r.feed(blockedReply...)
	r.expect(t, "idle blocked(approve the deploy)", "input-needed(approve the deploy),input-needed("+q+")")
	// The same question read again (the settle's, then the file's) is
	// not told twice.
	r.s.SessionSentinel(session.Sentinel{Open: true, File: "/s.jsonl", EntryID: "a1", Live: true})
	r.expect(t, "idle blocked(approve the deploy)", "input-needed(approve the deploy),input-needed("+q+")")
}

// pi-herdr-integration, if still installed, reports the reply's question
// on herdr:blocked from its own agent_settled handler, which may run
// before the probe's: its herdr:blocked opens the spell, told, and the
// probe's word on the same question joins it. One question, one
// notification.
func TestAQuestionMirroredOnHerdrBlockedFirstIsToldOnce(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"},
		control.AgentStart{}, control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q},
		control.HerdrBlocked{Active: true, Label: "input needed"},
		control.AgentSettled{Idle: true, InputNeeded: true, Question: q})
	r.expect(t, "idle working blocked(input needed)", "input-needed")
}

// Through a spell that a script's wait holds, each reply that asks is its
// own question, told once, even when it asks in the same words as the one
// before; a run that leaves the same reply asking (an extension's run that
// wrote no reply) asks nothing new. The probe names the reply that asks.
func TestEachReplyThatAsksUnderAWaitIsToldOnce(t *testing.T) {
	r := newRig()
	defer r.m.Stop()
	r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
	if err := r.s.Wait(control.WaitRequest{Action: control.WaitStart, Source: "deploy-hook", ID: "42", Label: "approve the deploy"}); err != nil {
		t.Fatal(err)
	}
	ask := func(entry string) {
		r.feed(control.AgentStart{},
			control.AgentEnd{StopReason: "stop", InputNeeded: true, Question: q, QuestionEntry: entry},
			control.AgentSettled{Idle: true, InputNeeded: true, Question: q, QuestionEntry: entry})
	}
	ask("a1")
	r.expect(t, "idle blocked(approve the deploy)", "input-needed(approve the deploy),input-needed("+q+")")
	ask("a2") // the answer's reply asks again, in the same words
	r.expect(t, "idle blocked(approve the deploy)", "input-needed(approve the deploy),input-needed("+q+"),input-needed("+q+")")
	ask("a2") // a run that wrote no reply: a2 still asks
	r.expect(t, "idle blocked(approve the deploy)", "input-needed(approve the deploy),input-needed("+q+"),input-needed("+q+")")
}
