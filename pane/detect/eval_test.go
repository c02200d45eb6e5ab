package detect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegions(t *testing.T) {
	screen := strings.Join([]string{
		"chat one",     // 0
		"────────",     // 1 rule
		"",             // 2
		"• done thing", // 3 block marker
		"› old prompt", // 4
		"───── (x) ─",  // 5 rule (run >= 3)
		"  body  ",     // 6
		"─ x",          // 7 not a rule
		"──",           // 8 rule (only whitespace after)
		"› current",    // 9 current prompt
		"footer\r",     // 10
		"",             // 11
	}, "\n")
	l := newLayout(screenLines(screen))
	get := func(s string) string {
		r, err := ParseRegion(s)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(l.selectLines(r), "|")
	}
	cases := map[string]string{
		"whole_recent":                               "chat one|────────||• done thing|› old prompt|───── (x) ─|  body  |─ x|──|› current|footer|",
		"bottom_lines(2)":                            "footer|",
		"bottom_lines(99)":                           "chat one|────────||• done thing|› old prompt|───── (x) ─|  body  |─ x|──|› current|footer|",
		"bottom_non_empty_lines(2)":                  "› current|footer|",
		"top_non_empty_lines(2)":                     "chat one|────────",
		"top_non_empty_lines(3)":                     "chat one|────────||• done thing",
		"after_last_horizontal_rule":                 "› current|footer|",
		"prompt_box_body":                            "  body  |─ x",
		"above_prompt_box":                           "chat one|────────||• done thing|› old prompt",
		"last_non_empty_above_prompt_box":            "› old prompt",
		"after_last_prompt_marker":                   "footer|",
		"before_current_prompt_marker":               "chat one|────────||• done thing|› old prompt|───── (x) ─|  body  |─ x|──",
		"whole_recent_without_current_prompt_marker": "",
		"current_prompt_block_marker":                "• done thing",
		"after_current_prompt_block_marker":          "• done thing|› old prompt|───── (x) ─|  body  |─ x|──|› current|footer|",
	}
	for region, want := range cases {
		if got := get(region); got != want {
			t.Errorf("%s:\n got %q\nwant %q", region, got, want)
		}
	}

	// A block marker after the last prompt line means there is no current
	// prompt; fewer than two rules means no prompt box.
	l = newLayout(screenLines("› a\n• b\n───\nx"))
	for region, want := range map[string]string{
		"before_current_prompt_marker":               "› a|• b|───|x",
		"whole_recent_without_current_prompt_marker": "› a|• b|───|x",
		"current_prompt_block_marker":                "",
		"prompt_box_body":                            "",
		"above_prompt_box":                           "› a|• b|───|x",
		"last_non_empty_above_prompt_box":            "x",
		"after_last_prompt_marker":                   "• b|───|x",
		"bottom_non_empty_lines(9)":                  "› a|• b|───|x",
	} {
		if got := get(region); got != want {
			t.Errorf("%s:\n got %q\nwant %q", region, got, want)
		}
	}
	// A prompt line is "›" alone or "› " and more (herdr-detection-
	// manifests.md, "Regions"); "›x" is output that happens to start
	// with the glyph.
	l = newLayout(screenLines("› a\nout\n›x\n›\nlast"))
	if got, want := get("after_last_prompt_marker"), "last"; got != want {
		t.Errorf("bare prompt line: got %q, want %q", got, want)
	}
	l = newLayout(screenLines("› a\nout\n›x"))
	if got, want := get("after_last_prompt_marker"), "out|›x"; got != want {
		t.Errorf("glyph without a space: got %q, want %q", got, want)
	}
	// No horizontal rule and no prompt line: the regions counted from
	// them fall back to everything.
	l = newLayout(screenLines("chat\n ─ x\nmore"))
	for region, want := range map[string]string{
		"after_last_horizontal_rule": "chat| ─ x|more",
		"after_last_prompt_marker":   "chat| ─ x|more",
	} {
		if got := get(region); got != want {
			t.Errorf("no rule, no prompt: %s:\n got %q\nwant %q", region, got, want)
		}
	}
	// Every block-marker glyph counts, also on the first line; a prompt
	// glyph that does not start the line is output, not a prompt line.
	for _, marker := range []string{"•", "■", "✗", "✓"} {
		l = newLayout(screenLines(marker + " done\nout\n  › quoted\n› now"))
		if got, want := get("current_prompt_block_marker"), marker+" done"; got != want {
			t.Errorf("marker %s: current_prompt_block_marker got %q, want %q", marker, got, want)
		}
		if got, want := get("before_current_prompt_marker"), marker+" done|out|  › quoted"; got != want {
			t.Errorf("marker %s: before_current_prompt_marker got %q, want %q", marker, got, want)
		}
	}
	l = newLayout(screenLines("› a\nout\n  › quoted"))
	if got, want := get("after_last_prompt_marker"), "out|  › quoted"; got != want {
		t.Errorf("indented glyph: got %q, want %q", got, want)
	}
	l = newLayout(screenLines("\n \n"))
	if got := get("bottom_non_empty_lines(1)"); got != "" {
		t.Errorf("no non-blank lines: got %q", got)
	}
	if got := get("top_non_empty_lines(1)"); got != "" {
		t.Errorf("no non-blank lines: got %q", got)
	}
}

