package settings

import "strings"

// Meant is the name among names that word is a typo of — the same in
// another case, or a letter or two wrong, missing, extra or swapped (fewer
// the shorter the word) — or "". Config problems and the command line
// name it ("did you mean …?").
func Meant(word string, names []string) string {
	for _, n := range names {
		if n != word && strings.EqualFold(n, word) {
			return n
		}
	}
	for _, n := range names {
		if d := typoDistance(word, n); d > 0 && d <= 2 && 3*d <= len(word) {
			return n
		}
	}
	return ""
}

// typoDistance counts the edits from a to b: a character inserted,
// removed, replaced, or two neighbours swapped (optimal string alignment).
func typoDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
