package osc

import (
	"slices"
	"strings"
)

// Table maps TERM_PROGRAM values to protocols, with a fallback for a
// terminal it does not know.
type Table struct {
	Fallback Protocol
	Programs map[string]Protocol
}

// DefaultTable is the seed's table (notifications-and-sentinel.md §5.1):
// ghostty, iTerm.app and WezTerm speak OSC 9, kitty and vscode OSC 99,
// WarpTerminal OSC 777, and anything else gets OSC 99.
func DefaultTable() Table {
	return Table{
		Fallback: OSC99,
		Programs: map[string]Protocol{
			"ghostty":      OSC9,
			"iTerm.app":    OSC9,
			"WezTerm":      OSC9,
			"kitty":        OSC99,
			"vscode":       OSC99,
			"WarpTerminal": OSC777,
		},
	}
}

// Overlay returns a copy of t where programs extend or replace its entries
// (keys trimmed) and a non-empty fallback replaces its fallback. An entry
// replaces those of t whose name differs only in case: names match
// ignoring case, so "wezterm" is meant to override the built-in
// "WezTerm", and would otherwise lose to it on an exact match.
func (t Table) Overlay(fallback Protocol, programs map[string]Protocol) Table {
	out := Table{Fallback: t.Fallback, Programs: make(map[string]Protocol, len(t.Programs)+len(programs))}
	for k, v := range t.Programs {
		out.Programs[k] = v
	}
	for name := range programs {
		for k := range out.Programs {
			if strings.EqualFold(k, strings.TrimSpace(name)) {
				delete(out.Programs, k)
			}
		}
	}
	for k, v := range programs {
		out.Programs[strings.TrimSpace(k)] = v
	}
	if fallback != "" {
		out.Fallback = fallback
	}
	return out
}

// Reason says which rule of [Table.ResolveWhy] chose a protocol.
type Reason string

const (
	ByTermProgram Reason = "TERM_PROGRAM" // the table (user entries over built-ins) knows it
	ByKitty       Reason = "kitty"        // unknown or unset TERM_PROGRAM, KITTY_WINDOW_ID set
	ByFallback    Reason = "fallback"     // neither
)

// Resolve picks the protocol for a terminal; see [Table.ResolveWhy].
func (t Table) Resolve(termProgram, kittyWindowID string) Protocol {
	p, _ := t.ResolveWhy(termProgram, kittyWindowID)
	return p
}

// ResolveWhy picks the protocol for a terminal and says which rule did.
// The trimmed TERM_PROGRAM is looked up exactly, then case-insensitively,
// in the table, where the user's entries already replaced the built-ins
// (seed 003; notifications-and-sentinel.md §5.1). Only when the table does
// not know it does a non-empty KITTY_WINDOW_ID mean kitty, hence OSC 99
// (kitty does not set TERM_PROGRAM; §5.2), and after that the fallback.
//
// The later pi-notify asks KITTY_WINDOW_ID first (§5.2). We do not: every
// process started from a kitty shell inherits it — a tmux server started in
// kitty and attached from iTerm2 keeps it — so it would overrule both a
// TERM_PROGRAM we know and the user's own table.
//
// When several keys differ only in case, the alphabetically first wins, so
// the answer never depends on map order.
func (t Table) ResolveWhy(termProgram, kittyWindowID string) (Protocol, Reason) {
	if p, ok := t.lookup(termProgram); ok {
		return p, ByTermProgram
	}
	if strings.TrimSpace(kittyWindowID) != "" {
		return OSC99, ByKitty
	}
	if t.Fallback == "" {
		return OSC99, ByFallback
	}
	return t.Fallback, ByFallback
}

// Maps reports whether the table names termProgram itself (as ResolveWhy
// looks it up), rather than leaving it to KITTY_WINDOW_ID or the fallback.
func (t Table) Maps(termProgram string) bool {
	_, ok := t.lookup(termProgram)
	return ok
}

// lookup finds the trimmed name exactly, then case-insensitively.
func (t Table) lookup(termProgram string) (Protocol, bool) {
	name := strings.TrimSpace(termProgram)
	if name == "" {
		return "", false
	}
	if p, ok := t.Programs[name]; ok {
		return p, true
	}
	keys := make([]string, 0, len(t.Programs))
	for k := range t.Programs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.EqualFold(k, name) {
			return t.Programs[k], true
		}
	}
	return "", false
}