func TestHorizontalRule(t *testing.T) {
	for line, want := range map[string]bool{
		"──────": true,
		"  ─  ":  true,
		"──── (bypass permissions on) ─": true,
		"─── x":            true,
		"─ x":              false,
		"── ⠼ Working ───": false,
		"x ───":            false,
		"":                 false,
	} {
		if got := isHorizontalRule(line); got != want {
			t.Errorf("isHorizontalRule(%q) = %v", line, got)
		}
	}
}

func mustParse(t *testing.T, src string) *Manifest {
	t.Helper()
	m, err := Parse([]byte(src), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEvaluatePriorityAndGates(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "first_working"
state = "working"
priority = 10
contains = ["BUSY"]

[[rules]]
id = "second_working"
state = "working"
priority = 10
contains = ["busy"]

[[rules]]
id = "blocked"
state = "blocked"
priority = 20
visible_blocker = true
visible_idle = true
contains = ["allow?"]
any = [{ contains = ["yes"] }, { line_regex = ['^\s*1\.'] }]
not = [{ regex = ['(?m)^›$'] }]
all = [{ any = [{ contains = ["esc"] }] }]

[[rules]]
id = "viewer"
state = "unknown"
priority = 30
skip_state_update = true
region = "osc_title"
contains = ["viewer"]

[[rules]]
id = "progress"
state = "idle"
priority = 5
region = "osc_progress"
regex = ['^4;0']
`)
	cases := []struct {
		in    Input
		state State
		rule  string
	}{
		{Input{Text: "nothing"}, Idle, ""},
		{Input{Text: "busy now"}, Working, "first_working"}, // earlier wins the tie
		{Input{Text: "busy\nallow?\n 1. ok\nesc"}, Blocked, "blocked"},
		{Input{Text: "busy\nallow?\n 1. ok\nesc\n›"}, Working, "first_working"}, // not gate
		{Input{Text: "busy\nallow?\n 2. ok\nesc"}, Working, "first_working"},    // no any gate
		{Input{Text: "busy\nallow? yes"}, Working, "first_working"},             // all gate fails
		{Input{Text: "busy", Title: "Transcript VIEWER"}, Unknown, "viewer"},
		{Input{Progress: "4;0;"}, Idle, "progress"},
	}
	for _, c := range cases {
		v := m.Evaluate(c.in)
		got := ""
		if v.Rule != nil {
			got = v.Rule.ID
		}
		if v.State != c.state || got != c.rule {
			t.Errorf("%+v: got %s/%q, want %s/%q", c.in, v.State, got, c.state, c.rule)
		}
	}
	v := m.Evaluate(Input{Text: "busy\nallow?\n 1. ok\nesc"})
	if !v.VisibleBlocker || v.VisibleIdle || v.VisibleWorking {
		t.Errorf("visible flags %+v: only visible_blocker applies to a blocked state", v)
	}
	if v := m.Evaluate(Input{Title: "viewer"}); !v.Skip {
		t.Error("skip_state_update lost")
	}
	if v := (*Manifest)(nil).Evaluate(Input{Text: "busy"}); v.State != Unknown || v.Fallback != FallbackNoAgent {
		t.Errorf("no agent: %+v", v)
	}
	if v := m.Evaluate(Input{Text: "x"}); v.Fallback != FallbackIdle || v.Rule != nil {
		t.Errorf("fallback: %+v", v)
	}

	ex := m.Explain(Input{Text: "busy\nallow?\n 1. ok\nesc\n›"})
	why := map[string]string{}
	for _, r := range ex.Results {
		why[r.Rule.ID] = r.Why
	}
	if !strings.Contains(why["blocked"], "not[0] matched") || !strings.Contains(why["viewer"], "osc_title (the region is empty)") {
		t.Errorf("explanations %q", why)
	}
}

// A visible_* flag holds only when the winning rule's state is the one the
// flag names: a rule that sets them all reports one at a time.
func TestVisibleFlagsFollowTheState(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "w"
state = "working"
visible_idle = true
visible_blocker = true
visible_working = true
contains = ["busy"]

[[rules]]
id = "i"
state = "idle"
visible_idle = true
visible_blocker = true
visible_working = true
contains = ["ready"]

[[rules]]
id = "b"
state = "blocked"
visible_idle = true
visible_blocker = true
visible_working = true
contains = ["allow?"]
`)
	for text, want := range map[string][3]bool{ // idle, blocker, working
		"busy":   {false, false, true},
		"ready":  {true, false, false},
		"allow?": {false, true, false},
	} {
		v := m.Evaluate(Input{Text: text})
		if got := [3]bool{v.VisibleIdle, v.VisibleBlocker, v.VisibleWorking}; got != want {
			t.Errorf("%q (%s): visible idle/blocker/working %v, want %v", text, v.State, got, want)
		}
	}
}

// The embedded Pi manifest against screens shaped like Pi's (pi-agent.md
// §8.5), including what must NOT read as working.
func TestEmbeddedPi(t *testing.T) {
	pi := mustLookup(t, Embedded(), "pi")
	border := strings.Repeat("─", 60)
	footer := "~/proj (main)\n↑42 ↓7 0.2%/32k (auto)                  (fake) fake-model"
	idle := func(chat string) string { return chat + "\n\n" + border + "\n\n" + border + "\n" + footer }
	row := func(chat, status string) string {
		return chat + "\n\n " + status + "\n\n" + border + "\n\n" + border + "\n" + footer
	}
	dialog := func(body, hint string) string {
		return " hello\n\n" + border + "\n\n" + body + "\n\n" + hint + "\n\n" + border + "\n" + footer
	}
	top := func(chat, status string) string {
		return chat + "\n\n── " + status + " " + strings.Repeat("─", 40) + "\n\n" + border + "\n" + footer
	}
	cases := []struct {
		name, screen string
		want         State
		rule         string
	}{
		{"0.73 idle", idle(" hello"), Idle, ""},
		{"0.73 working", row(" SLOW please\n\n Which", "⠸ Working..."), Working, "busy_row"},
		{"0.73 retry", row(" Error: Connection error.", "⠸ Retrying (1/3) in 2s... (escape to cancel)"), Working, "busy_row"},
		{"0.73 compacting", row(" x", "⠋ Compacting context... (escape to cancel)"), Working, "busy_row"},
		{"0.73 auto-compacting", row(" x", "⠙ Auto-compacting... (escape to cancel)"), Working, "busy_row"},
		{"0.73 overflow", row(" x", "⠹ Context overflow detected, Auto-compacting... (escape to cancel)"), Working, "busy_row"},
		{"0.73 summarizing", row(" x", "⠼ Summarizing branch... (escape to cancel)"), Working, "busy_row"},
		{"0.73 interrupt hint", row(" x", "⠴ Working... (escape to interrupt)"), Working, "busy_row"},
		{"0.73 steering", row(" Steering: queued\n ↳ Alt+Up to edit all queued messages", "⠙ Working..."), Working, "busy_row"},
		{"0.73 typed while working", " x\n\n ⠙ Working...\n\n" + border + "\nline one\nline two\n" + border + "\n" + footer, Working, "busy_row"},
		{"1.6 working", top(" SLOW please\n Let me look", "⠧ Working"), Working, "busy_border"},
		{"1.6 retry", top(" Error: Connection error.", "⠇ Retrying (1/3) in 2s... (escape to cancel)"), Working, "busy_border"},
		{"1.6 compacting", top(" x", "⠋ Compacting context... (escape to cancel)"), Working, "busy_border"},
		{"1.6 narrow, no trailing rule", " x\n\n── ⠋ Retrying (1/3) in 2s... (esc\n\n" + border + "\n" + footer, Working, "busy_border"},
		{"1.6 typed while working", " x\n── ⠋ Working ─────\nline one\nline two\nline three\n" + border + "\n" + footer, Working, "busy_border"},
		// Chat and footers are not the busy spot.
		{"reply mentions Working...", idle(" The row shows Working... while busy"), Idle, ""},
		{"reply quotes the row mid-chat", idle(" ⠋ Working...\n and then it stops"), Idle, ""},
		{"reply quotes the border", idle(" ── ⠴ Working ───"), Idle, ""},
		{"footer with spinner status", idle(" hi") + "\n⠋ Working... (extension status)", Idle, ""},
		{"retry failed", idle(" Error: Retry failed after 3 attempts: Connection error."), Idle, ""},
		{"aborted", idle(" Which file\n\n Operation aborted"), Idle, ""},
		{"sentinel", idle(" Which file should I edit?\n :input_needed:"), Idle, ""},
		// Dialogs waiting for the person, drawn in place of the editor.
		{"select", dialog(" 1 interrupted workflow found\n\n → Resume: flow (3f0c9a2e)\n   Skip", " ↑↓ navigate  enter select  escape/ctrl+c cancel"), Blocked, "dialog"},
		{"confirm", dialog(" Deploy?\n Really?\n\n → Yes\n   No", " ↑↓ navigate  enter select  esc cancel"), Blocked, "dialog"},
		{"input", dialog(" Your name\n\n> ", " enter submit  escape/ctrl+c cancel"), Blocked, "dialog"},
		{"editor, hint wrapped", dialog(" Notes\n\n"+border+"\nsome text\n"+border, " enter submit  shift+enter newline  escape/ctrl+c cancel  ctrl+g\n external editor"), Blocked, "dialog"},
		{"project trust", dialog(" Trust this project?\n\n → Trust\n   Do not trust", " ↑↓ navigate  enter save  esc cancel"), Blocked, "dialog"},
		{"dialog while a run works", " x\n\n ⠙ Working...\n\n" + dialog(" Allow bash?\n\n → Yes\n   No", " ↑↓ navigate  enter select  esc cancel"), Blocked, "dialog"},
		// A reply quoting a hint is chat: the blank row and editor border
		// after it are not right below it.
		{"reply quotes the hint", idle(" ↑↓ navigate  enter select  esc cancel\n and so on"), Idle, ""},
		{"hint typed into the editor", " x\n\n" + border + "\n ↑↓ navigate  enter select  esc cancel\n" + border + "\n" + footer, Idle, ""},
	}
	for _, c := range cases {
		v := pi.Evaluate(Input{Text: c.screen, Title: "π - proj"})
		got := ""
		if v.Rule != nil {
			got = v.Rule.ID
		}
		if v.State != c.want || got != c.rule {
			t.Errorf("%s: got %s/%q, want %s/%q\n%s", c.name, v.State, got, c.want, c.rule, c.screen)
		}
	}
}

// Regexes are case-sensitive unless the pattern says (?i); only contains
// compares lower-cased text (herdr-detection-manifests.md, "Evaluation").
func TestRegexIsCaseSensitive(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "exact"
state = "working"
regex = ['Working']

[[rules]]
id = "folded"
state = "blocked"
regex = ['(?i)ALLOW']
`)
	for text, want := range map[string]State{"working": Idle, "Working": Working, "allow?": Blocked} {
		if v := m.Evaluate(Input{Text: text}); v.State != want {
			t.Errorf("%q: got %s, want %s", text, v.State, want)
		}
	}
}

// Rules on the same region kind with different counts each see their own
// lines: the per-evaluation region cache must key on the count too.
func TestRegionCountsAreDistinct(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "last_line"
state = "blocked"
priority = 10
region = "bottom_lines(1)"
contains = ["needle"]

[[rules]]
id = "last_three"
state = "working"
region = "bottom_lines(3)"
contains = ["needle"]
`)
	if v := m.Evaluate(Input{Text: "a\nneedle\nb"}); v.State != Working {
		t.Errorf("needle in the last three lines only: got %s (%+v), want working", v.State, v.Rule)
	}
}

