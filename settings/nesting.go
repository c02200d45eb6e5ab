package settings

import "bytes"

// The nesting scanners run before any decoder sees a file, in one linear
// pass that understands just enough syntax (strings, comments, and for TOML
// which part of a line is a key) to count levels. They return the 1-based
// line where nesting first goes deeper than limit, or 0.
//
// For TOML the count is an upper bound of how deep the decoded document
// nests (the document itself is level 1), which the fuzz target checks
// against the decoder: every open array or inline table counts, every dot
// of a dotted key counts, and a table header counts its path twice per
// segment, since each segment may be an array of tables plus its element.
// For JSON it is exactly the nesting of arrays and objects.

// tomlDepth scans TOML text.
func tomlDepth(data []byte, limit int) int {
	type open struct {
		kind   byte // '[' array, '{' inline table, 'h' table header
		weight int
		double bool // [[header]]
	}
	var (
		stack []open
		sum   int // total weight on the stack
		base  = 1 // the document, plus the current table header's depth
		dots  int // dots of the current key, until its value opens or ends
		inKey = true
		start = true // at the start of a line, outside any bracket
		line  = 1
	)
	depth := func() int { return base + sum + dots }
	push := func(o open) bool {
		stack = append(stack, o)
		sum += o.weight
		dots = 0
		return depth() > limit
	}
	if depth() > limit {
		return line
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '\n':
			line++
			if len(stack) == 0 {
				inKey, start, dots = true, true, 0
			}
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
				i += j - 1
				continue
			}
			return 0
		case '"', '\'':
			end, lines := skipTOMLString(data, i)
			line += lines
			i = end - 1
		case '[':
			if start && len(stack) == 0 {
				o := open{kind: 'h', weight: 1}
				if i+1 < len(data) && data[i+1] == '[' {
					o.double, o.weight = true, 2
					i++
				}
				stack = append(stack, o)
				inKey, dots = true, 0
				break
			}
			if push(open{kind: '[', weight: 1 + dots}) {
				return line
			}
			inKey = false
		case '{':
			if push(open{kind: '{', weight: 1 + dots}) {
				return line
			}
			inKey = true
		case ']', '}':
			if len(stack) == 0 {
				break
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.kind == 'h' {
				// A header sets the table every following key is in.
				base = 1 + top.weight + 2*dots
				if top.double && i+1 < len(data) && data[i+1] == ']' {
					i++
				}
				dots = 0
				if base > limit {
					return line
				}
				inKey = false
				break
			}
			// What closed was a value: a key follows only after a comma
			// or a newline.
			sum -= top.weight
			dots, inKey = 0, false
		case ',':
			dots = 0
			inKey = len(stack) > 0 && stack[len(stack)-1].kind == '{'
		case '=':
			if inKey {
				inKey = false
				if depth() > limit {
					return line
				}
			}
		case '.':
			if inKey {
				dots++
				if top := len(stack) - 1; top >= 0 && stack[top].kind == 'h' {
					if 1+stack[top].weight+2*dots > limit {
						return line
					}
				} else if depth() > limit {
					return line
				}
			}
		}
		start = false
	}
	return 0
}

// skipTOMLString returns the index just past the string that starts at
// data[i] (one of the four TOML string kinds) and the newlines inside it.
// An unterminated single-line string ends at the newline, so one typo
// cannot hide the rest of the file from the scan.
func skipTOMLString(data []byte, i int) (end, lines int) {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		// Multi-line: ends at the first run of three or more quotes; up to
		// two extra quotes before the closing three belong to the content.
		for j := i + 3; j < len(data); j++ {
			switch data[j] {
			case '\n':
				lines++
			case '\\':
				if q == '"' {
					if j+1 < len(data) && data[j+1] == '\n' {
						lines++
					}
					j++
				}
			case q:
				n := 0
				for j+n < len(data) && data[j+n] == q {
					n++
				}
				if n >= 3 {
					return j + min(n, 5), lines
				}
				j += n - 1
			}
		}
		return len(data), lines
	}
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\n':
			return j, 0
		case '\\':
			if q == '"' && j+1 < len(data) && data[j+1] != '\n' {
				j++
			}
		case q:
			return j + 1, 0
		}
	}
	return len(data), 0
}

// jsonDepth scans JSON text.
func jsonDepth(data []byte, limit int) int {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			line++
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				switch data[i] {
				case '\\':
					i++
				case '\n':
					line++ // invalid JSON; keep the line count honest anyway
				}
			}
		case '[', '{':
			depth++
			if depth > limit {
				return line
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0
}
