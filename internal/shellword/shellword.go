// Package shellword writes text as one word of a command line a person
// may paste into any shell they use (POSIX sh, bash, zsh, fish): the
// open command file, and every hint that names a path or a name in a
// command to run. It only quotes; it does not clean text for a terminal
// (see internal/termtext).
package shellword

import "strings"

// Quote makes s one word for a POSIX shell (and fish): inside single quotes,
// with each single quote and each backslash in s closed, escaped and
// reopened. fish reads \' and \\ inside single quotes as escapes, so a
// backslash left inside could end fish's quote early and run the rest;
// outside the quotes, \\ is one backslash in every shell.
func Quote(s string) string {
	return "'" + quoteReplacer.Replace(s) + "'"
}

var quoteReplacer = strings.NewReplacer("'", `'\''`, `\`, `'\\'`)

// Word is s as one word for a POSIX shell (and fish): itself when no
// shell reads anything into it, else as [Quote] makes it. '=' and '%' are
// special only where a word starts (zsh's =cmd, fish's %self, which is
// its pid); '#' and '~' are quoted wherever they stand: zsh with
// EXTENDED_GLOB reads "fixer#2" as a pattern (and, finding no file,
// refuses the command), and bash expands a '~' that follows '='.
func Word(s string) string {
	if s != "" && s[0] != '=' && s[0] != '%' && strings.Trim(s, shellSafe) == "" {
		return s
	}
	return Quote(s)
}

// shellSafe is what no shell reads anything into inside a word.
const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:@%+="
