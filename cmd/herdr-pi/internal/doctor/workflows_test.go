package doctor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor/doctortest"
)

// Which integration owns workflow panes follows Pi's packages: none, the
// engine alone (herdr-pi's actions under wrap), or @piewf/herdr too (a
// warning: a Pi without herdr-pi uses upstream's).
func TestWorkflowPanesRow(t *testing.T) {
	for _, c := range []struct {
		name, settings, status, says string
	}{
		{"no settings", "", OK, "not among Pi's packages"},
		{"engine only", `{"packages":["npm:pi-extensible-workflows@5.7.0"]}`, OK, "herdr-pi owns workflow panes"},
		{"engine as an object", `{"packages":[{"source":"npm:pi-extensible-workflows","extensions":["x"]}]}`, OK, "herdr-pi owns workflow panes"},
		{"both", `{"packages":["npm:pi-extensible-workflows","npm:@piewf/herdr"]}`, Warn, "both herdr-pi and @piewf/herdr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := doctortest.New(t)
			in := input(w, time.Minute)
			if c.settings != "" {
				w.File(filepath.Join(in.Paths.PiAgentDir, "settings.json"), c.settings, 0o600)
			}
			r := workflowsRow(in)
			if r.Status != c.status || !strings.Contains(r.Detail, c.says) {
				t.Fatalf("%s: %s", r.Status, r.Detail)
			}
			if r.Status != OK && r.Fix == "" {
				t.Fatal("a warning without a fix")
			}
		})
	}
}

// The engine's settings file, as the owner's probe reads it when a run
// starts: the mode on or off, or a failure naming the file and the key
// (the obsolete extensions.herdr shape with its migration).
func TestWorkflowSettingsRow(t *testing.T) {
	for _, c := range []struct {
		name, text, status string
		says               []string
	}{
		{"no file", "", OK, []string{"fully inspectable mode is off (~/.pi/agent/pi-extensible-workflows/settings.json does not exist)"}},
		{"off", `{}`, OK, []string{"fully inspectable mode is off (~/.pi/agent/pi-extensible-workflows/settings.json sets no extensionSettings.herdr.enableFullyInspectableMode)"}},
		{"on", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`, OK, []string{"fully inspectable mode is on"}},
		{"not JSON", `{"extensionSettings":`, Fail, []string{"settings.json", "not valid JSON"}},
		{"unknown key", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true,"tabs":1}}}`, Fail, []string{"settings.json", "extensionSettings.herdr.tabs"}},
		{"old shape", `{"extensions":{"herdr":{"enableFullyInspectableMode":true}}}`, Fail,
			[]string{"settings.json", "old place", `move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := doctortest.New(t)
			in := input(w, time.Minute)
			if c.text != "" {
				w.File(filepath.Join(in.Paths.PiAgentDir, "pi-extensible-workflows", "settings.json"), c.text, 0o600)
			}
			r := workflowSettingsRow(in)
			if r.Status != c.status {
				t.Fatalf("%s: %s", r.Status, r.Detail)
			}
			for _, s := range c.says {
				if !strings.Contains(r.Detail, s) {
					t.Fatalf("%q does not say %q", r.Detail, s)
				}
			}
			if r.Status != OK && r.Fix == "" {
				t.Fatal("a failure without a fix")
			}
		})
	}
}
