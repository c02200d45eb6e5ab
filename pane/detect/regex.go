package detect

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher reports whether a pattern matches anywhere in a text.
type matcher interface {
	MatchString(s string) bool
}

// compileRust compiles a pattern written in the Rust regex crate's syntax
// (what Herdr manifests use) so that it matches exactly the texts Rust's
// would. The two dialects differ in Unicode defaults and escapes
// (herdr-detection-manifests.md, "Regex dialect"); the pattern is translated
// into Go syntax with every Perl class spelled out as Unicode ranges, and a
// pattern with \b or \B runs on a small VM whose word test is Unicode's.
// Anything that cannot be honoured exactly is an error, never a silent
// mismatch.
func compileRust(pat string) (matcher, error) {
	t := translator{src: pat}
	goPat, err := t.translate()
	if err != nil {
		return nil, err
	}
	if !t.wordBoundary {
		re, err := regexp.Compile(goPat)
		if err != nil {
			return nil, goSyntaxError(err)
		}
		return re, nil
	}
	re, err := syntax.Parse(goPat, syntax.Perl)
	if err != nil {
		return nil, goSyntaxError(err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, goSyntaxError(err)
	}
	return newWordVM(prog), nil
}

func goSyntaxError(err error) error {
	var se *syntax.Error
	if e, ok := err.(*syntax.Error); ok {
		se = e
		return fmt.Errorf("%s", se.Code)
	}
	return err
}

// translator rewrites Rust regex syntax into Go regexp syntax.
type translator struct {
	src          string
	pos          int
	out          strings.Builder
	wordBoundary bool // the pattern uses \b or \B
}

func (t *translator) errorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

func (t *translator) eof() bool { return t.pos >= len(t.src) }

func (t *translator) peek() rune {
	if t.eof() {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(t.src[t.pos:])
	return r
}

func (t *translator) next() rune {
	r, w := utf8.DecodeRuneInString(t.src[t.pos:])
	t.pos += w
	return r
}

func (t *translator) translate() (string, error) {
	if !utf8.ValidString(t.src) {
		return "", t.errorf("pattern is not valid UTF-8")
	}
	for !t.eof() {
		switch c := t.next(); c {
		case '\\':
			if err := t.escape(false); err != nil {
				return "", err
			}
		case '[':
			if err := t.class(); err != nil {
				return "", err
			}
		case '(':
			if err := t.group(); err != nil {
				return "", err
			}
		case '{':
			if err := t.counted(); err != nil {
				return "", err
			}
		default:
			t.out.WriteRune(c)
		}
	}
	return t.out.String(), nil
}

// group copies a group opener, rewriting Rust-only flags.
func (t *translator) group() error {
	if t.peek() != '?' {
		t.out.WriteByte('(')
		return nil
	}
	rest := t.src[t.pos+1:]
	switch {
	case strings.HasPrefix(rest, "P<"), strings.HasPrefix(rest, ":"),
		strings.HasPrefix(rest, "<") && !strings.HasPrefix(rest, "<=") && !strings.HasPrefix(rest, "<!"):
		t.out.WriteByte('(')
		return nil
	}
	// A flag group: (?flags) or (?flags:...).
	end := strings.IndexAny(rest, ":)")
	if end < 0 {
		return t.errorf("unclosed flag group")
	}
	flags, closer := rest[:end], rest[end]
	var kept strings.Builder
	seen := map[rune]bool{}
	negated := false
	for _, f := range flags {
		switch f {
		case '-':
			if negated {
				return t.errorf("repeated '-' in flags (?%s)", flags)
			}
			negated = true
			kept.WriteRune(f)
			continue
		case 'i', 'm', 's', 'U':
		case 'u':
			if negated {
				return t.errorf("(?-u) turns Unicode off; herdr-pi only supports Unicode-aware patterns")
			}
		case 'x':
			return t.errorf("verbose mode (?x) is not supported; write the pattern without it")
		case 'R':
			return t.errorf("CRLF mode (?R) is not supported")
		default:
			if strings.ContainsRune("=!<", f) {
				return t.errorf("look-around is not supported (Rust regex has none)")
			}
			return t.errorf("unknown flag %q in (?%s)", f, flags)
		}
		if seen[f] {
			return t.errorf("repeated flag %q in (?%s)", f, flags)
		}
		seen[f] = true
		if f != 'u' {
			kept.WriteRune(f)
		}
	}
	if flags == "" || strings.HasSuffix(flags, "-") {
		return t.errorf("empty or dangling flag group (?%s%c", flags, closer)
	}
	k := kept.String()
	t.pos += 1 + end + 1 // '?', flags, closer
	switch {
	case k == "" && closer == ')':
		// (?u): a no-op in Unicode mode.
	case k == "" && closer == ':':
		t.out.WriteString("(?:")
	case strings.HasSuffix(k, "-"):
		// (?i-u) lost its only negated flag.
		k = strings.TrimSuffix(k, "-")
		fmt.Fprintf(&t.out, "(?%s%c", k, closer)
	default:
		fmt.Fprintf(&t.out, "(?%s%c", k, closer)
	}
	return nil
}

// counted checks a counted repetition {n}, {n,} or {n,m}: Rust rejects a
// '{' that does not start one, where Go would read it as a literal.
func (t *translator) counted() error {
	end := strings.IndexByte(t.src[t.pos:], '}')
	if end < 0 {
		return t.errorf("unclosed counted repetition")
	}
	body := t.src[t.pos : t.pos+end]
	lo, hi, comma := strings.Cut(body, ",")
	if !allDigits(lo) || (comma && hi != "" && !allDigits(hi)) {
		if lo == "" && comma {
			return t.errorf("counted repetition {%s} without a minimum is not supported; write {0,%s}", body, hi)
		}
		return t.errorf("invalid counted repetition {%s} (escape a literal brace as \\{)", body)
	}
	t.out.WriteByte('{')
	t.out.WriteString(body)
	t.out.WriteByte('}')
	t.pos += end + 1
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// class copies a bracketed class, expanding escapes and refusing Rust's
// nested classes and set operations, which Go would read differently.
func (t *translator) class() error {
	t.out.WriteByte('[')
	if t.peek() == '^' {
		t.next()
		t.out.WriteByte('^')
	}
	if t.peek() == ']' {
		t.next()
		t.out.WriteString(`\]`)
	}
	prevDash := false // the last item was a '-' that may start a range
	first := true
	for !t.eof() {
		c := t.next()
		dash := prevDash
		prevDash = c == '-' && !first
		first = false
		switch c {
		case ']':
			t.out.WriteByte(']')
			return nil
		case '[':
			if t.peek() == ':' {
				// [:name:] — the name runs from after this ':' to the
				// next ":]" (searched past the ':', so "[:]" has none).
				rest := t.src[t.pos+1:]
				end := strings.Index(rest, ":]")
				if end < 0 {
					return t.errorf("nested classes are not supported")
				}
				name := strings.TrimPrefix(rest[:end], "^")
				if !posixClasses[name] {
					return t.errorf("unknown ASCII class [:%s:]", name)
				}
				t.out.WriteByte('[')
				t.out.WriteString(t.src[t.pos : t.pos+1+end+2])
				t.pos += 1 + end + 2
				continue
			}
			return t.errorf("nested classes are not supported; escape a literal bracket as \\[")
		case '\\':
			isSet := strings.ContainsRune("dDwWsSpP", t.peek())
			if isSet && dash {
				return t.errorf("a class escape cannot end a range")
			}
			if err := t.escape(true); err != nil {
				return err
			}
			if isSet && t.peek() == '-' && !strings.HasPrefix(t.src[t.pos:], "-]") {
				return t.errorf("a class escape cannot start a range")
			}
		case '&', '-', '~':
			if t.peek() == c {
				return t.errorf("class set operation %c%c is not supported", c, c)
			}
			t.out.WriteRune(c)
		default:
			t.out.WriteRune(c)
		}
	}
	return t.errorf("unclosed character class")
}

var posixClasses = map[string]bool{
	"alnum": true, "alpha": true, "ascii": true, "blank": true, "cntrl": true, "digit": true,
	"graph": true, "lower": true, "print": true, "punct": true, "space": true, "upper": true,
	"word": true, "xdigit": true,
}

func (t *translator) escape(inClass bool) error {
	if t.eof() {
		return t.errorf("pattern ends with a lone backslash")
	}
	c := t.next()
	switch c {
	case 'd', 'D':
		t.set(inClass, perlDigit, c == 'D')
	case 'w', 'W':
		t.set(inClass, perlWord(), c == 'W')
	case 's', 'S':
		t.set(inClass, perlSpace, c == 'S')
	case 'b', 'B':
		if inClass {
			return t.errorf(`\%c is not allowed in a class`, c)
		}
		if t.peek() == '{' {
			return t.errorf(`\b{...} boundaries are not supported`)
		}
		t.wordBoundary = true
		t.out.WriteByte('\\')
		t.out.WriteRune(c)
	case 'A', 'z':
		if inClass {
			return t.errorf(`\%c is not allowed in a class`, c)
		}
		t.out.WriteByte('\\')
		t.out.WriteRune(c)
	case 'x', 'u', 'U':
		r, err := t.hexEscape(c)
		if err != nil {
			return err
		}
		fmt.Fprintf(&t.out, `\x{%X}`, r)
	case 'p', 'P':
		set, err := t.property()
		if err != nil {
			return err
		}
		t.set(inClass, set, c == 'P')
	case 'a', 'f', 't', 'n', 'r', 'v':
		t.out.WriteByte('\\')
		t.out.WriteRune(c)
	case '<', '>':
		return t.errorf(`word-start/end assertions \%c are not supported`, c)
	default:
		switch {
		case c >= '0' && c <= '9':
			return t.errorf(`backreferences and octal escapes (\%c) are not supported`, c)
		case c < utf8.RuneSelf && !isAlnum(c):
			t.out.WriteByte('\\')
			t.out.WriteRune(c)
		default:
			return t.errorf(`unknown escape \%c`, c)
		}
	}
	return nil
}

func isAlnum(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hexEscape reads the digits of \xHH, \uHHHH, \UHHHHHHHH or their braced
// forms \x{H…}, \u{H…}, \U{H…}.
func (t *translator) hexEscape(kind rune) (rune, error) {
	var digits string
	if t.peek() == '{' {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return 0, t.errorf(`unclosed \%c{...} escape`, kind)
		}
		digits = t.src[t.pos+1 : t.pos+end]
		t.pos += end + 1
		if digits == "" || len(digits) > 8 {
			return 0, t.errorf(`invalid \%c{%s} escape`, kind, digits)
		}
	} else {
		n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[kind]
		if len(t.src)-t.pos < n {
			return 0, t.errorf(`\%c needs %d hex digits`, kind, n)
		}
		digits = t.src[t.pos : t.pos+n]
		t.pos += n
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || strings.ContainsAny(digits, "+-") {
		return 0, t.errorf(`invalid hex digits %q in \%c escape`, digits, kind)
	}
	if v > unicode.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, t.errorf(`\%c{%s} is not a Unicode scalar value`, kind, digits)
	}
	return rune(v), nil
}

// property resolves the name after \p or \P.
func (t *translator) property() (runeSet, error) {
	if t.eof() {
		return nil, t.errorf(`\p needs a property name`)
	}
	var name string
	if t.peek() == '{' {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return nil, t.errorf(`unclosed \p{...}`)
		}
		name = t.src[t.pos+1 : t.pos+end]
		t.pos += end + 1
	} else {
		name = string(t.next())
	}
	set, err := unicodeProperty(name)
	if err != nil {
		return nil, t.errorf(`\p{%s}: %v`, name, err)
	}
	return set, nil
}

// set writes a rune set: as a bracketed class outside a class, as bare
// ranges inside one (where a negation has to be spelled out).
func (t *translator) set(inClass bool, s runeSet, negate bool) {
	if inClass {
		if negate {
			s = s.complement()
		}
		s.writeRanges(&t.out)
		return
	}
	t.out.WriteByte('[')
	if negate {
		t.out.WriteByte('^')
	}
	s.writeRanges(&t.out)
	t.out.WriteByte(']')
}
