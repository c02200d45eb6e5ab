// Package jstext reproduces the few JavaScript string rules that Pi
// extensions' payload and sentinel logic depend on (reference
// notifications-and-sentinel.md §27): JavaScript's whitespace set for
// trim/trimEnd, and split(/\r?\n/). Go's own rules differ (U+FEFF, U+0085),
// and a port that used them would disagree with the extensions it replaces.
package jstext

import "strings"

// IsSpace is JavaScript's whitespace: what /\s/, trim and trimEnd remove.
func IsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00a0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// Trim is String.prototype.trim.
func Trim(s string) string { return strings.TrimFunc(s, IsSpace) }

// TrimEnd is String.prototype.trimEnd.
func TrimEnd(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// SplitLines is s.split(/\r?\n/): a CR is part of the separator only
// directly before a LF; a lone CR stays in its line.
func SplitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines)-1; i++ {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	return lines
}
