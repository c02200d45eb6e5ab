package signals

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// step is one bus event as the probe forwards it (name and raw payload),
// and the transitions the pane must have reported once it was handled.
type step struct {
	name, payload string
	want          string
}

// run parses each step's payload the way the control server does and
// feeds it to the rig, checking the transitions after every step: a
// reason closed too early or never closed shows at the step it happens.
func (r *rig) run(t *testing.T, steps []step) {
	t.Helper()
	for i, s := range steps {
		ev, err := control.ParseEvent(s.name, json.RawMessage(s.payload))
		if err != nil {
			t.Fatalf("step %d: %s %s: %v", i, s.name, s.payload, err)
		}
		r.s.ProbeEvent(ev)
		if got, _ := r.got(); got != s.want {
			t.Fatalf("step %d (%s %s): transitions %q, want %q", i, s.name, s.payload, got, s.want)
		}
	}
}

// Payloads of notifications-and-sentinel.md D1.5. A forwarded prompt comes
// from a child session (Worker); the parent answers it, emits one
// forwarded_decision with the same requestId, and the child later emits
// its own permissions:decision when its gate consumes the answer.
const (
	fwdPrompt = `{"agentName":"Worker","forwarding":{"requesterAgentName":"Worker","requesterSessionId":"child-session"},` +
		`"message":"Allow git status?","requestId":"%s","surface":"bash","value":"%s"}`
	fwdDecision = `{"forwarding":{"requesterAgentName":"Worker","requesterSessionId":"child-session"},"requestId":"%s",` +
		`"responderSessionId":"parent-session","respondedAt":1700000000000,"resolution":"user_approved","result":"allow"}`
	directPrompt = `{"agentName":"Worker","forwarding":null,"message":"Allow git status?","requestId":"%s","surface":"bash","value":"%s"}`
	// childDecision is the child's own decision for "git status", which
	// also reaches the parent's bus.
	childDecision = `{"agentName":"Worker","resolution":"user_approved","surface":"bash","value":"git status"}`
)

// The permission vectors of notifications-and-sentinel.md D1.5 (#2–#8) and
// the correlation rules of §9, through the real parser, Signals and the
// state machine. blocked(label) is the reference's {true,label}, the
// idle after it its {false}.
func TestPermissionRuntimeVectors(t *testing.T) {
	const (
		idle     = "idle"
		byWorker = "idle blocked(Permission required by Worker)"
		direct   = "idle blocked(Permission required)"
	)
	cases := []struct {
		name  string
		steps []step
		notes string
	}{
		{"D1.5#2 direct prompt, then its decision", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "direct-request", "git status"), direct},
			{control.EvPermissionDecided, childDecision, direct + " idle"},
		}, "permission-needed(Permission required)"},
		{"D1.5#3 external-directory decision closes the sole bash prompt", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "external-directory-request", "find ~/.pi -name package.json"), direct},
			{control.EvPermissionDecided, `{"agentName":"Worker","resolution":"user_approved_for_session","surface":"external_directory","value":"find ~/.pi -name package.json"}`, direct + " idle"},
		}, "permission-needed(Permission required)"},
		{"D1.5#4 forwarded prompt, a decision for another id, then its forwarded decision", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "other-request"), byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), byWorker + " idle"},
			// The child's own decision comes later: it finds no direct
			// prompt here, so it neither blocks again nor clears twice.
			{control.EvPermissionDecided, childDecision, byWorker + " idle"},
			// Nor does a repeated forwarded decision.
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), byWorker + " idle"},
		}, "permission-needed(Permission required by Worker)"},
		{"D1.5#5 a direct decision never closes a forwarded prompt", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "direct-request", "git status"), direct},
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git push"), direct},
			{control.EvPermissionDecided, childDecision, direct},
			{control.EvPermissionDecided, `{"agentName":"Worker","resolution":"user_approved","surface":"bash","value":"git push"}`, direct},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), direct + " idle"},
		}, "permission-needed(Permission required),permission-needed(Permission required by Worker)"},
		{"D1.5#6 two forwarded prompts, the first decision twice, a late child decision between", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-a", "git status"), byWorker},
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-b", "git status"), byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-a"), byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-a"), byWorker},
			// a's child consumes its answer: b, which looks the same, stays.
			{control.EvPermissionDecided, childDecision, byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-b"), byWorker + " idle"},
		}, "permission-needed(Permission required by Worker),permission-needed(Permission required by Worker)"},
		{"the child's late decision does not close the parent's own prompt", []step{
			{control.EvPermissionPrompt, `{"requestId":"parent-own","surface":"read","value":"/etc/hosts"}`, direct},
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), direct},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), direct},
			{control.EvPermissionDecided, childDecision, direct},
			{control.EvPermissionDecided, `{"resolution":"user_approved","surface":"read","value":"/etc/hosts"}`, direct + " idle"},
		}, "permission-needed(Permission required),permission-needed(Permission required by Worker)"},
		{"D1.5#7 the same forwarded prompt twice is one reason", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), byWorker},
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), byWorker},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), byWorker + " idle"},
		}, "permission-needed(Permission required by Worker)"},
		{"D1.5#8 shutdown clears; a late forwarded decision changes nothing", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), byWorker},
			{control.EvSessionShutdown, `{"reason":"quit"}`, byWorker + " idle"},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), byWorker + " idle"},
			{control.EvPermissionDecided, childDecision, byWorker + " idle"},
		}, "permission-needed(Permission required by Worker)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			r.expect(t, idle, "")
			r.run(t, c.steps)
			if _, notes := r.got(); notes != c.notes {
				t.Fatalf("notifications %q, want %q", notes, c.notes)
			}
		})
	}
}

