package notify

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/board"
)

// withOthersSafe fails t when a body made of own and another wrapper's
// places is not fit for Herdr: over its 240 code points, invalid UTF-8, a
// control or bidi character, or an entry named that was not held.
func withOthersSafe(t *testing.T, own string, places []string) {
	t.Helper()
	var others []board.Held
	held := map[string]bool{}
	for i, p := range places {
		e := "e" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		others = append(others, board.Held{Entry: e, Place: p, Kind: board.Kind(i % 3)})
		held[e] = true
	}
	own = Message{Body: own}.screenBody(ownRoom)
	body, named := withOthers(own, others, herdrBodyMax)
	if n := utf8.RuneCountInString(body); n > herdrBodyMax || !utf8.ValidString(body) {
		t.Fatalf("body of %d code points (valid %v): %q", n, utf8.ValidString(body), body)
	}
	for _, r := range body {
		if unicode.IsControl(r) || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			t.Fatalf("body holds %U: %q", r, body)
		}
	}
	for _, e := range named {
		if !held[e] {
			t.Fatalf("named %q, which no wrapper held", e)
		}
	}
}

// What another wrapper left on the board reaches a toast only cleaned and
// cut: controls and bidi overrides are blanked, a long or broken name is
// cut, and the body stays within Herdr's 240 code points however many
// panes ask.
func TestOthersNamesAreCleanedAndBounded(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, places := range [][]string{
		{"api\x1b]0;evil\x07", "do\u202ecs", "\x9b2J", ""},
		{long, long[:511], string([]byte{0xff, 0xfe}), "ok"},
		strings.Fields(strings.Repeat("agent api docs web ", 20)),
	} {
		withOthersSafe(t, "Which database? \x1b[31m"+long, places)
	}
}

func FuzzWithOthers(f *testing.F) {
	f.Add("own", "api", "docs\u202e", "\x1b[2J")
	f.Add("", strings.Repeat("ab", 300), "", "x")
	f.Fuzz(func(t *testing.T, own, a, b, c string) {
		withOthersSafe(t, own, []string{a, b, c, a, b, c})
	})
}

// A toast names the others by what they tell: the questions first, since
// those panes wait for the person, then the runs that failed, then those
// that finished. What does not fit is counted, and nothing after it is
// named: a finished run never takes the room of a question left out.
func TestOthersAreNamedQuestionsFirst(t *testing.T) {
	held := func(kinds string) []board.Held {
		var out []board.Held
		for i, k := range kinds {
			kind := map[rune]board.Kind{'a': board.Asking, 'x': board.Failed, 'f': board.Finished}[k]
			out = append(out, board.Held{Entry: fmt.Sprint("e", i), Place: fmt.Sprintf("%c%d", k, i), Kind: kind})
		}
		return out
	}
	for _, tc := range []struct {
		own, kinds string
		limit      int
		want       string
		named      []string
	}{
		{"api", "aa", herdrBodyMax, "api · also asking: a0, a1", []string{"e0", "e1"}},
		{"api", "f", herdrBodyMax, "api · also finished: f0", []string{"e0"}},
		{"api", "fxa", herdrBodyMax, "api · also asking: a2 · failed: x1 · finished: f0", []string{"e2", "e1", "e0"}},
		{"", "xf", herdrBodyMax, "also failed: x0 · finished: f1", []string{"e0", "e1"}},
		// Room for the question and a count; the news is counted.
		{"api", "ffa", utf8.RuneCountInString("api · also asking: a2, +2 more"), "api · also asking: a2, +2 more", []string{"e2"}},
		// No room for the question: nothing else is named.
		{"api", "fa", utf8.RuneCountInString("api · also asking: a1, +1 more") - 1, "api · +2 more panes", nil},
		{"api", "aa", utf8.RuneCountInString("api · also asking: a0, +1 more") - 1, "api · +2 more panes asking", nil},
	} {
		body, named := withOthers(tc.own, held(tc.kinds), tc.limit)
		if body != tc.want || !slices.Equal(named, tc.named) {
			t.Errorf("withOthers(%q, %s, %d) = %q %q, want %q %q", tc.own, tc.kinds, tc.limit, body, named, tc.want, tc.named)
		}
	}
}
