package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// TerminalNotifications is what the seed extension's optional config.json
// (@xzzpig/pi-terminal-notifications) says about OSC protocols; herdr-pi
// honours it so a user who tuned it keeps their choice, and its own
// config.toml overrides it. Empty fields mean "not set".
type TerminalNotifications struct {
	// Fallback is the protocol for an unknown TERM_PROGRAM.
	Fallback string
	// TermPrograms extends or overrides the built-in TERM_PROGRAM table;
	// keys are trimmed.
	TermPrograms map[string]string
}

// TerminalNotificationsFile is where the seed extension keeps its config:
// <Pi agent dir>/extensions/pi-terminal-notifications/config.json
// (notifications-and-sentinel.md §6.1).
func (p Paths) TerminalNotificationsFile() string {
	return filepath.Join(p.PiAgentDir, "extensions", "pi-terminal-notifications", "config.json")
}

// LoadTerminalNotifications reads the seed's config.json at path; shown is
// the path as messages should name it. A missing file is not a problem.
// A file that cannot be read, is not JSON or is not an object gives the zero
// value; an entry with a bad value is skipped and the rest is kept, as the
// seed does (§6.1). Unlike the seed, which stays silent, every problem is
// returned as a *ConfigError so doctor can say why a setting has no effect.
func LoadTerminalNotifications(path, shown string) (TerminalNotifications, error) {
	data, err := ReadFile(path, JSON)
	if errors.Is(err, fs.ErrNotExist) {
		return TerminalNotifications{}, nil
	}
	if err != nil {
		return TerminalNotifications{}, &ConfigError{Problems: []Problem{fileProblem(err, shown, "; using the built-in terminal table")}}
	}
	tn, problems := ParseTerminalNotifications(data, shown)
	if len(problems) > 0 {
		return tn, &ConfigError{Problems: problems}
	}
	return tn, nil
}

// ParseTerminalNotifications decodes the seed's config.json text.
func ParseTerminalNotifications(data []byte, shown string) (TerminalNotifications, []Problem) {
	if err := CheckNesting(data, JSON); err != nil {
		return TerminalNotifications{}, []Problem{fileProblem(err, shown, "; using the built-in terminal table")}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		p := Problem{File: shown, Msg: "not a JSON object; using the built-in terminal table"}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			p.Line = lineAt(data, int(se.Offset))
			p.Msg = "invalid JSON: " + se.Error() + "; using the built-in terminal table"
		}
		return TerminalNotifications{}, []Problem{p}
	}
	var tn TerminalNotifications
	var problems []Problem
	bad := func(key, msg string) {
		problems = append(problems, Problem{File: shown, Line: lineOfKey(data, key), Key: key, Msg: msg})
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := top[k]
		switch k {
		case "$schema":
		case "fallback":
			var v string
			if json.Unmarshal(raw, &v) != nil || !slices.Contains(protocols, v) {
				bad(k, fmt.Sprintf("fallback = %s: must be one of %s; ignored", compactJSON(raw), strings.Join(protocols, ", ")))
				continue
			}
			tn.Fallback = v
		case "termPrograms":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil || m == nil {
				bad(k, "termPrograms must be an object mapping TERM_PROGRAM names to protocols; ignored")
				continue
			}
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				var v string
				if json.Unmarshal(m[name], &v) != nil || !slices.Contains(protocols, v) || strings.TrimSpace(name) == "" {
					// Name and value are clipped each, and the whole again: two
					// clipped parts and the list still made 437 bytes (fuzz).
					bad(name, parserWords(fmt.Sprintf("termPrograms.%s = %s: must be one of %s; ignored", parserWords(name), compactJSON(m[name]), strings.Join(protocols, ", "))))
					continue
				}
				if tn.TermPrograms == nil {
					tn.TermPrograms = map[string]string{}
				}
				tn.TermPrograms[strings.TrimSpace(name)] = v
			}
		default:
			bad(k, fmt.Sprintf("unknown key %s (known: fallback, termPrograms); ignored", shownKey(k)))
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return tn, problems
}

// compactJSON is a JSON value as a problem quotes it: on one line and cut
// short (parserWords), since a value may be most of a MiB.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return parserWords(string(raw))
	}
	return parserWords(b.String())
}

// lineAt is the 1-based line of byte offset off.
func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// lineOfKey finds the first line that names key as a JSON object key; 0
// when it does not appear. Good enough to point a person at the entry.
func lineOfKey(data []byte, key string) int {
	quoted, _ := json.Marshal(key)
	for i, line := range bytes.Split(data, []byte("\n")) {
		if j := bytes.Index(line, quoted); j >= 0 && bytes.HasPrefix(bytes.TrimLeft(line[j+len(quoted):], " \t"), []byte(":")) {
			return i + 1
		}
	}
	return 0
}
