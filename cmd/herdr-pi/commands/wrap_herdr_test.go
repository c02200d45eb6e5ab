package commands

import (
	"slices"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/launch"
)

// The resume command Herdr 0.9 restores the agent with: herdr-pi wrap,
// --agent and --no-probe when given, what starts Pi, --session with the file.
func TestResumeArgv(t *testing.T) {
	for _, tc := range []struct {
		agent   string
		noProbe bool
		argv    []string
		file    string
		want    []string
	}{
		{"", false, []string{"pi", "--model", "x"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		{"", true, []string{"pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--no-probe", "pi", "--session", "/s/a.jsonl"}},
		{"pi", false, []string{"npx", "-y", "@earendil-works/pi-coding-agent", "-c"}, "/s/b c.jsonl",
			[]string{"herdr-pi", "wrap", "--agent", "pi", "npx", "-y", "@earendil-works/pi-coding-agent", "--session", "/s/b c.jsonl"}},
		{"", false, []string{"sh", "-c", "pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		{"", false, []string{"pi"}, "", nil},
	} {
		got := resumeArgv(&wrapOptions{Agent: tc.agent, NoProbe: tc.noProbe, Argv: tc.argv}, launch.Parse(tc.argv, ""), tc.file)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %q: %q, want %q", tc.agent, tc.argv, got, tc.want)
		}
	}
}