// A rule without a region reads the whole screen.
func TestDefaultRegionIsWholeRecent(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "r"
state = "working"
contains = ["top"]
`)
	if got := m.Rules[0].Region; got != (Region{Kind: WholeRecent}) {
		t.Errorf("default region %s, want whole_recent", got)
	}
	screen := "top\n" + strings.Repeat("────\nchat\n", 40) + "› "
	if v := m.Evaluate(Input{Text: screen}); v.State != Working {
		t.Errorf("first line of a long screen: got %s, want working", v.State)
	}
}

// osc_title is split into lines for line_regex like any other region.
func TestTitleLinesForLineRegex(t *testing.T) {
	m := mustParse(t, `id = "t"
[[rules]]
id = "r"
state = "working"
region = "osc_title"
line_regex = ['^busy$']
`)
	if v := m.Evaluate(Input{Title: "pi\nbusy"}); v.State != Working {
		t.Errorf("got %s, want working", v.State)
	}
}

// A real Pi 1.6.0 screen (40x120, as e2e's
// TestWrapPiDialogBeforeTheSessionStartsIsBlocked showed it): an
// extension's select opened before the session started, in place of the
// editor. Only the screen can tell it then (the probe is not connected
// yet), and it must read blocked.
func TestEmbeddedPiDialogAtStart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pi-1.6.0-dialog-at-start.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v := mustLookup(t, Embedded(), "pi").Evaluate(Input{Text: strings.TrimSuffix(string(b), "\n"), Title: "π - proj"})
	if v.State != Blocked || v.Rule == nil || v.Rule.ID != "dialog" || !v.VisibleBlocker {
		t.Fatalf("got %s (rule %v, visible blocker %v), want blocked by rule dialog", v.State, v.Rule, v.VisibleBlocker)
	}
}
