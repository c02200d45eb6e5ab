package permissions

import (
	"encoding/json"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func prompt(t *testing.T, js string) Prompt {
	t.Helper()
	p, ok := ParsePrompt(json.RawMessage(js))
	if !ok {
		t.Fatalf("ParsePrompt(%s) rejected", js)
	}
	return p
}

func decision(t *testing.T, js string) Decision {
	t.Helper()
	d, ok := ParseDecision(json.RawMessage(js))
	if !ok {
		t.Fatalf("ParseDecision(%s) rejected", js)
	}
	return d
}

func forwarded(t *testing.T, requestID string) ForwardedDecision {
	t.Helper()
	js := `{"forwarding":{"requesterAgentName":"Worker","requesterSessionId":"child-session"},"requestId":"` + requestID +
		`","responderSessionId":"parent-session","respondedAt":1700000000000,"resolution":"user_approved","result":"allow"}`
	d, ok := ParseForwardedDecision(json.RawMessage(js))
	if !ok {
		t.Fatalf("ParseForwardedDecision(%s) rejected", js)
	}
	return d
}

// D is the default decision of reference D1.4.
const D = `{"agentName":"Worker","resolution":"user_approved","surface":"bash","value":"git status"}`

func wantResolved(t *testing.T, got string, ok bool, want string) {
	t.Helper()
	if want == "" {
		if ok {
			t.Fatalf("resolved %q, want nothing", got)
		}
		return
	}
	if !ok || got != want {
		t.Fatalf("resolved %q (ok=%v), want %q", got, ok, want)
	}
}

// The vectors of reference D1.4, in order.
func TestVector1PolicyResultsNeverResolve(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"agentName":"Worker","requestId":"direct-request","surface":"bash","value":"git status"}`))
	id, ok := tr.ResolveDecision(decision(t, `{"agentName":"Worker","resolution":"policy_allow","surface":"bash","value":"git status"}`))
	wantResolved(t, id, ok, "")
	id, ok = tr.ResolveDecision(decision(t, D))
	wantResolved(t, id, ok, "direct-request")
}

func TestVector2MatchesBySurfaceAndValue(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"requestId":"request-bash","surface":"bash","value":"git status"}`))
	tr.Track(prompt(t, `{"requestId":"request-read","surface":"read","value":"/tmp/x/file"}`))
	id, ok := tr.ResolveDecision(decision(t, `{"resolution":"user_approved","surface":"read","value":"/tmp/x/file"}`))
	wantResolved(t, id, ok, "request-read")
	id, ok = tr.ResolveDecision(decision(t, D))
	wantResolved(t, id, ok, "request-bash")
}

func TestVector3SoleCandidateFallback(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"requestId":"external-directory-request","surface":"bash","value":"find ~/.pi -name package.json"}`))
	id, ok := tr.ResolveDecision(decision(t, `{"resolution":"user_approved_for_session","surface":"external_directory","value":"find ~/.pi -name package.json"}`))
	wantResolved(t, id, ok, "external-directory-request")
}

func TestVector4NoFallbackWithSeveralCandidates(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"requestId":"a","surface":"bash","value":"first command"}`))
	tr.Track(prompt(t, `{"requestId":"b","surface":"bash","value":"second command"}`))
	id, ok := tr.ResolveDecision(decision(t, `{"resolution":"user_approved","surface":"external_directory","value":"unmatched command"}`))
	wantResolved(t, id, ok, "")
	if len(tr.Pending()) != 2 {
		t.Fatalf("pending %d, want 2", len(tr.Pending()))
	}
}

