package detect

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// Rust regex semantics that differ from Go's defaults, each checked on the
// text that tells them apart.
func TestRustRegexSemantics(t *testing.T) {
	cases := []struct {
		pat, text string
		want      bool
	}{
		// \w, \d, \s are Unicode-aware in Rust.
		{`^\w+$`, "müde", true},
		{`^\w$`, "é", true},
		{`^\w$`, "Ⓐ", true}, // Other_Alphabetic, category So
		{`^\w$`, "\u0301", true},
		{`^\w$`, "-", false},
		{`^\d$`, "٣", true},
		{`^\d$`, "x", false},
		{`^\s$`, "\u00a0", true},
		{`^\s$`, "\u2003", true},
		{`^\S$`, "\u00a0", false},
		{`^\W$`, "ü", false},
		{`^\D$`, "٣", false},
		// \b uses Unicode word characters: no boundary inside "abü".
		{`\bab\b`, "abü", false},
		{`\bab\b`, "ab ü", true},
		{`\bab\b`, "üab", false},
		{`\Bb`, "üb", true},
		{`^\s*[\u2800-\u28FF]+\s+\p{Alphabetic}+\w*ing\b`, "⠋ Thinking", true},
		{`^\s*[\u2800-\u28FF]+\s+\p{Alphabetic}+\w*ing\b`, "⠋ Thinkingü", false},
		{`^\s*[\u2800-\u28FF]+\s+\p{Alphabetic}+\w*ing\b`, "  ⠙⠹ Läuftnoching.", true},
		// Escapes Go lacks.
		{`^\u2800$`, "\u2800", true},
		{`^\u{2800}$`, "\u2800", true},
		{`^\x{2800}$`, "\u2800", true},
		{`^\U0001F600$`, "😀", true},
		{`^\U{1F600}$`, "😀", true},
		{`^[\u{fe0e}\u{fe0f}]$`, "\ufe0f", true},
		{`^⚠[\u{fe0e}\u{fe0f}]?(?:\s|$)`, "⚠\ufe0f Action", true},
		// Properties, loosely named.
		{`^\p{Alphabetic}+$`, "Ωmega", true},
		{`^\p{alpha}$`, "1", false},
		{`^\p{White_Space}$`, "\u3000", true},
		{`^\p{L}\p{Lu}$`, "aB", true},
		{`^\p{Letter}$`, "ß", true},
		{`^\pL$`, "ß", true},
		{`^\PL$`, "ß", false},
		{`^\p{gc=Nd}$`, "7", true},
		{`^\p{Uppercase}$`, "Ⓐ", true},
		{`^[^\W\d]+$`, "abc", true},
		{`^[^\W\d]+$`, "ab1", false},
		{`^[\w&]+$`, "a&ü", true},
		{`^[\s]$`, "\u00a0", true},
		{`^[\S]$`, "\u00a0", false},
		{`^[\D]$`, "5", false},
		{`^[[:alpha:]]+$`, "abc", true},
		{`^[[:alpha:]]+$`, "äbc", false}, // POSIX classes stay ASCII, as in Rust
		// Anchors: the whole text unless (?m).
		{`^b`, "a\nb", false},
		{`(?m)^b`, "a\nb", true},
		{`a$`, "a\n", false},
		{`(?m)a$`, "a\nb", true},
		{`(?s)a.b`, "a\nb", true},
		{`a.b`, "a\nb", false},
		{`(?i)working`, "WORKING", true},
		{`(?iu)working`, "WORKING", true},
		{`(?u)x`, "x", true},
		{`(?u:x)y`, "xy", true},
		{`(?i)ǅ`, "ǆ", true},
		{`a{2}`, "aa", true},
		{`a{2,}`, "a", false},
		{`a{1,3}b`, "aab", true},
		{`x}`, "x}", true},
		{`\{`, "{", true},
		{`\-\#\&\~\ `, "-#&~ ", true},
		{`(?P<n>a)|(?<m>b)`, "b", true},
		{`[]a]`, "]", true},
		{`[a-]`, "-", true},
		{`(?U)a+`, "aaa", true},
		{`\Aab\z`, "ab", true},
		{`[\x00-\x{10FFFF}]`, "\U0010FFFF", true},
	}
	for _, c := range cases {
		m, err := compileRust(c.pat)
		if err != nil {
			t.Errorf("compileRust(%q): %v", c.pat, err)
			continue
		}
		if got := m.MatchString(c.text); got != c.want {
			t.Errorf("%q on %q: got %v, want %v", c.pat, c.text, got, c.want)
		}
	}
}

