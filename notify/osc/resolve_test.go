package osc

import "testing"

// notifications-and-sentinel.md D1.2: the seed's table and its overlay.
func TestSeedResolutionVectors(t *testing.T) {
	def := DefaultTable()
	parsed := def.Overlay(OSC777, map[string]Protocol{"MyTerminal": OSC9, "WezTerm": OSC777})
	file := def.Overlay(OSC9, map[string]Protocol{"Custom": OSC777})
	cases := []struct {
		name  string
		table Table
		term  string
		want  Protocol
	}{
		{"defaults ghostty", def, "ghostty", OSC9},
		{"defaults iTerm.app", def, "iTerm.app", OSC9},
		{"defaults WezTerm", def, "WezTerm", OSC9},
		{"defaults kitty", def, "kitty", OSC99},
		{"defaults vscode", def, "vscode", OSC99},
		{"defaults WarpTerminal", def, "WarpTerminal", OSC777},
		{"defaults unknown", def, "unknown", OSC99},
		{"defaults unset", def, "", OSC99},
		{"parsed WezTerm", parsed, "WezTerm", OSC777},
		{"parsed myterminal (case-insensitive)", parsed, "myterminal", OSC9},
		{"parsed unknown", parsed, "unknown", OSC777},
		{"parsed kitty", parsed, "kitty", OSC99},
		{"file Custom", file, "Custom", OSC777},
		{"file Unknown", file, "Unknown", OSC9},
		{"trimmed", def, "  WarpTerminal\t", OSC777},
		{"case-insensitive builtin", def, "warpterminal", OSC777},
	}
	for _, c := range cases {
		if got := c.table.Resolve(c.term, ""); got != c.want {
			t.Errorf("%s: Resolve(%q) = %s, want %s", c.name, c.term, got, c.want)
		}
	}
}

// Seed 003 resolves TERM_PROGRAM against the table, with the user's
// termPrograms over it. KITTY_WINDOW_ID is inherited by everything started
// from a kitty shell — a tmux server started there and attached from
// iTerm2 still carries it — so it may only decide what neither the table
// nor the user knows, and then it beats the fallback.
func TestKittyWindowIDDoesNotOverrideAKnownTermProgram(t *testing.T) {
	def := DefaultTable()
	mine := def.Overlay(OSC777, map[string]Protocol{"MyTerminal": OSC9, "WezTerm": OSC777})
	cases := []struct {
		name  string
		table Table
		term  string
		kitty string
		want  Protocol
	}{
		{"ghostty in a kitty-started tmux", def, "ghostty", "1", OSC9},
		{"iTerm.app in a kitty-started tmux", def, "iTerm.app", "1", OSC9},
		{"WezTerm", def, "WezTerm", "1", OSC9},
		{"WarpTerminal", def, "WarpTerminal", "1", OSC777},
		{"vscode", def, "vscode", "1", OSC99},
		{"kitty names itself", def, "kitty", "1", OSC99},
		{"case-insensitive builtin", def, " warpterminal ", "1", OSC777},
		{"user entry, exact", mine, "MyTerminal", "1", OSC9},
		{"user entry, other case", mine, "myterminal", "1", OSC9},
		{"user entry overrides a builtin", mine, "WezTerm", "1", OSC777},
		{"unknown program in kitty", mine, "unknown", "1", OSC99},
		{"unset program in kitty", mine, "", "1", OSC99},
		{"blank window id is not kitty", mine, "unknown", " ", OSC777},
		{"unknown program outside kitty", mine, "unknown", "", OSC777},
	}
	for _, c := range cases {
		if got := c.table.Resolve(c.term, c.kitty); got != c.want {
			t.Errorf("%s: Resolve(%q, kitty %q) = %s, want %s", c.name, c.term, c.kitty, got, c.want)
		}
	}
}

