package commands

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// silentWrapper answers status with nothing filled in: a wrapper in its
// first moments, before any state or reason was reported.
type silentWrapper struct{ fakeWrapper }

func (*silentWrapper) Status() control.Status { return control.Status{} }

// A wrapper that knows nothing yet is "unknown" with no reasons: `status
// --json` says so in the documented shape (state is one of four words,
// reasons is [] and never null, docs/status.md), and the text says the
// same word.
func TestStatusOfAWrapperThatKnowsNothingYet(t *testing.T) {
	e := newCmdEnv(t, pane...)
	w := &silentWrapper{}
	run1, err := control.Start(control.RunConfig{RuntimeBase: e.runtime, PaneID: "w1:p1", HerdrSocket: "/tmp/herdr-test.sock", Events: w, Requests: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run1.Close() })

	code, out, errOut := run(t, e.env, "status", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("status --json: exit %d, stderr %q", code, errOut)
	}
	validate(t, compileSchema(t, "status"), out)
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got["state"] != "unknown" {
		t.Errorf("state = %#v, want \"unknown\":\n%s", got["state"], out)
	}
	if r, ok := got["reasons"].([]any); !ok || len(r) != 0 {
		t.Errorf("reasons = %#v, want []:\n%s", got["reasons"], out)
	}

	code, out, _ = run(t, e.env, "status")
	if code != 0 || !strings.Contains(out, "state    unknown\n") || !strings.Contains(out, "reasons  none open\n") {
		t.Errorf("status: exit %d:\n%s", code, out)
	}
}
