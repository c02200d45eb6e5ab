package commands

import (
	"slices"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/launch"
)

// The resume command Herdr 0.9 restores the agent with: herdr-pi wrap,
// --agent when given, what starts Pi, --session with the file.
func TestResumeArgv(t *testing.T) {
	for _, tc := range []struct {
		agent string
		argv  []string
		file  string
		want  []string
	}{
		{"", []string{"pi", "--model", "x"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		{"pi", []string{"npx", "-y", "@earendil-works/pi-coding-agent", "-c"}, "/s/b c.jsonl",
			[]string{"herdr-pi", "wrap", "--agent", "pi", "npx", "-y", "@earendil-works/pi-coding-agent", "--session", "/s/b c.jsonl"}},
		{"", []string{"sh", "-c", "pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		{"", []string{"pi"}, "", nil},
	} {
		got := resumeArgv(&wrapOptions{Agent: tc.agent, Argv: tc.argv}, launch.Parse(tc.argv, ""), tc.file)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %q: %q, want %q", tc.agent, tc.argv, got, tc.want)
		}
	}
}
