package settings

import (
	"strings"
	"testing"
)

// Session flags as Pi's parser reads them (pi-agent.md §2, §5.3).
func TestParsePiArgsSessionFlags(t *testing.T) {
	tests := []struct {
		args string
		want PiArgs
	}{
		{"-c", PiArgs{Continue: true}},
		{"--continue --model m", PiArgs{Continue: true}},
		{"-r", PiArgs{Resume: true}},
		{"--session /s/a.jsonl hi", PiArgs{Session: "/s/a.jsonl"}},
		{"--session-id 01a2", PiArgs{SessionID: "01a2"}},
		{"--fork 01a2 --session-dir ~/s", PiArgs{Fork: "01a2", SessionDir: "~/s"}},
		{"--no-session -p hi", PiArgs{NoSession: true, Print: true}},
		{"--ext-flag --session x", PiArgs{Session: "x"}}, // a flag-looking next arg is not swallowed
		{"--ext-flag value --session x", PiArgs{Session: "x"}},
		{"--session", PiArgs{}}, // no value: an unknown flag to Pi
		{"-- --session x", PiArgs{}},
		{"--name --session x", PiArgs{Session: ""}}, // --name takes the next argument whatever it is
	}
	for _, tt := range tests {
		got := ParsePiArgs(strings.Fields(tt.args))
		if got != tt.want {
			t.Errorf("ParsePiArgs(%q) = %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

// --mode takes text, json or rpc; anything else (or nothing) is an option
// Pi refuses, and the value is consumed either way.
func TestParsePiArgsModes(t *testing.T) {
	for args, want := range map[string]PiArgs{
		"--mode text":       {Mode: "text"},
		"--mode json":       {Mode: "json"},
		"--mode rpc":        {Mode: "rpc"},
		"--mode print":      {BadOption: true},
		"--mode":            {BadOption: true},
		"--mode -c":         {BadOption: true, Continue: true},
		"--mode rpc -r":     {Mode: "rpc", Resume: true},
		"--mode json -p hi": {Mode: "json", Print: true},
	} {
		if got := ParsePiArgs(strings.Fields(args)); got != want {
			t.Errorf("ParsePiArgs(%q) = %+v, want %+v", args, got, want)
		}
	}
}
