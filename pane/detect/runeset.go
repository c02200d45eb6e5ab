package detect

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// runeSet is a sorted list of disjoint, non-adjacent inclusive rune ranges.
type runeSet [][2]rune

func fromTables(tabs ...*unicode.RangeTable) runeSet {
	var s runeSet
	for _, tab := range tabs {
		for _, r := range tab.R16 {
			s = appendStride(s, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range tab.R32 {
			s = appendStride(s, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	return s.normalize()
}

func appendStride(s runeSet, lo, hi, stride rune) runeSet {
	if stride == 1 {
		return append(s, [2]rune{lo, hi})
	}
	for r := lo; r <= hi; r += stride {
		s = append(s, [2]rune{r, r})
	}
	return s
}

func (s runeSet) normalize() runeSet {
	slices.SortFunc(s, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var out runeSet
	for _, r := range s {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

func union(sets ...runeSet) runeSet {
	var all runeSet
	for _, s := range sets {
		all = append(all, s...)
	}
	return all.normalize()
}

func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s {
		if r[0] > next {
			out = append(out, [2]rune{next, r[0] - 1})
		}
		next = r[1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, [2]rune{next, unicode.MaxRune})
	}
	return out
}

func (s runeSet) contains(r rune) bool {
	i, found := slices.BinarySearchFunc(s, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	_ = i
	return found
}

// writeRanges writes the set as the inside of a Go class. An empty set
// cannot be written as ranges, so it becomes a class that cannot match
// anything printable from a screen (the NUL rune minus itself is not
// expressible either); callers never produce one from a valid property.
func (s runeSet) writeRanges(b *strings.Builder) {
	for _, r := range s {
		if r[0] == r[1] {
			fmt.Fprintf(b, `\x{%X}`, r[0])
		} else {
			fmt.Fprintf(b, `\x{%X}-\x{%X}`, r[0], r[1])
		}
	}
}

// Rust's Perl classes are Unicode-aware (UTS #18 Annex C):
//
//	\d = General_Category=Decimal_Number
//	\s = White_Space
//	\w = Alphabetic + Mark + Decimal_Number + Connector_Punctuation + Join_Control
var (
	perlDigit = fromTables(unicode.Nd)
	perlSpace = fromTables(unicode.White_Space)

	perlWordOnce sync.Once
	perlWordSet  runeSet
)

func perlWord() runeSet {
	perlWordOnce.Do(func() {
		perlWordSet = union(alphabetic(), fromTables(unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control))
	})
	return perlWordSet
}

// Derived properties Go's unicode package does not carry, built from their
// definitions in the Unicode Character Database (DerivedCoreProperties).
func alphabetic() runeSet {
	return fromTables(unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl, unicode.Other_Alphabetic)
}

func lowercase() runeSet { return fromTables(unicode.Ll, unicode.Other_Lowercase) }
func uppercase() runeSet { return fromTables(unicode.Lu, unicode.Other_Uppercase) }

// isWordRune is the word test behind Rust's Unicode \b.
func isWordRune(r rune) bool { return r >= 0 && perlWord().contains(r) }

// generalCategories maps loose-matched names (see looseName) to Go's
// category tables. "C"/"Other" and "Cn" are left out on purpose: in Rust
// they include unassigned code points, which Go's tables do not.
var generalCategories = map[string]string{
	"l": "L", "letter": "L",
	"lu": "Lu", "uppercaseletter": "Lu",
	"ll": "Ll", "lowercaseletter": "Ll",
	"lt": "Lt", "titlecaseletter": "Lt",
	"lc": "LC", "casedletter": "LC",
	"lm": "Lm", "modifierletter": "Lm",
	"lo": "Lo", "otherletter": "Lo",
	"m": "M", "mark": "M", "combiningmark": "M",
	"mn": "Mn", "nonspacingmark": "Mn",
	"mc": "Mc", "spacingmark": "Mc",
	"me": "Me", "enclosingmark": "Me",
	"n": "N", "number": "N",
	"nd": "Nd", "decimalnumber": "Nd", "digit": "Nd",
	"nl": "Nl", "letternumber": "Nl",
	"no": "No", "othernumber": "No",
	"p": "P", "punctuation": "P", "punct": "P",
	"pc": "Pc", "connectorpunctuation": "Pc",
	"pd": "Pd", "dashpunctuation": "Pd",
	"ps": "Ps", "openpunctuation": "Ps",
	"pe": "Pe", "closepunctuation": "Pe",
	"pi": "Pi", "initialpunctuation": "Pi",
	"pf": "Pf", "finalpunctuation": "Pf",
	"po": "Po", "otherpunctuation": "Po",
	"s": "S", "symbol": "S",
	"sm": "Sm", "mathsymbol": "Sm",
	"sc": "Sc", "currencysymbol": "Sc",
	"sk": "Sk", "modifiersymbol": "Sk",
	"so": "So", "othersymbol": "So",
	"z": "Z", "separator": "Z",
	"zs": "Zs", "spaceseparator": "Zs",
	"zl": "Zl", "lineseparator": "Zl",
	"zp": "Zp", "paragraphseparator": "Zp",
	"cc": "Cc", "control": "Cc", "cntrl": "Cc",
	"cf": "Cf", "format": "Cf",
	"co": "Co", "privateuse": "Co",
	"cs": "Cs", "surrogate": "Cs",
}

// binaryProperties maps loose names and aliases to Go's property tables.
var binaryProperties = map[string]string{
	"asciihexdigit": "ASCII_Hex_Digit", "ahex": "ASCII_Hex_Digit",
	"bidicontrol": "Bidi_Control", "bidic": "Bidi_Control",
	"dash":       "Dash",
	"deprecated": "Deprecated", "dep": "Deprecated",
	"diacritic": "Diacritic", "dia": "Diacritic",
	"extender": "Extender", "ext": "Extender",
	"hexdigit": "Hex_Digit", "hex": "Hex_Digit",
	"hyphen":            "Hyphen",
	"idsbinaryoperator": "IDS_Binary_Operator", "idsb": "IDS_Binary_Operator",
	"idstrinaryoperator": "IDS_Trinary_Operator", "idst": "IDS_Trinary_Operator",
	"ideographic": "Ideographic", "ideo": "Ideographic",
	"joincontrol": "Join_Control", "joinc": "Join_Control",
	"logicalorderexception": "Logical_Order_Exception", "loe": "Logical_Order_Exception",
	"noncharactercodepoint": "Noncharacter_Code_Point", "nchar": "Noncharacter_Code_Point",
	"patternsyntax": "Pattern_Syntax", "patsyn": "Pattern_Syntax",
	"patternwhitespace": "Pattern_White_Space", "patws": "Pattern_White_Space",
	"prependedconcatenationmark": "Prepended_Concatenation_Mark", "pcm": "Prepended_Concatenation_Mark",
	"quotationmark": "Quotation_Mark", "qmark": "Quotation_Mark",
	"radical":           "Radical",
	"regionalindicator": "Regional_Indicator", "ri": "Regional_Indicator",
	"sentenceterminal": "Sentence_Terminal", "sterm": "Sentence_Terminal",
	"softdotted": "Soft_Dotted", "sd": "Soft_Dotted",
	"terminalpunctuation": "Terminal_Punctuation", "term": "Terminal_Punctuation",
	"unifiedideograph": "Unified_Ideograph", "uideo": "Unified_Ideograph",
	"variationselector": "Variation_Selector", "vs": "Variation_Selector",
	"whitespace": "White_Space", "wspace": "White_Space", "space": "White_Space",
}

// looseName applies Unicode's loose matching (UAX44-LM3): case, spaces,
// underscores and hyphens do not count.
func looseName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '_' || r == '-' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unicodeProperty resolves a \p{...} name the way Rust does, for the names
// whose meaning Go's tables reproduce exactly. Scripts are refused: Rust
// resolves a bare script name to Script_Extensions, which Go lacks.
func unicodeProperty(name string) (runeSet, error) {
	key, value, hasValue := strings.Cut(name, "=")
	if !hasValue {
		key, value, hasValue = strings.Cut(name, ":")
	}
	if hasValue {
		switch looseName(key) {
		case "gc", "generalcategory":
			name = value
		case "sc", "script", "scx", "scriptextensions":
			return nil, fmt.Errorf("script classes are not supported")
		default:
			return nil, fmt.Errorf("property %q is not supported", key)
		}
	}
	n := looseName(name)
	switch n {
	case "any":
		return runeSet{{0, unicode.MaxRune}}, nil
	case "ascii":
		return runeSet{{0, 0x7F}}, nil
	case "alphabetic", "alpha":
		return alphabetic(), nil
	case "lowercase", "lower":
		return lowercase(), nil
	case "uppercase", "upper":
		return uppercase(), nil
	}
	if cat, ok := generalCategories[n]; ok {
		return fromTables(unicode.Categories[cat]), nil
	}
	if hasValue {
		return nil, fmt.Errorf("unknown general category %q", value)
	}
	if prop, ok := binaryProperties[n]; ok {
		return fromTables(unicode.Properties[prop]), nil
	}
	for script := range unicode.Scripts {
		if looseName(script) == n {
			return nil, fmt.Errorf("script classes are not supported (Rust matches script extensions)")
		}
	}
	return nil, fmt.Errorf("unknown or unsupported Unicode property")
}
