package osc

import (
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/jstext"
)

// MaxCodePoints is how much of a title or body survives [Sanitize]: the
// seed's limit, counted in code points (notifications-and-sentinel.md §4.1).
const MaxCodePoints = 256

// Sanitize makes application text safe to put inside an OSC notification,
// following the seed package's rule (notifications-and-sentinel.md §4.1):
// every code point outside U+0020–U+007E and ≥ U+00A0 becomes a space (C0
// with ESC and BEL, DEL, C1 with the 8-bit ST and OSC), ';' becomes ':' so a
// field can never end early, runs of JavaScript whitespace collapse to one
// space, the ends are trimmed, and at most [MaxCodePoints] code points are
// kept, with no ellipsis.
//
// Unlike the seed, it also blanks the invisible characters [CleanLabel]
// does (bidi overrides and isolates, zero-width characters): a desktop
// notification is read as readily as a Herdr toast, and "T\u202eY" must not
// show reordered there while the toast path shows it plain.
//
// Input is bytes, not necessarily UTF-8: each invalid byte decodes as
// U+FFFD, which the rule keeps, so the output is always valid UTF-8 and a
// lone 0x9C or 0x9D byte can never reach the terminal raw.
func Sanitize(s string) string {
	return truncate(collapse(s, func(r rune) rune {
		switch {
		case !printable(r) || invisible(r):
			return ' '
		case r == ';':
			return ':'
		}
		return r
	}), MaxCodePoints, "")
}

// CleanLabel is the stricter rule for short labels such as a project or
// session name (notifications-and-sentinel.md §4.2): as [Sanitize], the
// invisible characters that can disguise text — zero-width characters,
// bidi marks, embeddings, overrides and isolates, U+061C, the soft hyphen
// U+00AD and U+FEFF (see invisible) — become spaces. It keeps ';' and cuts nothing:
// callers decide the length for their channel.
func CleanLabel(s string) string {
	return collapse(s, func(r rune) rune {
		if !printable(r) || invisible(r) {
			return ' '
		}
		return r
	})
}

// printable is the keep rule shared by both sanitisers.
func printable(r rune) bool { return (r >= 0x20 && r <= 0x7e) || r >= 0xa0 }

// invisible is what in U+200B–U+206F cannot be seen — zero-width
// characters and bidi marks (U+200B–U+200F), the line and paragraph
// separators (U+2028–U+2029), bidi embeddings and overrides
// (U+202A–U+202E), the word joiner, invisible operators, isolates and
// deprecated format characters (U+2060–U+206F) — plus the Arabic letter
// mark U+061C (the one bidi mark outside that block), the soft hyphen
// U+00AD and U+FEFF.
//
// The seed blanks that whole block (notifications-and-sentinel.md §4.2),
// and with it the punctuation between: apostrophes and quotes, dashes,
// bullets, the ellipsis, primes and ‹›. Models write those all the time,
// and none can disguise text, so they are kept.
func invisible(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x206f:
		return true
	}
	return r == 0x61c || r == 0xad || r == 0xfeff
}

// collapse maps every code point, turns each run of JavaScript whitespace
// into one space and trims the ends, as the seed's `replace(/\s+/g, " ")
// .trim()` does.
func collapse(s string, mapRune func(rune) rune) string {
	var b strings.Builder
	b.Grow(len(s))
	pendingSpace := false
	for _, r := range s {
		r = mapRune(r)
		if jstext.IsSpace(r) {
			pendingSpace = b.Len() > 0
			continue
		}
		if pendingSpace {
			b.WriteByte(' ')
			pendingSpace = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncate keeps at most n code points of s. When it cuts and ellipsis is
// not empty, the result is the first n-1 code points plus the ellipsis, so
// it still holds at most n code points.
func truncate(s string, n int, ellipsis string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := n
	if ellipsis != "" {
		keep = n - 1
	}
	i := 0
	for pos := range s {
		if i == keep {
			return s[:pos] + ellipsis
		}
		i++
	}
	return s
}

// Truncate keeps at most n code points of s, marking a cut with '…' (the
// ellipsis takes the last of the n places).
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return truncate(s, n, "…")
}

// TruncateBytes keeps at most n bytes of UTF-8 text s without splitting a
// code point, marking a cut with '…' that counts towards n
// (notifications-and-sentinel.md §4.4, the ntfy body limit).
func TruncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	limit := n - len(ellipsis)
	if limit < 0 {
		return ""
	}
	cut := 0
	for cut < len(s) {
		_, size := utf8.DecodeRuneInString(s[cut:])
		if cut+size > limit {
			break
		}
		cut += size
	}
	return s[:cut] + ellipsis
}
