package store

import "testing"

// osa is the optimal-string-alignment distance by the textbook table: the
// slow, obvious reference withinOneSlip must agree with.
func osa(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// FuzzWithinOneSlip: the quick check says exactly what the table says, on
// any bytes, and never panics.
func FuzzWithinOneSlip(f *testing.F) {
	for _, p := range [][2]string{{"3f0d9a2e", "3f0c9a2e"}, {"3f09a2e", "3f0c9a2"}, {"3f0cc9a2e", "3f0c9a2e"},
		{"3f0c92ae", "3f0c9a2e"}, {"ab", "ba"}, {"", "a"}, {"a", ""}, {"abc", "abc"}, {"abcd", "badc"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := withinOneSlip(a, b), osa(a, b) <= 1; got != want {
			t.Fatalf("withinOneSlip(%q, %q) = %v, the table says distance %d", a, b, got, osa(a, b))
		}
		nearlyStarts(a, b) // must not panic, whatever the lengths
	})
}
