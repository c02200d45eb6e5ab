package detect

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tomlQuote is s as a manifest would write it, for explanations and
// problems: a literal string ('^ [\x{2801}-\x{28FF}] \S'), as manifests
// write patterns, so what is shown can be pasted back and a pattern's
// backslashes are not doubled the way %q doubles them; or, when s holds a '
// or a character that cannot be shown, a TOML basic string with escapes, so
// nothing invisible reaches the terminal.
func tomlQuote(s string) string {
	literal := !strings.ContainsRune(s, '\'')
	for _, r := range s {
		if !strconv.IsPrint(r) || r == utf8.RuneError {
			literal = false
			break
		}
	}
	if literal {
		return "'" + s + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case strconv.IsPrint(r) && !(r == utf8.RuneError && size == 1):
			b.WriteRune(r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