// notifications-and-sentinel.md D2.1: the newer package's resolution
// vectors, run through the same algorithm with its table (§5.2). One vector
// differs on purpose: that package asks KITTY_WINDOW_ID first, so ghostty
// with a kitty window id gets OSC 99 there. We keep seed 003's promise that
// TERM_PROGRAM and the user's table decide, and use KITTY_WINDOW_ID only
// when they do not know the terminal (see Table.Resolve), so ghostty keeps
// its own protocol; the two cases after it show where kitty still decides.
func TestNewerResolutionVectors(t *testing.T) {
	base := Table{Fallback: OSC9, Programs: map[string]Protocol{
		"ghostty": OSC777, "iTerm.app": OSC9, "WezTerm": OSC777, "WarpTerminal": OSC777, "vscode": OSC99,
	}}
	mine := base.Overlay("", map[string]Protocol{"MyTerminal": OSC9})
	cases := []struct {
		table       Table
		term, kitty string
		want        Protocol
	}{
		{base, "ghostty", "123", OSC777}, // the later package: OSC 99
		{base, "unknown", "123", OSC99},
		{base, "", "123", OSC99},
		{base, "ghostty", "", OSC777},
		{base, "WezTerm", "", OSC777},
		{base, "WarpTerminal", "", OSC777},
		{base, "iTerm.app", "", OSC9},
		{base, "vscode", "", OSC99},
		{mine, "myterminal", "", OSC9},
		{mine, "MYTERMINAL", "", OSC9},
		{mine, "kitty", "", OSC9},
		{base, "unknown", "", OSC9},
		{base, "", "", OSC9},
		{base.Overlay(OSC777, nil), "unknown", "", OSC777},
	}
	for i, c := range cases {
		if got := c.table.Resolve(c.term, c.kitty); got != c.want {
			t.Errorf("case %d: Resolve(%q, kitty %q) = %s, want %s", i, c.term, c.kitty, got, c.want)
		}
	}
}

func TestResolveIsDeterministicAcrossCaseDuplicates(t *testing.T) {
	table := DefaultTable().Overlay("", map[string]Protocol{"myterm": OSC777, "MyTerm": OSC9, "MYTERM": OSC99})
	for range 50 {
		// "MYTERM" < "MyTerm" < "myterm": the alphabetically first key wins.
		if got := table.Resolve("mYtErM", ""); got != OSC99 {
			t.Fatalf("got %s", got)
		}
	}
	if got := table.Resolve("MyTerm", ""); got != OSC9 {
		t.Fatalf("exact match first: got %s", got)
	}
}

func TestOverlayDoesNotChangeTheBase(t *testing.T) {
	def := DefaultTable()
	_ = def.Overlay(OSC777, map[string]Protocol{" ghostty ": OSC777})
	if def.Programs["ghostty"] != OSC9 || def.Fallback != OSC99 {
		t.Fatalf("base changed: %+v", def)
	}
	if got := def.Overlay("", map[string]Protocol{" ghostty ": OSC777}).Resolve("ghostty", ""); got != OSC777 {
		t.Fatalf("overlay key not trimmed: %s", got)
	}
}

// A table without a fallback (the zero Table) still names a protocol
// Encode knows: kitty's, the seed's default.
func TestZeroTableFallsBackToOSC99(t *testing.T) {
	p, why := Table{}.ResolveWhy("SomeTerm", "")
	if p != OSC99 || why != ByFallback {
		t.Fatalf("got %s by %s, want osc99 by fallback", p, why)
	}
	if Encode(p, Notification{Title: "t", Body: "b"}) == nil {
		t.Fatal("nothing encoded")
	}
}

// Seed 003: the user's termPrograms "extend or override the built-in
// mappings", and names match ignoring case. So an entry written in
// another case than the built-in's — wezterm = "osc777" under
// [notify.term_programs], where TOML keys are lower case by habit — must
// override it, not lose to the built-in "WezTerm" for TERM_PROGRAM=WezTerm
// by an exact match. So must config.toml's entry over config.json's.
func TestAnOverrideInAnotherCaseReplacesTheEntryBelow(t *testing.T) {
	def := DefaultTable()
	cases := []struct {
		name  string
		table Table
		term  string
		want  Protocol
	}{
		{"lower-case override of WezTerm", def.Overlay("", map[string]Protocol{"wezterm": OSC777}), "WezTerm", OSC777},
		{"override of iTerm.app", def.Overlay("", map[string]Protocol{"ITERM.APP": OSC99}), "iTerm.app", OSC99},
		{"config.toml over config.json", def.Overlay("", map[string]Protocol{"WezTerm": OSC777}).Overlay("", map[string]Protocol{"wezterm": OSC99}), "WezTerm", OSC99},
		{"the other built-ins stay", def.Overlay("", map[string]Protocol{"wezterm": OSC777}), "ghostty", OSC9},
	}
	for _, c := range cases {
		if got := c.table.Resolve(c.term, ""); got != c.want {
			t.Errorf("%s: Resolve(%q) = %s, want %s", c.name, c.term, got, c.want)
		}
	}
}