// What Rust rejects, or what cannot be honoured exactly, is an error.
func TestRustRegexRejected(t *testing.T) {
	for _, pat := range []string{
		`a{,3}`, `a{`, `a{x}`, `{`, `[a[bc]]`, `[a&&b]`, `[a--b]`, `[a~~b]`,
		`(?x)a b`, `(?R)a`, `(?-u)\w`, `(?i-u)a`, `\1`, `\0`, `\p{Greek}`, `\p{sc=Latin}`,
		`\p{Nope}`, `\p{C}`, `\Q.\E`, `\C`, `\<a`, `a\>`, `\b{start}a`, `(?=a)`, `(?!a)`,
		`(?<=a)b`, `(?<!a)b`, `(?#c)a`, `[\b]`, `(?ii)a`, `(?i-)a`, `(?)a`, `\x{110000}`,
		`\u{D800}`, `\uZZZZ`, `\x4`, `a**`, `(`, `)`, `[a`, `\`, `\e`, `[a-\d]`, `[\d-z]`,
		`\p{`, `(?i`, `a{1001}`, `\z{`, `[[:nope:]]`,
	} {
		if _, err := compileRust(pat); err == nil {
			t.Errorf("compileRust(%q): accepted, want an error", pat)
		}
	}
}

// The word VM and package regexp must agree on every pattern without \b.
func TestWordVMAgreesWithRegexp(t *testing.T) {
	pats := []string{`a+b`, `(?i)x|yz*`, `^\s*[\x{2800}-\x{28FF}]+\s+\w+`, `(?m)^b$`, `(?s).+`, `a.c`, `[^a]+$`, `^$`, `(a|ab)(c|bcd)(d*)`}
	texts := []string{"", "aab", "XyZZ", "  ⠋ Working", "a\nb\n", "a\nc", "abc", "bbb", "abcd", "\n"}
	for _, p := range pats {
		goRe := regexp.MustCompile(p)
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		vm := newWordVM(prog)
		for _, s := range texts {
			if got, want := vm.MatchString(s), goRe.MatchString(s); got != want {
				t.Errorf("%q on %q: vm %v, regexp %v", p, s, got, want)
			}
		}
	}
}

func TestLowerRust(t *testing.T) {
	for in, want := range map[string]string{
		"Working...": "working...",
		"İ":          "i\u0307",
		"ΟΔΟΣ":       "οδος",
		"ΟΔΟΣ ΣΑ":    "οδος σα",
		// Inside a word, with a cased letter after it, sigma is not final.
		"ΑΣΑ": "ασα",
		"Σ":   "σ",
		"AΣ'": "aς'",
		"ÄÖÜ": "äöü",
	} {
		if got := lowerRust(in); got != want {
			t.Errorf("lowerRust(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCompileRust(f *testing.F) {
	for _, s := range []string{`^\s*[\u2800-\u28FF]+\s+\p{Alphabetic}+\w*ing\b`, `(?i)a{1,3}`, `[^\W\d]`, `\x{2800}`, `(?m)^$`, `[[:alpha:]\p{L}]`} {
		f.Add(s, "⠋ Thinking abü\n")
	}
	f.Fuzz(func(t *testing.T, pat, text string) {
		if len(pat) > 200 || len(text) > 2000 {
			return
		}
		m, err := compileRust(pat)
		if err != nil {
			return
		}
		m.MatchString(text)
		// Without word boundaries the translated pattern also runs on
		// package regexp; both engines must agree on the Go program.
		tr := translator{src: pat}
		goPat, err := tr.translate()
		if err != nil {
			t.Fatalf("compiled but translate fails: %v", err)
		}
		if !tr.wordBoundary {
			re, err := syntax.Parse(goPat, syntax.Perl)
			if err != nil {
				return
			}
			prog, err := syntax.Compile(re.Simplify())
			if err != nil {
				return
			}
			if strings.ToValidUTF8(text, "\uFFFD") == text {
				if a, b := newWordVM(prog).MatchString(text), m.MatchString(text); a != b {
					t.Fatalf("%q on %q: vm %v, regexp %v", pat, text, a, b)
				}
			}
		}
	})
}
