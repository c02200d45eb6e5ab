package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/golden"
)

// Seed 003's protocol table and its config file, as a person meets them:
// a wrapped agent blocks once, outside Herdr, and the terminal gets
// exactly one notification sequence, in the protocol its TERM_PROGRAM
// maps to — the built-in table, as the seed's config.json
// (<PI_CODING_AGENT_DIR>/extensions/pi-terminal-notifications/config.json)
// extends or overrides it, and herdr-pi's own config.toml over both. A
// config.json that is not JSON, or names a protocol that does not exist,
// leaves the built-in table in charge. The unit tests check the resolver
// and the config reader; this one checks that wrap uses them, byte for
// byte against testdata/TestWrapNotifiesInTheProtocolItsTerminalMapsTo.golden
// (-update rewrites it).
func TestWrapNotifiesInTheProtocolItsTerminalMapsTo(t *testing.T) {
	const (
		seedOverrides = `{"fallback": "osc777", "termPrograms": {"WezTerm": "osc777", "MyTerminal": "osc9"}}`
		notJSON       = `{"fallback": "osc777",`
		badNames      = `{"fallback": "osc42", "termPrograms": {"WezTerm": "bell", "MyTerminal": 9}}`
		// unreadable puts a directory where config.json should be (a file
		// without read permission would not do: tests may run as root).
		unreadable    = "<a directory>"
		tomlOverrides = "[notify]\nfallback = \"osc9\"\n[notify.term_programs]\nWezTerm = \"osc99\"\n"
	)
	cases := []struct {
		name, termProgram, seed, toml string
		kittyWindow                   string // KITTY_WINDOW_ID, "" unset
		want                          string // "9", "99" or "777"
	}{
		// The built-in table (seed 003, Notification Protocols).
		{name: "ghostty", termProgram: "ghostty", want: "9"},
		{name: "iTerm", termProgram: "iTerm.app", want: "9"},
		{name: "WezTerm", termProgram: "WezTerm", want: "9"},
		{name: "kitty", termProgram: "kitty", want: "99"},
		{name: "vscode", termProgram: "vscode", want: "99"},
		{name: "Warp", termProgram: "WarpTerminal", want: "777"},
		{name: "unset", termProgram: "", want: "99"},
		{name: "unknown", termProgram: "MyTerminal", want: "99"},
		// kitty sets KITTY_WINDOW_ID, not TERM_PROGRAM: OSC 99 even where
		// the fallback says otherwise, but a TERM_PROGRAM the table knows
		// (a terminal started from a kitty shell) keeps its own.
		{name: "kitty as it runs", kittyWindow: "3", want: "99"},
		{name: "kitty window over a fallback", kittyWindow: "3", toml: tomlOverrides, want: "99"},
		{name: "a known terminal started from kitty", termProgram: "WezTerm", kittyWindow: "3", want: "9"},
		// The seed's config.json extends and overrides it.
		{name: "seed config overrides an entry", termProgram: "WezTerm", seed: seedOverrides, want: "777"},
		{name: "seed config adds an entry", termProgram: "MyTerminal", seed: seedOverrides, want: "9"},
		{name: "seed config changes the fallback", termProgram: "SomeOtherTerminal", seed: seedOverrides, want: "777"},
		{name: "seed config keeps the other entries", termProgram: "ghostty", seed: seedOverrides, want: "9"},
		// A config.json that cannot be used falls back to the defaults.
		{name: "seed config not JSON", termProgram: "SomeOtherTerminal", seed: notJSON, want: "99"},
		{name: "seed config with invalid protocols", termProgram: "WezTerm", seed: badNames, want: "9"},
		{name: "seed config with an invalid fallback", termProgram: "MyTerminal", seed: badNames, want: "99"},
		{name: "seed config unreadable", termProgram: "WarpTerminal", seed: unreadable, want: "777"},
		// herdr-pi's own config.toml has the last word.
		{name: "config.toml over the seed config", termProgram: "WezTerm", seed: seedOverrides, toml: tomlOverrides, want: "99"},
		{name: "config.toml fallback over the seed's", termProgram: "SomeOtherTerminal", seed: seedOverrides, toml: tomlOverrides, want: "9"},
	}
	var seen []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := wrapBlockedOnceOutsideHerdr(t, c.termProgram, c.kittyWindow, c.seed, c.toml)
			counts := map[string]int{
				"9":   bytes.Count(raw, []byte("\x1b]9;")),
				"99":  bytes.Count(raw, []byte("\x1b]99;")),
				"777": bytes.Count(raw, []byte("\x1b]777;")),
			}
			for proto, n := range counts {
				want := 0
				if proto == c.want {
					want = 1
				}
				if n != want {
					t.Fatalf("TERM_PROGRAM=%q KITTY_WINDOW_ID=%q: OSC %s written %d times, want %d (one OSC %s sequence and no other); sequences: %q",
						c.termProgram, c.kittyWindow, proto, n, want, c.want, oscs(raw))
				}
			}
			// Every byte the terminal got, exactly: the agent's own output,
			// then the one sequence, with its title and body as sent.
			seen = append(seen, c.name+": "+strconv.Quote(pidInID.ReplaceAllString(string(raw), "${1}<PID>")))
			if !bytes.Contains(raw, []byte("Pi needs your input")) || !bytes.Contains(raw, []byte("approve")) {
				t.Fatalf("the sequence does not say what the agent waits for: %q", oscs(raw))
			}
		})
	}
	golden.Check(t, golden.Path(t), strings.Join(seen, "\n")+"\n")
}

