package store

import "strings"

// nearMinLen is the shortest ref a close match is looked for: below it one
// slip away from a prefix is most of the store.
const nearMinLen = 4

// maxNear bounds how many close matches an error names.
const maxNear = 3

// nearlyStarts reports whether id starts with ref but for one slip — a
// character wrong, left out, added or two neighbours swapped — or only
// but for capitals: the engine writes ids in lower case, some tools print
// UUIDs in upper.
func nearlyStarts(id, ref string) bool {
	ref = strings.ToLower(ref)
	if len(ref) < nearMinLen {
		return false
	}
	for l := len(ref) - 1; l <= len(ref)+1; l++ {
		if l <= len(id) && withinOneSlip(ref, id[:l]) {
			return true
		}
	}
	return false
}

// withinOneSlip is an optimal-string-alignment distance of at most one,
// on bytes: run ids are ASCII, and a ref that is not cannot be close.
func withinOneSlip(a, b string) bool {
	if a == b {
		return true
	}
	switch len(a) - len(b) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true // one wrong
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // two swapped
	case 1:
		a, b = b, a
		fallthrough
	case -1: // b has one more
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}
