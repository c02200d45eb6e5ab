package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// notifications-and-sentinel.md D1.2: what the seed's config parser keeps.
func TestTerminalNotificationsSeedVectors(t *testing.T) {
	tn, problems := ParseTerminalNotifications([]byte(`{"fallback":"osc777","termPrograms":{"MyTerminal":"osc9","WezTerm":"osc777","ignored":"unsupported"}}`), "config.json")
	want := TerminalNotifications{Fallback: "osc777", TermPrograms: map[string]string{"MyTerminal": "osc9", "WezTerm": "osc777"}}
	if !reflect.DeepEqual(tn, want) {
		t.Fatalf("got %+v, want %+v", tn, want)
	}
	// The seed skips the bad entry silently; herdr-pi keeps the rest and
	// says why the entry has no effect.
	if len(problems) != 1 || !strings.Contains(problems[0].String(), `termPrograms.ignored = "unsupported": must be one of osc9, osc99, osc777`) {
		t.Fatalf("problems: %v", problems)
	}

	tn, problems = ParseTerminalNotifications([]byte("{\n  \"$schema\": \"./config.schema.json\",\n  \"fallback\": \"osc9\",\n  \"termPrograms\": { \" Custom \": \"osc777\" }\n}\n"), "config.json")
	if len(problems) != 0 || tn.Fallback != "osc9" || tn.TermPrograms["Custom"] != "osc777" {
		t.Fatalf("got %+v %v", tn, problems)
	}
}

func TestTerminalNotificationsBadFilesGiveDefaultsAndAWarning(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"invalid JSON", "{\n  invalid json", `config.json:2: invalid JSON`},
		{"not an object", `["osc9"]`, `config.json: not a JSON object`},
		{"null", `null`, `config.json: not a JSON object`},
		{"bad fallback", "{\n\"fallback\": 9\n}", `config.json:2: fallback = 9: must be one of`},
		{"termPrograms not an object", "{\"termPrograms\": [1]}", `config.json:1: termPrograms must be an object`},
		{"unknown key", "{\n\n\"fallbak\": \"osc9\"}", `config.json:3: unknown key "fallbak"`},
	}
	for _, c := range cases {
		tn, problems := ParseTerminalNotifications([]byte(c.data), "config.json")
		if tn.Fallback != "" || len(tn.TermPrograms) != 0 {
			t.Errorf("%s: want nothing set, got %+v", c.name, tn)
		}
		if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), c.want) {
			t.Errorf("%s: problems %v, want prefix %q", c.name, problems, c.want)
		}
	}
}

func TestLoadTerminalNotifications(t *testing.T) {
	p := Resolve(Env{"HOME": t.TempDir()})
	path := p.TerminalNotificationsFile()
	if !strings.HasSuffix(path, "/.pi/agent/extensions/pi-terminal-notifications/config.json") {
		t.Fatalf("path %s", path)
	}
	tn, err := LoadTerminalNotifications(path, "config.json")
	if err != nil || tn.Fallback != "" || tn.TermPrograms != nil {
		t.Fatalf("missing file: %+v %v", tn, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"fallback":"osc9","termPrograms":{"Custom":"osc777"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tn, err = LoadTerminalNotifications(path, "config.json")
	if err != nil || tn.Fallback != "osc9" || tn.TermPrograms["Custom"] != "osc777" {
		t.Fatalf("good file: %+v %v", tn, err)
	}
	if err := os.WriteFile(path, []byte(`{ invalid json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if tn, err = LoadTerminalNotifications(path, "config.json"); err == nil || tn.Fallback != "" {
		t.Fatalf("bad file: %+v %v", tn, err)
	}
	// A directory where the file should be is refused, and said so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err = LoadTerminalNotifications(path, "config.json"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("unreadable: %v", err)
	}
}

func TestNotifyFallbackIsUnsetByDefault(t *testing.T) {
	if Defaults().Notify.Fallback != "" {
		t.Fatal("an unset fallback lets the seed's config.json decide")
	}
	if _, problems := ParseConfig([]byte("[notify]\nfallback = \"osc9\"\n"), "c.toml"); len(problems) != 0 {
		t.Fatal(problems)
	}
	if _, problems := ParseConfig([]byte("[notify]\nfallback = \"beep\"\n"), "c.toml"); len(problems) != 1 || problems[0].Line != 2 {
		t.Fatal(problems)
	}
}

// FuzzParseTerminalNotifications: any bytes give only valid protocols and
// trimmed, non-empty names.
func FuzzParseTerminalNotifications(f *testing.F) {
	f.Add([]byte(`{"fallback":"osc777","termPrograms":{"MyTerminal":"osc9","x":"bad"}}`))
	f.Add([]byte(`{ invalid json`))
	f.Add([]byte(`{"termPrograms":{" ":"osc9","\u0000":"osc99"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, problems := ParseTerminalNotifications(data, "f")
		for _, p := range problems {
			// doctor and wrap show each, one a line.
			if strings.ContainsAny(p.Msg, "\n\r") || len(p.Msg) > 400 {
				t.Fatalf("problem of %d bytes, or of more than one line: %.300q", len(p.Msg), p.Msg)
			}
		}
		if tn.Fallback != "" && !slices.Contains(protocols, tn.Fallback) {
			t.Fatalf("fallback %q", tn.Fallback)
		}
		for k, v := range tn.TermPrograms {
			if k == "" || k != strings.TrimSpace(k) || !slices.Contains(protocols, v) {
				t.Fatalf("entry %q = %q", k, v)
			}
		}
	})
}
