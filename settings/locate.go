package settings

import (
	"strings"
)

// LineOf is the line of a TOML file that sets key (a table's header for
// a table), or of the nearest table above it that has one; 0 when none
// is found. Messages about another program's TOML file (Herdr's) place
// their problems with it as herdr-pi's own config does.
func LineOf(data []byte, key ...string) int { return locateKey(data, key) }

// locateKey finds the line (1-based) where a dotted key path is set in TOML
// text; for a key the file does not set (a required value left out) it finds
// the nearest enclosing table. 0 when neither appears. The TOML decoder keeps
// key positions private, so this follows table headers and key assignments
// itself; it only has to be right for files that parsed, which keeps it
// simple.
func locateKey(data []byte, key []string) int {
	for n := len(key); n > 0; n-- {
		if line := locateExact(data, key[:n]); line > 0 {
			return line
		}
	}
	return 0
}

func locateExact(data []byte, key []string) int {
	var table []string
	// A table defined only by its sub-tables ([notify.ntfy] without
	// [notify]) is found at the first of them, when it has no line of its own.
	implicit := 0
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(stripComment(raw))
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") {
			inner := strings.Trim(line, "[] \t")
			table = splitDotted(inner)
			if equalPath(table, key) {
				return i + 1
			}
			if implicit == 0 && len(table) > len(key) && equalPath(table[:len(key)], key) {
				implicit = i + 1
			}
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		full := append(append([]string{}, table...), splitDotted(strings.TrimSpace(k))...)
		if equalPath(full, key) {
			return i + 1
		}
		// An inline table or a parent key that holds the unknown key.
		if len(full) < len(key) && equalPath(full, key[:len(full)]) {
			return i + 1
		}
		// A dotted key (mystery.x = 1) defines its tables as a header
		// would; found there when no line of their own names them.
		if implicit == 0 && len(full) > len(key) && equalPath(full[:len(key)], key) {
			implicit = i + 1
		}
	}
	return implicit
}

func stripComment(s string) string {
	inStr := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr != 0:
			if c == '\\' && inStr == '"' {
				i++
			} else if c == inStr {
				inStr = 0
			}
		case c == '"' || c == '\'':
			inStr = c
		case c == '#':
			return s[:i]
		}
	}
	return s
}

func splitDotted(s string) []string {
	var parts []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		case c == ' ' || c == '\t':
			// Space around the dots; a quoted name keeps its own (" " is a
			// key of its own, not "").
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

func equalPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
