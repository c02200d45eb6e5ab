package render

import (
	"regexp"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/internal/golden"
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

// The run in that hint is a word too: a run id is a directory name in
// the workflow store, which nothing keeps from holding a space or a
// shell's syntax.
func TestRunDetailHintQuotesTheRun(t *testing.T) {
	o := &handoff.Listing{}
	ref := "r1 $(touch INJECTED)"
	r := handoff.ListedRun{ID: ref, Short: ref, Ref: ref, Workflow: "fx", State: "completed",
		Agents: []handoff.ListedAgent{{ID: "a1", Name: "api", State: "completed",
			Attempts: []handoff.ListedAttempt{{N: 1, Name: "api#1", Selector: "api", State: "completed", Settled: true, Action: handoff.ActionOpen}}}}}
	got := RunDetail(o, &r, New(false, 0))
	if want := "herdr-pi open 'r1 $(touch INJECTED)' api opens"; !strings.Contains(got, want) {
		t.Errorf("hint lacks %q:\n%s", want, got)
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

// Every word of a listing comes from the workflow store or is built from
// it (a run's note quotes a directory name, an owner's problem a lease
// file): `open --list` and `open --list <run>` show each one cleaned, and
// show it, so none is left out of this test.
func TestListingCleansEveryField(t *testing.T) {
	const evil = "\x1b]0;x\a\u009b1m\u202e"
	at := func(n string) handoff.ListedAttempt {
		return handoff.ListedAttempt{N: 1, Name: "atname" + n + evil, Selector: "atsel" + n + evil, State: "atstate" + n + evil, Model: "atmodel" + n + evil,
			Action: handoff.ActionOpen, Note: "atnote" + n + evil}
	}
	ok := handoff.ListedRun{ID: "runid" + evil, Ref: "runref" + evil, Workflow: "wf" + evil, State: "runstate" + evil, ProjectDir: "/proj" + evil,
		Owner: &handoff.ListedOwner{Problem: "ownerproblem" + evil}, Error: &handoff.ListedError{Code: "errcode" + evil, Message: "errmsg" + evil},
		Agents: []handoff.ListedAgent{{Name: "agname" + evil, State: "agstate" + evil}, {Name: "ag2", Attempts: []handoff.ListedAttempt{at("")}}}}
	broken := handoff.ListedRun{ID: "brokenid", Ref: "brokenref", Problem: "p", Note: "runnote" + evil}
	o := &handoff.Listing{Runs: []handoff.ListedRun{ok, broken}}
	for _, l := range []Look{New(false, 0), New(true, 200)} {
		shown := RunTable(o, l) + RunDetail(o, &o.Runs[0], l)
		// The hint names the attempt as the store does (an agent without
		// an id has nothing else to name it by).
		for _, want := range []string{"runid", "runref", "wf", "runstate", "proj", "ownerproblem", "errcode", "errmsg", "agname", "agstate",
			"atname", "atstate", "atmodel", "atnote", "runnote", "herdr-pi open 'runref", "atsel"} {
			if !strings.Contains(shown, want) {
				t.Errorf("the listing lacks %q, so this test proves nothing for it:\n%s", want, shown)
			}
		}
		for _, r := range stripStyle(shown) {
			if r != '\n' && r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x202e {
				t.Fatalf("%U reaches the terminal:\n%q", r, shown)
			}
		}
	}
}

// stripStyle drops the SGR colour sequences the look itself adds, which
// are the only escape sequences allowed through.
func stripStyle(s string) string {
	return sgr.ReplaceAllString(s, "")
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Two agents of a run may share a name: their rows show what open takes
// for each (the agent's number, #n; the id#n when something else in the
// run would take that number first), with the name after it, and the
// hint gives the same. Both rows read api#1 before.
func TestRunDetailTellsSharedNamesApart(t *testing.T) {
	const id = "5a4e0000-0000-4000-8000-000000000001"
	agent := func(n, name string, selector func(agentID string) string) handoff.ListedAgent {
		agentID := id + ":" + n
		return handoff.ListedAgent{ID: agentID, Name: name, State: "completed",
			Attempts: []handoff.ListedAttempt{{N: 1, Name: name + "#1", Selector: selector(agentID), State: "completed", Settled: true, Action: handoff.ActionOpen}}}
	}
	byID := func(agentID string) string { return agentID + "#1" }
	r := handoff.ListedRun{ID: id, Short: "5a4e0000", Ref: "5a4e0000", Workflow: "fx-twins", State: "completed",
		Agents: []handoff.ListedAgent{
			agent("1", "api", byID),
			agent("2", "api", byID),
			// An agent named "4" is what open takes for 4#1: agent 4 is
			// named by its id.
			agent("3", "4", func(string) string { return "4#1" }),
			agent("4", "docs", byID),
			agent("5", "docs", byID),
		}}
	got := RunDetail(&handoff.Listing{}, &r, New(false, 0))
	golden.Check(t, golden.Path(t), got)
}
