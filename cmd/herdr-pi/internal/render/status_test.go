package render

import (
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// A reason's key is shown only when it says more than its label: a reason
// without a label is listed by its key, once, and one whose label is its
// key does not repeat it.
func TestStatusShowsAReasonsKeyOnce(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 4, 24, 0, time.UTC)
	st := control.Status{State: "blocked", WrapperPID: 6, Reasons: []control.Reason{
		{Kind: "wait", Key: "lint:1"},
		{Kind: "wait", Key: "deploy", Label: "deploy"},
	}}
	got := Status(st, "", now, New(false, 0))
	want := "reasons  2 open\n  wait  lint:1\n  wait  deploy\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("status ends\n%s\nwant it to end\n%s", got, want)
	}
}

// Every field the wrapper reports came from elsewhere (the agent's name
// from --agent or the config, labels from hooks): none may carry an escape
// sequence or a bell to the terminal of whoever runs status.
func TestStatusCleansEveryReportedField(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 4, 24, 0, time.UTC)
	evil := "x\x1b]0;owned\x07\u202e"
	st := control.Status{State: "idle" + evil, Agent: "pi" + evil, Label: "lab" + evil, SessionFile: "/s" + evil, Herdr: "ok" + evil, WrapperPID: 6,
		Reasons: []control.Reason{{Kind: "wait" + evil, Key: "k" + evil, Label: "l" + evil}},
		// A channel that sent nothing yet shows its name alone; one that
		// did, its last outcome and hint too.
		Notifications: []control.NotifyChannel{{Channel: "quiet" + evil}, {Channel: "ntfy" + evil, Failed: 1, Failing: true, Last: "http" + evil, Hint: "fix" + evil}}}
	got := Status(st, "", now, New(false, 0))
	if strings.ContainsAny(got, "\x1b\x07\u202e") {
		t.Errorf("status keeps a control character: %q", got)
	}
	for _, want := range []string{"lab", "quiet", "ntfy", "http", "fix"} {
		if !strings.Contains(got, want+"x") {
			t.Errorf("status lacks %q, so this test proves nothing for it:\n%s", want, got)
		}
	}
}

// The state line says what the state is reported to Herdr with: while
// blocked, the label of the reason the report names, which may be another
// than the first listed once the one that opened the state closed.
func TestStatusSaysTheReportedMessage(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 4, 24, 0, time.UTC)
	st := control.Status{State: "blocked", Message: "input\x1b]0;x\x07 needed", Since: now.Add(-10 * time.Second), WrapperPID: 6, Reasons: []control.Reason{
		{Kind: "wait", Key: "hook:lint:1", Label: "fix the lint"},
		{Kind: "sentinel", Key: "sentinel", Label: "input needed", Reported: true},
	}}
	got := Status(st, "", now, New(false, 0))
	if want := "state    blocked for 10s (since 14:04:14): input ]0;x  needed\n"; !strings.HasPrefix(got, want) {
		t.Errorf("status begins\n%q\nwant\n%q", strings.SplitAfter(got, "\n")[0], want)
	}
}
