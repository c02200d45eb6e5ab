package render

import (
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/handoff"
)

// The hint under a run's attempts is a command to paste: an agent's name
// is whatever the workflow gave it, so a name a shell would split or
// expand is quoted, and one with characters the table cannot show (they
// are shown as spaces) is named by its agent's id instead, which the
// engine makes and open takes.
func TestRunDetailHintPastes(t *testing.T) {
	for _, tc := range []struct{ name, selector, want string }{
		{"plain", "api#1", "herdr-pi open 8d443e51 'api#1' opens"}, // zsh's EXTENDED_GLOB reads # as a pattern
		{"plain latest", "api", "herdr-pi open 8d443e51 api opens"},
		{"a tilde after an equals sign (bash expands it)", "a=~b#1", "herdr-pi open 8d443e51 'a=~b#1' opens"},
		{"a space", "code review#1", "herdr-pi open 8d443e51 'code review#1' opens"},
		{"a quote", "it's#1", `herdr-pi open 8d443e51 'it'\''s#1' opens`},
		{"shell syntax", "$(rm -rf ~);x#1", `herdr-pi open 8d443e51 '$(rm -rf ~);x#1' opens`},
		{"a leading tilde", "~me#1", "herdr-pi open 8d443e51 '~me#1' opens"},
		{"a leading hash", "#x#1", "herdr-pi open 8d443e51 '#x#1' opens"},
		{"a leading equals sign (zsh expands =cmd)", "=ls#1", "herdr-pi open 8d443e51 '=ls#1' opens"},
		{"control characters", "a\x1b[2Jpi#1", "herdr-pi open 8d443e51 '8d443e51-8bad-4dd5-a3f1-b88332072948:3#1' opens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, _, _ := strings.Cut(tc.selector, "#1")
			o := &handoff.Listing{}
			r := handoff.ListedRun{ID: "8d443e51-8bad-4dd5-a3f1-b88332072948", Short: "8d443e51", Ref: "8d443e51", Workflow: "fx", State: "completed",
				Agents: []handoff.ListedAgent{{ID: "8d443e51-8bad-4dd5-a3f1-b88332072948:3", Name: name, State: "completed",
					Attempts: []handoff.ListedAttempt{{N: 1, Name: name + "#1", Selector: tc.selector, State: "completed", Settled: true, Action: handoff.ActionOpen}}}}}
			got := RunDetail(o, &r, New(false, 0))
			if !strings.Contains(got, tc.want) {
				t.Errorf("hint lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

// A run's project is named by its directory, else by the store's key for
// it: both come from the workflow store (the cwd Pi recorded, a directory
// name), and are shown cleaned wherever the listing shows them.
func TestProjectNameIsClean(t *testing.T) {
	const evil = "\x1b]0;PWNED\a\u202e\u009b1m"
	for _, r := range []handoff.ListedRun{
		{ProjectDir: "/src/" + evil},
		{Project: "p" + evil + "-4f3389aae5d7"},
		{ProjectDir: "/src/" + evil, Here: true},
	} {
		got := ProjectName(&handoff.Listing{}, &r)
		if !strings.Contains(got, "PWNED") || strings.ContainsAny(got, "\x1b\a\u202e\u009b") {
			t.Errorf("project of %+v shows as %q", r, got)
		}
	}
}
