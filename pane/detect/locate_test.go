package detect

import (
	"regexp"
	"testing"
	"unicode/utf8"
)

// The locator finds the line that assigns a key with a plain scan, the
// same lines the expression it replaced, `^\s*"?KEY"?\s*=`, matched: the
// expression is kept here as the reference.
func TestAssignsKeyMatchesWhatTheExpressionMatched(t *testing.T) {
	keys := []string{"contains", "id", "state", `a"b`, `"`, "a.b", "", "x y", "+", "é", " a", "  a", "\ta"}
	lines := []string{
		"", "contains", "contains=", "contains = [\"x\"]", "  \tcontains\t= 1",
		"\"contains\" = 1", "\"contains = 1", "contains\" = 1", "\"\"contains = 1",
		"xcontains = 1", "contains2 = 1", "contains == 1", "contains\r\n= 1",
		"\f\vcontains = 1", "\u00a0contains = 1", "# contains = 1", "id=1", "id \"= 1",
		"a\"b = 1", "\"a\"b\" = 1", "\"a\"b = 1", "\" = 1", "\"\" = 1", "\"\"\" = 1",
		"= 1", "\"= 1", "a.b = 1", "axb = 1", "x y = 1", "+ = 1", "é = 1", "state\"\"= 1", "  a = 1", " a = 1", "a = 1", "\" a\" = 1", "\t\ta = 1", "   ", "\t",
	}
	for _, k := range keys {
		re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(k) + `"?\s*=`)
		for _, line := range lines {
			if got, want := assignsKey(line, k), re.MatchString(line); got != want {
				t.Errorf("assignsKey(%q, %q) = %v, the expression says %v", line, k, got, want)
			}
		}
	}
}

// Finding a key's line compiled a regular expression for every key of
// every rule, at every parse: a third of what choosing the manifest cost
// at each start of wrap (perf). A plain scan allocates nothing.
func TestLocatingAKeyAllocatesNothing(t *testing.T) {
	l := newLocator([]byte("id = \"a\"\nversion = \"1\"\n[[rules]]\nid = \"r\"\nstate = \"idle\"\n\"contains\" = [\"x\"]\n"))
	var line int
	if a := testing.AllocsPerRun(20, func() {
		line = l.topKey("version") + l.ruleKey(0, "contains")
	}); a != 0 {
		t.Errorf("locating two keys allocated %v times, want 0", a)
	}
	if line != 2+6 {
		t.Errorf("lines found sum to %d, want 2 (version) + 6 (contains)", line)
	}
}

// Every line of up to five characters from the ones the expression cares
// about, against keys that begin or end with them.
func TestAssignsKeyMatchesTheExpressionOnEveryShortLine(t *testing.T) {
	const alphabet = " \t\r\"a=b"
	for _, k := range []string{"a", " a", "a ", `a"`, `"a`, "", "="} {
		re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(k) + `"?\s*=`)
		var walk func(line string)
		walk = func(line string) {
			if got, want := assignsKey(line, k), re.MatchString(line); got != want {
				t.Fatalf("assignsKey(%q, %q) = %v, the expression says %v", line, k, got, want)
			}
			if len(line) < 5 {
				for i := 0; i < len(alphabet); i++ {
					walk(line + alphabet[i:i+1])
				}
			}
		}
		walk("")
	}
}

// The plain scan against the expression it replaced, on any line and key
// the fuzzer makes. Both valid UTF-8, as TOML requires of a manifest:
// on an invalid byte the expression saw U+FFFD, so a key of that rune
// matched it, which no parsed manifest can show.
func FuzzAssignsKeyMatchesTheExpression(f *testing.F) {
	f.Add("  \"contains\" = 1", "contains")
	f.Add("\t\"a\"b\"\t= 1", `a"b`)
	f.Add("\" a\" = 1", " a")
	f.Fuzz(func(t *testing.T, line, key string) {
		if !utf8.ValidString(key) || !utf8.ValidString(line) {
			return
		}
		re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
		if got, want := assignsKey(line, key), re.MatchString(line); got != want {
			t.Fatalf("assignsKey(%q, %q) = %v, the expression says %v", line, key, got, want)
		}
	})
}