// Seed 003: "session shutdown clears any remaining state" — for a session
// Pi replaces in the same process (/reload, /new, /resume, /fork) too, not
// only for a quit. What was open stays until the next session starts (no
// blip of idle between the two), then it is gone: the pane is idle, a
// decision for the old prompt changes nothing, and the same flowId or
// requestId in the new session is news again (notifications-and-sentinel.md
// §10, the reload row).
func TestASessionReplacedClearsAsksAndPrompts(t *testing.T) {
	const (
		ask    = `{"flowId":"ask-1","title":"Choose deployment"}`
		before = "idle blocked(Choose deployment)"
		told   = "ask-started(Choose deployment),permission-needed(Permission required by Worker)"
	)
	for _, reason := range []string{"reload", "new", "resume", "fork"} {
		t.Run(reason, func(t *testing.T) {
			r := newRig()
			defer r.m.Stop()
			r.feed(control.ProbeConnected{PID: 1}, control.SessionStart{Reason: "startup", Mode: "tui"})
			r.run(t, []step{
				{control.EvAskStarted, ask, before},
				{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), before},
				{control.EvSessionShutdown, `{"reason":"` + reason + `"}`, before},
				{control.EvSessionStart, `{"reason":"` + reason + `","mode":"tui"}`, before + " idle"},
				{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), before + " idle"},
				{control.EvAskCompleted, `{"flowId":"ask-1"}`, before + " idle"},
				{control.EvAskStarted, ask, before + " idle blocked(Choose deployment)"},
				{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git status"), before + " idle blocked(Choose deployment)"},
			})
			if _, notes := r.got(); notes != told+","+told {
				t.Fatalf("notifications %q, want %q twice", notes, told)
			}
		})
	}
}

// Seed 003: one notification per event. pi-ask and pi-permission-system
// show their question through Pi's own dialogs (ctx.ui.custom, select,
// confirm), and Pi 1.6.0 announces each such dialog with ui_prompt_start
// right after the extension's own event. That dialog is the ask's or the
// prompt's, told already: a second "needs your input" for it would be two
// notifications for one question. A dialog of another extension, once the
// prompt is decided, is news again.
func TestTheDialogOfAnAskOrPromptIsNotToldTwice(t *testing.T) {
	const (
		perm   = "permission-needed(Permission required)"
		fwd    = "permission-needed(Permission required by Worker)"
		ask    = "ask-started(Choose deployment)"
		direct = "idle working blocked(Permission required)"
	)
	cases := []struct {
		name  string
		steps []step
		notes string
	}{
		{"a direct prompt and its select dialog", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(directPrompt, "direct-request", "git status"), direct},
			{control.EvUIPromptStart, `{"kind":"select","title":"Allow git status?"}`, direct},
			{control.EvUIPromptEnd, `{"kind":"select","title":"Allow git status?"}`, direct},
			{control.EvPermissionDecided, childDecision, direct + " working"},
		}, perm},
		{"a forwarded prompt and its confirm dialog in the parent", []step{
			{control.EvPermissionPrompt, fmt.Sprintf(fwdPrompt, "forwarded-request", "git push"), "idle working blocked(Permission required by Worker)"},
			{control.EvUIPromptStart, `{"kind":"confirm","title":"Worker asks: git push"}`, "idle working blocked(Permission required by Worker)"},
			{control.EvUIPromptEnd, `{"kind":"confirm","title":"Worker asks: git push"}`, "idle working blocked(Permission required by Worker)"},
			{control.EvPermissionForward, fmt.Sprintf(fwdDecision, "forwarded-request"), "idle working blocked(Permission required by Worker) working"},
		}, fwd},
		{"a pi-ask flow and its custom dialog, which has no title", []step{
			{control.EvAskStarted, `{"flowId":"ask-1","title":"Choose deployment"}`, "idle working blocked(Choose deployment)"},
			{control.EvUIPromptStart, `{"kind":"custom"}`, "idle working blocked(Choose deployment)"},
			{control.EvUIPromptEnd, `{"kind":"custom"}`, "idle working blocked(Choose deployment)"},
			{control.EvAskCompleted, `{"flowId":"ask-1"}`, "idle working blocked(Choose deployment) working"},
			// Another extension's dialog, after the flow: told.
			{control.EvUIPromptStart, `{"kind":"confirm","title":"Commit these changes?"}`, "idle working blocked(Choose deployment) working blocked(waiting for your answer)"},
		}, ask + ",input-needed(Commit these changes?)"},
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
