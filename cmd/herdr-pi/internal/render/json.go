package render

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// JSON writes v as every --json output is written: indented by two spaces,
// then a newline, and harmless on a terminal as it stands (see
// [TerminalSafeJSON]), since people run these commands without jq too.
func JSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(TerminalSafeJSON(b), '\n'))
	return err
}

// JSONLine is [JSON] on one line, for outputs that are a stream of objects.
func JSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(TerminalSafeJSON(b), '\n'))
	return err
}

// TerminalSafeJSON rewrites the characters Go's encoder leaves raw but a
// terminal would act on as \u escapes: DEL, the C1 controls (U+0080–U+009F; some
// terminals take U+009B as CSI and U+009D as OSC) and the bidi controls that
// make the rest of a line read backwards. C0 controls are escaped by the
// encoder already. A decoder reads back exactly the same value; only the
// spelling changes. The input must be JSON as encoding/json writes it: those
// characters can only stand inside its strings there, where \u is allowed.
func TerminalSafeJSON(b []byte) []byte {
	i := firstUnsafe(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i >= 0 {
		r, size := utf8.DecodeRune(b[i:])
		out = append(out, b[:i]...)
		out = fmt.Appendf(out, `\u%04x`, r)
		b = b[i+size:]
		i = firstUnsafe(b)
	}
	return append(out, b...)
}

// firstUnsafe finds the first character [TerminalSafeJSON] escapes.
func firstUnsafe(b []byte) int {
	for j := 0; j < len(b); {
		if b[j] == 0x7f {
			return j
		}
		if b[j] < utf8.RuneSelf {
			j++
			continue
		}
		r, size := utf8.DecodeRune(b[j:])
		if r <= 0x9f || bidiControl(r) {
			return j
		}
		j += size
	}
	return -1
}
