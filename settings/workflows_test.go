package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkflowSettings(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       bool
		err        string
	}{
		{"on", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`, true, ""},
		{"off", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":false}}}`, false, ""},
		{"other settings only", `{"concurrency":4,"extensions":["a.ts"],"extensionSettings":{"trajectory":{"port":8080}}}`, false, ""},
		{"empty herdr", `{"extensionSettings":{"herdr":{}}}`, false, ""},
		{"old shape", `{"extensions":{"herdr":{"enableFullyInspectableMode":true}}}`, false,
			// Word for word what the owner's TUI says (docs/inspectable.md
			// quotes it; doctor says it "the same way").
			`the Herdr setting is in its old place, "extensions": {"herdr": …}, which the engine rejects ("extensions" is a list); move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`},
		{"unknown herdr key", `{"extensionSettings":{"herdr":{"fully":true}}}`, false, `unknown key "extensionSettings.herdr.fully" (the only one is enableFullyInspectableMode); remove it`},
		{"not a boolean", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`, false, `must be true or false, not "yes"`},
		{"not JSON", `{`, false, "not valid JSON"},
		{"unknown top-level key", `{"concurrency":2,"fullyInspectable":true}`, false, `unknown key "fullyInspectable" (the engine rejects the file); remove it`},
		{"unknown extension", `{"extensionSettings":{"herdr":{},"tmux":{}}}`, false, `unknown key "extensionSettings.tmux" (the engine knows herdr and trajectory); remove it`},
		// The engine and the owner's probe reject a null or a non-object
		// at each level the Herdr setting sits in, so doctor must too.
		{"top-level null", `null`, false, `must hold a JSON object`},
		{"top-level array", `[]`, false, `must hold a JSON object`},
		{"top-level string", `"on"`, false, `must hold a JSON object`},
		{"extensionSettings null", `{"extensionSettings":null}`, false, `extensionSettings must be an object, not null`},
		{"extensionSettings array", `{"extensionSettings":[]}`, false, `extensionSettings must be an object, not []`},
		{"herdr null", `{"extensionSettings":{"herdr":null}}`, false, `extensionSettings.herdr must be an object, not null`},
		{"herdr boolean", `{"extensionSettings":{"herdr":true}}`, false, `extensionSettings.herdr must be an object, not true`},
		{"mode null", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":null}}}`, false, `must be true or false, not null`},
		// The mode written where it does not go: the way out is where it
		// does, not only that the key is unknown.
		{"mode at the top", `{"enableFullyInspectableMode":true}`, false,
			`unknown key "enableFullyInspectableMode" (the engine rejects the file); move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`},
		{"herdr at the top", `{"herdr":{"enableFullyInspectableMode":true}}`, false,
			`unknown key "herdr" (the engine rejects the file); move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`},
		{"mode beside herdr", `{"extensionSettings":{"enableFullyInspectableMode":true}}`, false,
			`unknown key "extensionSettings.enableFullyInspectableMode" (the engine knows herdr and trajectory); move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseWorkflows([]byte(c.text), "settings.json")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "settings.json: ") {
					t.Fatalf("error %v, want one naming the file and saying %q", err, c.err)
				}
				return
			}
			if err != nil || got.FullyInspectable != c.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestWorkflowSettingsFile(t *testing.T) {
	dir := t.TempDir()
	if w, err := LoadWorkflows(WorkflowSettingsFile(dir)); err != nil || w.FullyInspectable {
		t.Fatalf("missing file: %+v, %v", w, err)
	}
	path := WorkflowSettingsFile(dir)
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`), 0o600)
	if w, err := LoadWorkflows(path); err != nil || !w.FullyInspectable {
		t.Fatalf("%+v, %v", w, err)
	}
	// A FIFO never blocks the caller: it is refused like any file that is
	// not a settings file.
	os.Remove(path)
	mkfifo(t, path)
	if _, err := LoadWorkflows(path); err == nil {
		t.Fatal("a FIFO was read as settings")
	}
}

func TestOpenPiCommand(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
		bad  string
	}{
		{"", []string{"pi"}, ""},
		{"[open]\npi = \"/opt/pi bin/pi\"\n", []string{"/opt/pi bin/pi"}, ""},
		{"[open]\npi = [\"node\", \"/opt/pi/dist/cli.js\"]\n", []string{"node", "/opt/pi/dist/cli.js"}, ""},
		{"[open]\npi = []\n", nil, "name the Pi command"},
		{"[open]\npi = 3\n", nil, "must be a string or a list of strings"},
	} {
		cfg, problems := ParseConfig([]byte(c.text), "config.toml")
		if c.bad != "" {
			if len(problems) == 0 || !strings.Contains(problems[0].String(), c.bad) {
				t.Errorf("%q: problems %v, want %q", c.text, problems, c.bad)
			}
			continue
		}
		if len(problems) > 0 || strings.Join(cfg.Open.Pi, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: %q %v", c.text, cfg.Open.Pi, problems)
		}
	}
}