func TestVector5AgentMismatchBlocksFallback(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"agentName":"Other worker","requestId":"r","surface":"bash","value":"command"}`))
	id, ok := tr.ResolveDecision(decision(t, `{"agentName":"Worker","resolution":"user_approved","surface":"external_directory","value":"command"}`))
	wantResolved(t, id, ok, "")
}

func TestVector6NullAgentResolvesInOrder(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"agentName":"Worker","requestId":"request-first","surface":"bash","value":"git status"}`))
	tr.Track(prompt(t, `{"agentName":"Worker","requestId":"request-second","surface":"bash","value":"git status"}`))
	d := decision(t, `{"agentName":null,"resolution":"user_approved","surface":"bash","value":"git status"}`)
	if d.AgentName != "" {
		t.Fatalf("agentName null parsed as %q, want absent", d.AgentName)
	}
	id, ok := tr.ResolveDecision(d)
	wantResolved(t, id, ok, "request-first")
	id, ok = tr.ResolveDecision(d)
	wantResolved(t, id, ok, "request-second")
	id, ok = tr.ResolveDecision(d)
	wantResolved(t, id, ok, "")
}

func TestVector7ForwardedOnlyByRequestID(t *testing.T) {
	var tr Tracker
	p := prompt(t, `{"forwarding":{"requesterSessionId":"child-session"},"requestId":"forwarded-request","surface":"bash","value":"git status"}`)
	if !p.Forwarded {
		t.Fatal("a prompt with a forwarding object must be forwarded")
	}
	tr.Track(p)
	id, ok := tr.ResolveDecision(decision(t, D))
	wantResolved(t, id, ok, "")
	id, ok = tr.ResolveForwarded(forwarded(t, "other-request"))
	wantResolved(t, id, ok, "")
	id, ok = tr.ResolveForwarded(forwarded(t, "forwarded-request"))
	wantResolved(t, id, ok, "forwarded-request")
	id, ok = tr.ResolveForwarded(forwarded(t, "forwarded-request"))
	wantResolved(t, id, ok, "")
}

func TestVector8ForwardedDecisionParsing(t *testing.T) {
	for _, js := range []string{
		`{"requestId":"x","result":"allow"}`,
		`{"forwarding":{},"requestId":"x","responderSessionId":"s","respondedAt":1,"resolution":"user_approved","result":"unknown"}`,
		`{"forwarding":null,"requestId":"x","responderSessionId":"s","respondedAt":1,"resolution":"user_approved","result":"allow"}`,
		`{"forwarding":{},"requestId":7,"responderSessionId":"s","respondedAt":1,"resolution":"user_approved","result":"allow"}`,
		`{"forwarding":{},"requestId":"x","responderSessionId":" ","respondedAt":1,"resolution":"user_approved","result":"allow"}`,
		`{"forwarding":{},"requestId":"x","responderSessionId":"s","respondedAt":"1","resolution":"user_approved","result":"allow"}`,
		`{"forwarding":{},"requestId":"x","responderSessionId":"s","respondedAt":1,"resolution":"","result":"deny"}`,
		`null`, `[]`, `"x"`, ``,
	} {
		if d, ok := ParseForwardedDecision(json.RawMessage(js)); ok {
			t.Errorf("ParseForwardedDecision(%s) = %+v, want rejected", js, d)
		}
	}
	if _, ok := ParseForwardedDecision(json.RawMessage(`{"forwarding":{},"requestId":"x","responderSessionId":"s","respondedAt":1,"resolution":"r","result":"deny"}`)); !ok {
		t.Error("a complete forwarded decision was rejected")
	}
}

