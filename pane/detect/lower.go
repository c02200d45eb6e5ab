package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// lowerRust lower-cases s the way Rust's str::to_lowercase does, which is
// how Herdr compares `contains` needles: simple per-character mappings,
// except U+0130 (İ), which lower-cases to two characters, and capital
// sigma, which becomes final ς at the end of a word.
func lowerRust(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if casedBefore(s[:i]) && !casedAfter(s[i+len("Σ"):]) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// casedBefore: skipping case-ignorable characters backwards, the next one
// is cased.
func casedBefore(s string) bool {
	for len(s) > 0 {
		r, w := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-w]
		if !caseIgnorable(r) {
			return cased(r)
		}
	}
	return false
}

func casedAfter(s string) bool {
	for _, r := range s {
		if !caseIgnorable(r) {
			return cased(r)
		}
	}
	return false
}

func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable follows the Unicode definition: Mn, Me, Cf, Lm, Sk, and
// the word-break classes MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) {
		return true
	}
	switch r {
	case '\'', '.', ':', '·', '\u0387', '\u055F', '\u05F4', '\u2018', '\u2019', '\u2024',
		'\u2027', '\uFE13', '\uFE52', '\uFE55', '\uFF07', '\uFF0E', '\uFF1A':
		return true
	}
	return false
}
