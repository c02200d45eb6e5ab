package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every range the config accepts, at both ends of it: the last value in
// is accepted, the first value out is a problem naming its key
// (docs/configuration.md).
func TestValidationBoundaries(t *testing.T) {
	topic := func(n int) string { return strings.Repeat("t", n) }
	for _, c := range []struct {
		name, toml string
		bad        string // the key of the one problem; "" when valid
	}{
		{"debounce 0s", "[detect]\ndebounce = \"0s\"", ""},
		{"debounce 10s", "[detect]\ndebounce = \"10s\"", ""},
		{"debounce above 10s", "[detect]\ndebounce = \"10.001s\"", "detect.debounce"},
		{"startup_grace 1m", "[detect]\nstartup_grace = \"1m\"", ""},
		{"startup_grace above 1m", "[detect]\nstartup_grace = \"61s\"", "detect.startup_grace"},
		{"finished_after 24h", "[notify]\nfinished_after = \"24h\"", ""},
		{"finished_after above 24h", "[notify]\nfinished_after = \"24h0m1s\"", "notify.finished_after"},
		{"finished_after negative", "[notify]\nfinished_after = \"-1s\"", "notify.finished_after"},
		{"priority 1", "[notify.ntfy]\npriority = 1", ""},
		{"priority 5", "[notify.ntfy]\npriority = 5", ""},
		{"priority 0", "[notify.ntfy]\npriority = 0", "notify.ntfy.priority"},
		{"priority 6", "[notify.ntfy]\npriority = 6", "notify.ntfy.priority"},
		{"timeout 1m", "[notify.ntfy]\ntimeout = \"1m\"", ""},
		{"timeout 0s", "[notify.ntfy]\ntimeout = \"0s\"", "notify.ntfy.timeout"},
		{"timeout above 1m", "[notify.ntfy]\ntimeout = \"61s\"", "notify.ntfy.timeout"},
		{"topic of 64", "[notify.ntfy]\nenabled = true\ntopic = \"" + topic(64) + "\"", ""},
		{"topic of 65", "[notify.ntfy]\nenabled = true\ntopic = \"" + topic(65) + "\"", "notify.ntfy.topic"},
		{"server with a query", "[notify.ntfy]\nserver = \"https://ntfy.sh/?auth=x\"", "notify.ntfy.server"},
		{"server with a fragment", "[notify.ntfy]\nserver = \"https://ntfy.sh/#x\"", "notify.ntfy.server"},
		{"source of 80", "[herdr]\nsource = \"" + strings.Repeat("s", 80) + "\"", ""},
		{"source of 81", "[herdr]\nsource = \"" + strings.Repeat("s", 81) + "\"", "herdr.source"},
		{"empty source", "[herdr]\nsource = \"\"", "herdr.source"},
		{"empty pi command", "[open]\npi = \"\"", "open.pi"},
		{"pi command list starting empty", "[open]\npi = [\"\", \"x\"]", "open.pi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, problems := ParseConfig([]byte(c.toml+"\n"), "c.toml")
			switch {
			case c.bad == "" && len(problems) != 0:
				t.Fatalf("valid, got %v", problems)
			case c.bad != "" && (len(problems) != 1 || problems[0].Key != c.bad):
				t.Fatalf("want one problem with %s, got %v", c.bad, problems)
			}
		})
	}
}

// notify.enabled is on unless the file turns it off.
func TestNotifyEnabled(t *testing.T) {
	for toml, want := range map[string]bool{"": true, "[notify]\nenabled = true\n": true, "[notify]\nenabled = false\n": false} {
		cfg, problems := ParseConfig([]byte(toml), "c.toml")
		if len(problems) != 0 || cfg.NotifyEnabled() != want {
			t.Errorf("%q: enabled %v, want %v (%v)", toml, cfg.NotifyEnabled(), want, problems)
		}
	}
}

// A file with a problem is not half applied: every setting in it, good
// ones too, gives way to the defaults (docs/configuration.md).
func TestABadFileAppliesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte("[notify]\nchannel = \"off\"\ncolour = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p, "config.toml")
	var ce *ConfigError
	if !errors.As(err, &ce) || cfg.Notify.Channel != "auto" {
		t.Fatalf("channel %q, err %v: want the default and a ConfigError", cfg.Notify.Channel, err)
	}
}

// [notify] channel picks where the on-screen notification goes. Two
// mistakes a person makes reading the word "channel" — naming ntfy, or a
// terminal protocol — are answered with where that setting lives instead
// of only the list of channels.
func TestNotifyChannelSaysWhereOtherChoicesGo(t *testing.T) {
	for value, want := range map[string]string{
		"ntfy":    "[notify.ntfy] enabled = true",
		"osc777":  "[notify] fallback or [notify.term_programs]",
		"desktop": "must be one of auto, herdr, terminal, off",
	} {
		_, problems := ParseConfig([]byte("[notify]\nchannel = \""+value+"\"\n"), "c.toml")
		if len(problems) != 1 || problems[0].Key != "notify.channel" || !strings.Contains(problems[0].String(), want) {
			t.Errorf("channel = %q: %v, want one problem saying %q", value, problems, want)
		}
	}
}