// pidInID is the pid in an OSC 99 identifier (a wrapper's i=pi-ask-pid4242,
// herdr-pi notify's i=herdr-pi-4242), which differs from run to run.
var pidInID = regexp.MustCompile(`(pid|herdr-pi-)[0-9]+`)

// wrapBlockedOnceOutsideHerdr runs a fake agent under `herdr-pi wrap`
// outside Herdr with the given TERM_PROGRAM and KITTY_WINDOW_ID ("" unset), seed config.json
// and config.toml ("" none); the agent opens one wait and closes it. It
// returns every byte the terminal got.
func wrapBlockedOnceOutsideHerdr(t *testing.T, termProgram, kittyWindow, seedConfig, configToml string) []byte {
	t.Helper()
	dir := t.TempDir()
	project := filepath.Join(dir, "api-service")
	agentDir := filepath.Join(dir, "pi-agent")
	for _, d := range []string{project, filepath.Join(agentDir, "extensions", "pi-terminal-notifications")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	seedFile := filepath.Join(agentDir, "extensions", "pi-terminal-notifications", "config.json")
	switch seedConfig {
	case "":
	case "<a directory>":
		if err := os.Mkdir(seedFile, 0o700); err != nil {
			t.Fatal(err)
		}
	default:
		if err := os.WriteFile(seedFile, []byte(seedConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte("[herdr]\nagent = \"pi\"\n"+configToml), 0o600); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t,
		`print \e[?2026hready\e[?2026l\r\n`,
		"run herdr-pi waiting start --source deploy --id 1 --label approve",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 1",
		"sleep 300ms",
	)
	var env []string
	for _, kv := range withoutHerdr(os.Environ()) {
		// What else picks or wraps a protocol is left out: the case says.
		if name, _, _ := strings.Cut(kv, "="); name != "TERM_PROGRAM" && name != "KITTY_WINDOW_ID" && name != "TMUX" && name != "PI_CODING_AGENT_DIR" {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "PI_CODING_AGENT_DIR="+agentDir, "HERDR_PI_CONFIG="+config)
	if termProgram != "" {
		env = append(env, "TERM_PROGRAM="+termProgram)
	}
	if kittyWindow != "" {
		env = append(env, "KITTY_WINDOW_ID="+kittyWindow)
	}
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"sh", "-c", "cd " + project + " && exec herdr-pi wrap -- fakeagent " + script}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v\n%q", status, err, r.bytes())
	}
	return r.bytes()
}
