package control

import (
	"testing"
)

// What Printable passes (ids, names, tokens, labels of the protocols)
// is printed by herdr-pi's own commands (close prints a ledger record's
// id as it is) and named in file names, logs and errors: it refuses what
// termtext.Harmful says may not reach a terminal, the bidi controls that
// make the rest of a line read backwards ("Trojan Source") included.
func TestPrintableRefusesWhatMayNotReachATerminal(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"w1:p2", true},
		{"café #2", true},
		{"مرحبا", true},
		{"", true},
		{"a\x1b[2Jb", false},
		{"a\u009bb", false},
		{"a\nb", false},
		{"a\xffb", false},
		{"w1:p2\u202e3p:1w", false}, // right-to-left override
		{"a\u061cb", false},         // Arabic letter mark
		{"a\u2066b", false},         // left-to-right isolate
		{"a\u200fb", false},         // right-to-left mark
	} {
		if got := Printable(tc.s); got != tc.want {
			t.Errorf("Printable(%+q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// A request over the control socket whose id or method holds a bidi
// control is refused like one with a control character.
func TestDecodeRefusesBidiControlsInIDs(t *testing.T) {
	for _, line := range []string{
		`{"type":"request","id":"r1\u202e","method":"status"}`,
		`{"type":"request","id":"r1","method":"sta\u061ctus"}`,
		`{"type":"event","name":"agent_\u202estart"}`,
	} {
		if _, err := Decode([]byte(line + "\n")); err == nil {
			t.Errorf("Decode(%s) took it", line)
		}
	}
}

// A wait's label is what the pane shows while it is open: its bidi
// controls become spaces as its control characters do; a source or an
// id holding one is refused, as one holding a control character is.
func TestWaitRequestCleansBidiControls(t *testing.T) {
	w, err := WaitRequest{Action: WaitStart, Source: "s", ID: "i", Label: "approve\u202etxt.exe\u061cnow"}.Normalize()
	if err != nil || w.Label != "approve txt.exe now" {
		t.Fatalf("label %+q, %v; want its bidi controls as spaces", w.Label, err)
	}
	for _, bad := range []WaitRequest{
		{Action: WaitStart, Source: "s\u202e", ID: "i"},
		{Action: WaitStop, Source: "s", ID: "i\u061c"},
	} {
		if _, err := bad.Normalize(); err == nil {
			t.Errorf("%+q taken", bad.Source+":"+bad.ID)
		}
	}
}

// A line is one JSON value and nothing after it: a stray closing bracket
// is as much a second value as a second object is. The decoder's More
// alone let "}" by, so the control socket, the tool bridge and the
// handoff ask took lines the contract refuses (FuzzParseHandoffAsk found
// an ask of another version taken as this one's that way).
func TestDecodeRefusesTextAfterTheValue(t *testing.T) {
	for _, line := range []string{
		`{"type":"request","id":"r1","method":"status"}}`,
		`{"type":"request","id":"r1","method":"status"}]`,
		`{"type":"request","id":"r1","method":"status"} {}`,
	} {
		if _, err := Decode([]byte(line + "\n")); err == nil {
			t.Errorf("Decode(%s) took it", line)
		}
	}
	if _, err := ParseHandoffAsk([]byte(`{"version":1,"run_id":"r","session_id":"s","owner_pid":1}}`)); err == nil {
		t.Error("ParseHandoffAsk took an ask followed by a stray }")
	}
}
