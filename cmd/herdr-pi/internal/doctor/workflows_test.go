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
		// Pi loads a project's packages too (pi install -l).
		{"engine in the project", "project:" + `{"packages":["npm:pi-extensible-workflows"]}`, OK, "herdr-pi owns workflow panes"},
		{"upstream in the project", `{"packages":["npm:pi-extensible-workflows"]}` + "project:" + `{"packages":["npm:@piewf/herdr"]}`, Warn, "proj/.pi/settings.json lists @piewf/herdr"},
		{"neither anywhere", "project:{}", OK, "not among Pi's packages in ~/.pi/agent/settings.json or "},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := doctortest.New(t)
			in := input(w, time.Minute)
			in.Dir = filepath.Join(t.TempDir(), "proj")
			global, project, inProject := strings.Cut(c.settings, "project:")
			if global != "" {
				w.File(filepath.Join(in.Paths.PiAgentDir, "settings.json"), global, 0o600)
			}
			if inProject {
				w.File(filepath.Join(in.Dir, ".pi", "settings.json"), project, 0o600)
			}
			r := workflowsRow(in)
			if r.Status != c.status || !strings.Contains(r.Detail, c.says) {
				t.Fatalf("%s: %s", r.Status, r.Detail)
			}
			if c.name == "upstream in the project" && !strings.Contains(r.Fix, "/proj && pi remove -l npm:@piewf/herdr") {
				t.Fatalf("fix %q does not say how to remove it from the project", r.Fix)
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
		// The engine refuses every run on these, so they are no "off".
		{"null", `null`, Fail, []string{"settings.json", "must hold a JSON object, not null"}},
		{"null extensionSettings", `{"extensionSettings":null}`, Fail, []string{"settings.json", "extensionSettings must be an object, not null", "or remove the key"}},
		{"null herdr", `{"extensionSettings":{"herdr":null}}`, Fail, []string{"settings.json", "extensionSettings.herdr must be an object, not null"}},
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

// The seed extensions herdr-pi does the job of, found among Pi's packages
// (npm, a checkout, a monorepo's extension filter), its settings'
// extensions or its extensions directory: pi-terminal-notifications
// doubles every notification outside Herdr (a warning, with the command
// that removes it); pi-herdr-integration is only redundant. A directory
// holding nothing but pi-terminal-notifications' config.json (which
// herdr-pi reads) is not the extension.
func TestReplacedExtensionsRow(t *testing.T) {
	for _, c := range []struct {
		name, settings string
		files          []string // under the agent directory
		status         string
		says           []string
	}{
		{"none", "", nil, OK, []string{"neither pi-terminal-notifications (nor its successor pi-notify) nor pi-herdr-integration"}},
		{"config.json alone", "", []string{"extensions/pi-terminal-notifications/config.json"}, OK, []string{"neither"}},
		{"npm", `{"packages":["npm:@xzzpig/pi-terminal-notifications@1.2.0"]}`, nil, Warn, []string{"pi-terminal-notifications", "twice", "settings.json", "pi remove npm:@xzzpig/pi-terminal-notifications@1.2.0"}},
		{"checkout", `{"packages":["./packages/pi-terminal-notifications"]}`, nil, Warn, []string{"twice", "pi remove ./packages/pi-terminal-notifications"}},
		{"checkout with a space", `{"packages":["/src/my exts/pi-terminal-notifications"]}`, nil, Warn, []string{"pi remove '/src/my exts/pi-terminal-notifications'"}},
		{"monorepo filter", `{"packages":[{"source":"git:github.com/xzzpig/pi-extensions@main","extensions":["packages/pi-terminal-notifications/extensions/index.ts"]}]}`, nil, Warn, []string{"twice", "take packages/pi-terminal-notifications/extensions/index.ts out of"}},
		{"settings extensions", `{"extensions":["/src/pi-terminal-notifications/extensions/index.ts"]}`, nil, Warn, []string{"twice"}},
		{"extensions directory", "", []string{"extensions/pi-terminal-notifications/index.ts"}, Warn, []string{"twice", "extensions/pi-terminal-notifications"}},
		{"herdr-integration package", `{"packages":["npm:@siddr/pi-herdr-integration"]}`, nil, OK, []string{"pi-herdr-integration", "redundant"}},
		{"herdr-integration link", "", []string{"extensions/herdr-integration/index.ts"}, OK, []string{"pi-herdr-integration", "extensions/herdr-integration"}},
		{"both", `{"packages":["npm:@siddr/pi-herdr-integration","npm:@xzzpig/pi-terminal-notifications"]}`, nil, Warn, []string{"twice", "pi-herdr-integration"}},
		{"other packages", `{"packages":["npm:pi-extensible-workflows","npm:@someone/pi-notifications-extra"]}`, nil, OK, []string{"neither"}},
		// A project's .pi directory, which Pi reads in the directory it
		// starts in: doctor looks at the one it runs in.
		{"project npm", "", []string{"project:.pi/settings.json=" + `{"packages":["npm:@xzzpig/pi-terminal-notifications"]}`}, Warn,
			[]string{"twice", "proj/.pi/settings.json lists its package", "/proj && pi remove -l npm:@xzzpig/pi-terminal-notifications"}},
		{"project extensions directory", "", []string{"project:.pi/extensions/pi-terminal-notifications/index.ts"}, Warn, []string{"twice", "proj/.pi/extensions/pi-terminal-notifications"}},
		{"project settings extensions", "", []string{"project:.pi/settings.json=" + `{"extensions":["./ext/herdr-integration/index.ts"]}`}, OK,
			[]string{"redundant", "take ./ext/herdr-integration/index.ts out of", "proj/.pi/settings.json"}},
		{"global and project", `{"packages":["npm:@siddr/pi-herdr-integration"]}`, []string{"project:.pi/settings.json=" + `{"packages":["npm:@xzzpig/pi-terminal-notifications"]}`}, Warn,
			[]string{"twice", "redundant", "pi remove npm:@siddr/pi-herdr-integration", "pi remove -l npm:@xzzpig/pi-terminal-notifications"}},
		{"project without .pi", "", []string{"project:README.md"}, OK, []string{"neither"}},
		// pi-notify, pi-terminal-notifications' successor, writes its own
		// sequences in Pi's TUI as well (and pushes to ntfy, which
		// herdr-pi's [notify.ntfy] does too). Its folder may hold only its
		// config.json, which is not the extension.
		{"pi-notify npm", `{"packages":["npm:@xzzpig/pi-notify@0.1.0"]}`, nil, Warn, []string{"pi-notify", "twice", "pi remove npm:@xzzpig/pi-notify@0.1.0", "[notify.ntfy]"}},
		{"pi-notify extensions directory", "", []string{"extensions/pi-notify/index.ts"}, Warn, []string{"pi-notify", "twice", "extensions/pi-notify"}},
		{"names that only begin alike", `{"packages":["npm:@someone/pi-notify-extra","./ext/pi-terminal-notifications-fork"]}`, nil, OK, []string{"neither"}},
		{"pi-notify config.json alone", "", []string{"extensions/pi-notify/config.json"}, OK, []string{"neither"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := doctortest.New(t)
			in := input(w, time.Minute)
			if c.settings != "" {
				w.File(filepath.Join(in.Paths.PiAgentDir, "settings.json"), c.settings, 0o600)
			}
			in.Dir = filepath.Join(t.TempDir(), "proj")
			for _, f := range c.files {
				f, content, ok := strings.Cut(f, "=")
				if !ok {
					content = "x"
				}
				if rel, ok := strings.CutPrefix(f, "project:"); ok {
					w.File(filepath.Join(in.Dir, rel), content, 0o600)
					continue
				}
				w.File(filepath.Join(in.Paths.PiAgentDir, f), content, 0o600)
			}
			r := replacedExtensionsRow(in)
			if r.Status != c.status {
				t.Fatalf("%s: %s, want %s", r.Status, r.Detail, c.status)
			}
			for _, s := range c.says {
				if !strings.Contains(r.Detail, s) && !strings.Contains(r.Fix, s) {
					t.Errorf("%s %q (fix %q) does not say %q", r.Status, r.Detail, r.Fix, s)
				}
			}
			if r.Status != OK && !strings.Contains(r.Fix, "pi remove") && !strings.Contains(r.Fix, "out of ") {
				t.Errorf("a warning whose fix %q does not say how to remove it", r.Fix)
			}
		})
	}
}
