// Package termtext makes text from elsewhere harmless on a terminal. It
// is the one rule for that below cmd: commands print through render,
// which uses it, and packages that write for a terminal themselves (the
// open command file's printf, bridge/control's Clip for log lines and
// error messages) use it directly.
package termtext

import (
	"strings"
	"unicode"
)

// Clean makes text from elsewhere (Herdr's replies, the workflow store,
// files, the environment) harmless on a terminal: control characters (ESC,
// BEL, C1 such as CSI U+009B, newlines) and invalid bytes
// become spaces, so none can start an escape sequence, retitle the window
// or clear the screen; the bidi controls become spaces too, so no name can
// make the rest of its line read backwards (a "Trojan Source" override).
func Clean(s string) string {
	return strings.Map(cleanRune, s)
}

// CleanLines is [Clean] for a message of several lines: it keeps the
// newlines (nothing else), so a list of problems stays a list.
func CleanLines(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return cleanRune(r)
	}, s)
}

func cleanRune(r rune) rune {
	if Harmful(r) {
		return ' '
	}
	return r
}

// Harmful reports the characters [Clean] replaces: controls, the
// replacement character (what an invalid byte decodes to) and the bidi
// controls. Code that marks them otherwise (a log line's '?') asks it, so
// there is one rule for what may reach a terminal.
func Harmful(r rune) bool {
	return unicode.IsControl(r) || r == unicode.ReplacementChar || IsBidiControl(r)
}

// IsBidiControl reports the characters that change the direction of the
// text after them: the marks, embeddings, overrides and isolates of
// Unicode's bidirectional algorithm (UAX #9).
func IsBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
