package commands

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/launch"
	"github.com/herdr-pi/herdr-pi/settings"
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
		// A command that starts with a dash must come after "--", or the
		// restored wrap would read it as one of its own flags.
		{"pi", false, []string{"-mypi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--agent", "pi", "--", "-mypi", "--session", "/s/a.jsonl"}},
		{"", false, []string{"pi"}, "", nil},
		// The pane's label goes with it: a restored pane's notifications
		// still say which of the person's agents asks.
		{"pi", false, []string{"pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--agent", "pi", "--label", "fx-retry #2 fixer", "pi", "--session", "/s/a.jsonl"}},
	} {
		opts := &wrapOptions{Agent: tc.agent, NoProbe: tc.noProbe, Argv: tc.argv}
		if slices.Contains(tc.want, "--label") {
			opts.Label = "fx-retry #2 fixer"
		}
		got := resumeArgv(opts, launch.Parse(tc.argv, ""), tc.file)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %q: %q, want %q", tc.agent, tc.argv, got, tc.want)
		}
	}
}

// The agent Herdr shows: --agent when given, else [herdr] agent when the
// config sets it — a choice, which a guess from the command's name (wrap
// claude, with a claude manifest) must not override — else the agent
// detection chose.
func TestReportLabel(t *testing.T) {
	set := settings.Defaults()
	set.Herdr.Agent = "pi-custom"
	unset := settings.Defaults()
	for _, tc := range []struct {
		flag, detected string
		cfg            settings.Config
		want           string
	}{
		{"mine", "claude", set, "mine"},
		{"", "claude", set, "pi-custom"},
		{"", "pi", set, "pi-custom"},
		{"mine", "claude", unset, "mine"},
		{"", "claude", unset, "claude"},
		{"", "pi", unset, "pi"},
	} {
		if got := reportLabel(tc.flag, tc.detected, tc.cfg); got != tc.want {
			t.Errorf("reportLabel(%q, %q) with [herdr] agent %q = %q, want %q", tc.flag, tc.detected, tc.cfg.Herdr.Agent, got, tc.want)
		}
	}
}

// The agent a wrapper names when nothing names it (no --agent, no
// [detect] agent) is the one detection chose — but Pi's manifest reading
// the screen of a command that is not Pi, for want of one named after it,
// does not make that command Pi: Herdr shows `wrap bash` as bash. Pi, as
// the command or behind a runtime or runner, stays pi.
func TestShownAgent(t *testing.T) {
	// Pi's npm package, as node runs it.
	pkg := filepath.Join(t.TempDir(), "node_modules", "@earendil-works", "pi-coding-agent")
	cli := filepath.Join(pkg, "dist", "cli.js")
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{filepath.Join(pkg, "package.json"): `{"name":"@earendil-works/pi-coding-agent"}`, cli: ""} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	detectClaude := settings.Defaults()
	detectClaude.Detect.Agent = "claude"
	unset := settings.Defaults()
	for _, tc := range []struct {
		flag     string
		argv     []string
		cfg      settings.Config
		detected string
		want     string
	}{
		{"", []string{"bash"}, unset, "pi", "bash"},
		{"", []string{"/usr/bin/python3.12", "-i"}, unset, "pi", "python3.12"},
		{"", []string{"node", "server.js"}, unset, "pi", "node"},
		{"", []string{"pi"}, unset, "pi", "pi"},
		{"", []string{"/opt/pi/bin/pi", "--model", "x"}, unset, "pi", "pi"},
		{"", []string{"node", cli}, unset, "pi", "pi"},
		{"", []string{"npx", "-y", "@earendil-works/pi-coding-agent"}, unset, "pi", "pi"},
		{"pi", []string{"./bin/pi-dev"}, unset, "pi", "pi"},
		{"mine", []string{"bash"}, unset, "mine", "mine"},
		{"", []string{"bash"}, detectClaude, "claude", "claude"},
		{"", []string{"./claude"}, unset, "claude", "claude"},
		// A name that is no agent id is made one; one with nothing to
		// keep is herdr-pi's.
		{"", []string{"./my agent (v2)"}, unset, "pi", "my_agent__v2_"},
		{"", []string{"-._"}, unset, "pi", "herdr-pi"},
		{"", []string{strings.Repeat("x", 100)}, unset, "pi", strings.Repeat("x", 64)},
	} {
		opts := &wrapOptions{Agent: tc.flag, Argv: tc.argv}
		c := launch.Parse(tc.argv, "")
		got := shownAgent(tc.detected, runsPi(opts, c), opts, tc.cfg)
		if got != tc.want {
			t.Errorf("wrap %q (--agent %q, detected %q): %q, want %q", tc.argv, tc.flag, tc.detected, got, tc.want)
		}
		if err := settings.CheckAgent(got); err != nil {
			t.Errorf("wrap %q: %v", tc.argv, err)
		}
	}
}
