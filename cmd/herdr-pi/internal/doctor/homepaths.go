package doctor

import (
	"path/filepath"
	"strings"
)

// ForPeople is rows as the text output shows them: every path under home
// that starts a word reads ~/…, as a person types it. A path inside
// quotes (a fix's command, quoted to paste as one word) stays whole, for
// no shell expands ~ there; so does the JSON, which never passes here.
func ForPeople(rows []Row, home string) []Row {
	home = filepath.Clean(home)
	if home == "/" || home == "." || !filepath.IsAbs(home) {
		return rows
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		r.Detail, r.Fix = tildeHome(r.Detail, home), tildeHome(r.Fix, home)
		out[i] = r
	}
	return out
}

// tildeHome replaces home with ~ where it starts a word of text and
// ends at a path separator or the word's end.
func tildeHome(text, home string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, home)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		after := text[i+len(home):]
		wordStart := i == 0 || strings.ContainsRune(" \t\n(", rune(text[i-1]))
		pathEnd := after == "" || strings.ContainsRune("/ \t\n),;:", rune(after[0])) ||
			after[0] == '.' && (len(after) == 1 || after[1] == ' ' || after[1] == '\n')
		b.WriteString(text[:i])
		if wordStart && pathEnd {
			b.WriteString("~")
		} else {
			b.WriteString(home)
		}
		text = after
	}
}