func TestVector9ShutdownDropsWithoutResolving(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"forwarding":{"requesterAgentName":"Worker"},"requestId":"forwarded-request"}`))
	tr.Shutdown()
	id, ok := tr.ResolveForwarded(forwarded(t, "forwarded-request"))
	wantResolved(t, id, ok, "")
}

func TestTrackIgnoresDuplicates(t *testing.T) {
	var tr Tracker
	p := prompt(t, `{"requestId":" dup "}`)
	if p.RequestID != "dup" {
		t.Fatalf("requestId not trimmed: %q", p.RequestID)
	}
	if !tr.Track(p) || tr.Track(p) {
		t.Fatal("second Track of the same requestId must return false")
	}
}

func TestPromptParsingAndLabels(t *testing.T) {
	for _, js := range []string{`{}`, `{"requestId":""}`, `{"requestId":"  "}`, `{"requestId":5}`, `null`, `garbage`} {
		if _, ok := ParsePrompt(json.RawMessage(js)); ok {
			t.Errorf("ParsePrompt(%s) accepted", js)
		}
	}
	tests := []struct{ js, label, text string }{
		{`{"requestId":"r","message":"Allow git status?"}`, "Permission required", "Pi is waiting for permission approval: Allow git status?"},
		{`{"requestId":"r","surface":"bash","value":"ls"}`, "Permission required", "Pi is waiting for permission approval: bash ls"},
		{`{"requestId":"r","surface":"bash"}`, "Permission required", "Pi is waiting for permission approval."},
		{`{"requestId":"r","forwarding":{"requesterAgentName":"Worker"},"message":"m"}`, "Permission required by Worker", "Subagent Worker is waiting for permission approval: m"},
		{`{"requestId":"r","forwarding":null}`, "Permission required", "Pi is waiting for permission approval."},
	}
	for _, tt := range tests {
		p := prompt(t, tt.js)
		if p.Label() != tt.label || p.Text() != tt.text {
			t.Errorf("%s: label %q text %q, want %q %q", tt.js, p.Label(), p.Text(), tt.label, tt.text)
		}
	}
	for _, js := range []string{`{"resolution":"user_approved","surface":"bash"}`, `{"resolution":"","surface":"bash","value":"v"}`, `[1]`} {
		if _, ok := ParseDecision(json.RawMessage(js)); ok {
			t.Errorf("ParseDecision(%s) accepted", js)
		}
	}
}

// Seed 003: after the parent answers a forwarded prompt, the child emits
// its own permissions:decision, which reaches the parent's bus too. When the
// parent has one direct prompt of its own open (no agentName, so any agent
// is compatible), that late decision must not close it through the
// sole-candidate fallback: the person has not answered the parent yet.
func TestAChildsDecisionDoesNotCloseTheParentsOwnPrompt(t *testing.T) {
	for _, childSurface := range []string{"bash", "external_directory"} {
		t.Run(childSurface, func(t *testing.T) {
			var tr Tracker
			tr.Track(prompt(t, `{"requestId":"parent-own","surface":"read","value":"/etc/hosts"}`))
			tr.Track(prompt(t, `{"agentName":"Worker","forwarding":{"requesterAgentName":"Worker","requesterSessionId":"child-session"},"requestId":"forwarded-request","surface":"bash","value":"git status"}`))
			id, ok := tr.ResolveForwarded(forwarded(t, "forwarded-request"))
			wantResolved(t, id, ok, "forwarded-request")
			id, ok = tr.ResolveDecision(decision(t, `{"agentName":"Worker","resolution":"user_approved","surface":"`+childSurface+`","value":"git status"}`))
			wantResolved(t, id, ok, "")
			// The parent's own answer still closes its prompt, and only once.
			id, ok = tr.ResolveDecision(decision(t, `{"resolution":"user_approved","surface":"read","value":"/etc/hosts"}`))
			wantResolved(t, id, ok, "parent-own")
		})
	}
}

// The child's decision is consumed once: a second decision like it is the
// parent's own (bash prompts decide as external_directory), and the sole
// candidate fallback applies to it as before.
func TestTheChildsDecisionIsConsumedOnce(t *testing.T) {
	var tr Tracker
	tr.Track(prompt(t, `{"agentName":"Worker","forwarding":{"requesterAgentName":"Worker"},"requestId":"forwarded-request","surface":"bash","value":"git status"}`))
	id, ok := tr.ResolveForwarded(forwarded(t, "forwarded-request"))
	wantResolved(t, id, ok, "forwarded-request")
	tr.Track(prompt(t, `{"requestId":"parent-own","surface":"bash","value":"git status"}`))
	child := decision(t, `{"agentName":"Worker","resolution":"user_approved","surface":"external_directory","value":"git status"}`)
	id, ok = tr.ResolveDecision(child)
	wantResolved(t, id, ok, "")
	id, ok = tr.ResolveDecision(decision(t, `{"resolution":"user_approved","surface":"external_directory","value":"git status"}`))
	wantResolved(t, id, ok, "parent-own")
}
