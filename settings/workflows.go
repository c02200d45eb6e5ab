package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
)

// Workflows is what herdr-pi reads of the workflow engine's global
// settings (<agent dir>/pi-extensible-workflows/settings.json,
// workflows-handoff.md §3): only the Herdr extension's part. The project
// file is never read for it, as upstream's Herdr extension does not.
type Workflows struct {
	// FullyInspectable opens every workflow agent in the run's labelled
	// Herdr workspace (extensionSettings.herdr.enableFullyInspectableMode).
	FullyInspectable bool
}

// WorkflowSettingsFile is where the engine keeps its global settings.
func WorkflowSettingsFile(piAgentDir string) string {
	return filepath.Join(piAgentDir, "pi-extensible-workflows", "settings.json")
}

// workflowKeys are the engine's settings keys (workflows-handoff.md §3),
// and those it allows under extensionSettings: it rejects a file with any
// other, so every run would fail on it.
var (
	workflowKeys          = map[string]bool{"concurrency": true, "backgroundWidget": true, "modelAliases": true, "skills": true, "extensions": true, "tools": true, "extensionSettings": true, "retention": true}
	workflowExtensionKeys = map[string]bool{"herdr": true, "trajectory": true}
)

// LoadWorkflows reads the engine's global settings file. A missing file is
// the defaults. A file the engine itself would reject for its keys or the
// Herdr part — text that is not JSON, a key it does not know, the obsolete
// extensions.herdr shape, another key under herdr, a value that is not a
// boolean — is an error that names the file and the key and says how to
// fix it; the values of the engine's other settings are its business and
// are not judged here. The owner's probe reads the file by the same rules
// (bridge/probe/handoff.js readInspectable) each time a run starts.
func LoadWorkflows(path string) (Workflows, error) {
	data, err := ReadFile(path, JSON)
	// The engine and the owner's probe read a link to nowhere as no file
	// (Node's ENOENT), so the mode is off, as herdr-pi must agree; doctor
	// points the link out.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBrokenLink) {
		return Workflows{}, nil
	}
	if err != nil {
		return Workflows{}, err
	}
	return ParseWorkflows(data, path)
}

// ParseWorkflows decodes the Herdr part of the engine's settings text;
// shown names the file in errors.
func ParseWorkflows(data []byte, shown string) (Workflows, error) {
	if err := CheckNesting(data, JSON); err != nil {
		return Workflows{}, fmt.Errorf("%s: %w", shown, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Workflows{}, fmt.Errorf("%s: not valid JSON, or not a JSON object: %v", shown, err)
	}
	const key = "extensionSettings.herdr.enableFullyInspectableMode"
	if raw, ok := top["extensions"]; ok {
		var old map[string]json.RawMessage
		if json.Unmarshal(raw, &old) == nil {
			if _, ok := old["herdr"]; ok {
				// The owner's TUI (the probe) says it in these words too.
				return Workflows{}, fmt.Errorf(`%s: the Herdr setting is in its old place, "extensions": {"herdr": …}, `+
					`which the engine rejects ("extensions" is a list); move it to `+
					`"extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`, shown)
			}
		}
	}
	for _, k := range sortedKeys(top) {
		if !workflowKeys[k] {
			return Workflows{}, fmt.Errorf("%s: unknown key %q (the engine rejects the file)", shown, k)
		}
	}
	var w Workflows
	raw, ok := top["extensionSettings"]
	if !ok || string(raw) == "null" {
		return w, nil
	}
	var ext map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ext); err != nil {
		return w, fmt.Errorf("%s: extensionSettings must be an object", shown)
	}
	for _, k := range sortedKeys(ext) {
		if !workflowExtensionKeys[k] {
			return w, fmt.Errorf("%s: unknown key \"extensionSettings.%s\" (the engine knows herdr and trajectory)", shown, k)
		}
	}
	raw, ok = ext["herdr"]
	if !ok {
		return w, nil
	}
	var herdr map[string]json.RawMessage
	if err := json.Unmarshal(raw, &herdr); err != nil {
		return w, fmt.Errorf("%s: extensionSettings.herdr must be an object", shown)
	}
	for _, k := range sortedKeys(herdr) {
		v := herdr[k]
		if k != "enableFullyInspectableMode" {
			return w, fmt.Errorf("%s: unknown key \"extensionSettings.herdr.%s\" (the only one is enableFullyInspectableMode)", shown, k)
		}
		if err := json.Unmarshal(v, &w.FullyInspectable); err != nil || string(v) == "null" {
			return w, fmt.Errorf("%s: %s must be true or false, not %s", shown, key, v)
		}
	}
	return w, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
