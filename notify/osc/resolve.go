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
// (keys trimmed) and a non-empty fallback replaces its fallback.
func (t Table) Overlay(fallback Protocol, programs map[string]Protocol) Table {
	out := Table{Fallback: t.Fallback, Programs: make(map[string]Protocol, len(t.Programs)+len(programs))}
	for k, v := range t.Programs {
		out.Programs[k] = v
	}
	for k, v := range programs {
		out.Programs[strings.TrimSpace(k)] = v
	}
	if fallback != "" {
		out.Fallback = fallback
	}
	return out
}

// Resolve picks the protocol for a terminal. A non-empty KITTY_WINDOW_ID
// means kitty, which speaks OSC 99 whatever TERM_PROGRAM says (kitty does not
// set it; notifications-and-sentinel.md §5.2). Otherwise the trimmed
// TERM_PROGRAM is looked up exactly, then case-insensitively, and an unset or
// unknown one gets the fallback (§5.1). When several keys differ only in
// case, the alphabetically first wins, so the answer never depends on map
// order.
func (t Table) Resolve(termProgram, kittyWindowID string) Protocol {
	if strings.TrimSpace(kittyWindowID) != "" {
		return OSC99
	}
	name := strings.TrimSpace(termProgram)
	if name != "" {
		if p, ok := t.Programs[name]; ok {
			return p
		}
		keys := make([]string, 0, len(t.Programs))
		for k := range t.Programs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				return t.Programs[k]
			}
		}
	}
	if t.Fallback == "" {
		return OSC99
	}
	return t.Fallback
}
