package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeRun: any bytes decode or fail with an error, never a panic,
// and whatever decodes can be listed and picked from.
func FuzzDecodeRun(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(strings.ReplaceAll(reviewRun, "%CWD%", "/nonexistent")))
	f.Add([]byte(`{"agents":[{"id":"r:1","name":"a#2","attemptDetails":[{"attempt":2},{"attempt":2}]},{"id":"a#2"}]}`))
	f.Add([]byte(`{"agents":[{"id":"","name":"","label":"","attemptDetails":[{"attempt":1}]}]}`))
	// Real state.json files from the engine (testdata/engine/*.json).
	paths, _ := filepath.Glob(filepath.Join("testdata", "engine", "*.json"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := DecodeRun(data)
		if err != nil {
			if rec != nil {
				t.Fatal("a record with an error")
			}
			return
		}
		r := &Run{ID: "fuzzrun", Record: rec}
		for _, a := range r.Attempts() {
			_ = a.Model()
			_ = a.Settled()
			_ = a.SessionPath()
			sel, err := ParseSelector(a.Name())
			if err != nil {
				continue // an agent without name, label or id
			}
			got, err := r.Pick(sel)
			var amb *AmbiguousAgentError
			var none *NoAttemptError
			switch {
			case err == nil:
				if got.Record.N != sel.N {
					t.Fatalf("%s picked attempt %d", sel, got.Record.N)
				}
			case errors.As(err, &amb), errors.As(err, &none):
				// Another agent's id or name shadows this one's, or
				// its name has a #n of its own.
			default:
				t.Fatalf("%s: %v", sel, err)
			}
		}
	})
}

// FuzzParseSelector: a selector either fails as a SelectorError or reads
// back the same from its String.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"api", "api#2", "#2", "api#0", "a#b#3", "fix #12 now", "3", "x#99999999999999999999", "#", " ", "é#1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sel, err := ParseSelector(text)
		if err != nil {
			var se *SelectorError
			if !errors.As(err, &se) {
				t.Fatalf("%q: %T %v", text, err, err)
			}
			return
		}
		if sel.Agent == "" || sel.N < 0 || sel.N > maxAttemptNumber {
			t.Fatalf("%q: %+v", text, sel)
		}
		again, err := ParseSelector(sel.String())
		if err != nil || again != sel {
			t.Fatalf("%q → %+v → %q → %+v, %v", text, sel, sel.String(), again, err)
		}
	})
}

// FuzzForkHeaderProblem: whatever precedes it in lines that do not parse,
// a transcript whose first entry is Pi's header is never refused, and one
// without it never taken.
func FuzzForkHeaderProblem(f *testing.F) {
	for _, s := range []string{"", "garbage", "{\"type\":\"sess", "null", "[1]", "{}", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, junk string) {
		// Lines that cannot parse as JSON: no JSON value starts with x.
		var pre strings.Builder
		for _, l := range strings.Split(junk, "\n") {
			pre.WriteString("x" + l + "\n")
		}
		header := `{"type":"session","id":"x"}` + "\n"
		if p := forkHeaderProblem(strings.NewReader(pre.String() + header)); p != "" {
			t.Fatalf("refused after %q: %s", pre.String(), p)
		}
		if p := forkHeaderProblem(strings.NewReader(pre.String())); p == "" {
			t.Fatalf("took %q, which has no header", pre.String())
		}
	})
}

// FuzzDecodeLease: a decoded lease satisfies the engine's rules.
func FuzzDecodeLease(f *testing.F) {
	f.Add([]byte(`{"pid":32754,"token":"ff1bf489","startedAt":1796131938919.6892}`))
	f.Add([]byte(`{"pid":"7","token":"t","startedAt":"1"}`))
	f.Add([]byte(`{"pid":7,"token":"t","startedAt":1e999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeLease(data)
		if err != nil {
			return
		}
		if l.PID <= 0 || l.Token == "" || l.StartedAt != l.StartedAt {
			t.Fatalf("%s decoded to %+v", data, l)
		}
	})
}
