package notify

import "testing"

// A hook's toast ends with the pane's names its own text does not say, as
// whole words in any case; its text comes first, unchanged.
func TestAHookBodyEndsWithWhatItDoesNotSay(t *testing.T) {
	p := Place{Label: "backend", Project: "api", Session: "deploy fixes"}
	for _, tc := range []struct{ title, body, want string }{
		{"Tests passed", "all 312", "all 312 · backend · api · deploy fixes"},
		{"Tests passed", "", "backend · api · deploy fixes"},
		{"Tests passed", "api", "api · backend · deploy fixes"},
		{"API tests passed", "Backend: 312 green", "Backend: 312 green · deploy fixes"},
		{"Tests passed", "rapid backends", "rapid backends · backend · api · deploy fixes"},
		{"deploy fixes merged", "backend/api", "backend/api"},
		{"Tests passed", "\x1b]0;evil\x07 ok", "\x1b]0;evil\x07 ok · backend · api · deploy fixes"},
	} {
		if got := p.After(tc.title, tc.body); got != tc.want {
			t.Errorf("After(%q, %q) = %q, want %q", tc.title, tc.body, got, tc.want)
		}
	}
	if got := (Place{}).After("t", "b"); got != "b" {
		t.Errorf("no place: %q, want the body as written", got)
	}
	if got := (Place{Label: "x\x07y"}).After("t", "b"); got != "b · x y" {
		t.Errorf("a label with a control character: %q", got)
	}
}
