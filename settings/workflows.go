package settings

import (
	"bytes"
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
// Herdr part — text that is not JSON, a null or another non-object where
// an object belongs (the top level, extensionSettings, its herdr), a key it
// does not know, the obsolete extensions.herdr shape, another key under
// herdr, a value that is not a boolean — is an error that names the file and the key and says how to
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
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return Workflows{}, fmt.Errorf("%s: not valid JSON (%v); fix the text or remove the file, which is the defaults", shown, err)
	}
	top, ok := jsonObject(data)
	if !ok {
		return Workflows{}, fmt.Errorf("%s: must hold a JSON object, not %s; write {} for the defaults", shown, jsonShort(data))
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
	// The mode written where it does not go: say where it does; any
	// other key the engine rejects goes.
	const moveIt = `; move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`
	misplaced := func(k string) string {
		if k == "enableFullyInspectableMode" || k == "herdr" {
			return moveIt
		}
		return "; remove it"
	}
	for _, k := range sortedKeys(top) {
		if !workflowKeys[k] {
			return Workflows{}, fmt.Errorf("%s: unknown key %s (the engine rejects the file)%s", shown, quotedKey(k), misplaced(k))
		}
	}
	var w Workflows
	raw, ok := top["extensionSettings"]
	if !ok {
		return w, nil
	}
	// A null is no object to the engine either: it rejects the file.
	ext, ok := jsonObject(raw)
	if !ok {
		return w, fmt.Errorf(`%s: extensionSettings must be an object, not %s; write "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}, or remove the key`, shown, jsonShort(raw))
	}
	for _, k := range sortedKeys(ext) {
		if !workflowExtensionKeys[k] {
			return w, fmt.Errorf("%s: unknown key %s (the engine knows herdr and trajectory)%s", shown, quotedKey("extensionSettings."+k), misplaced(k))
		}
	}
	raw, ok = ext["herdr"]
	if !ok {
		return w, nil
	}
	herdr, ok := jsonObject(raw)
	if !ok {
		return w, fmt.Errorf(`%s: extensionSettings.herdr must be an object, not %s; write "herdr": {"enableFullyInspectableMode": true}, or remove the key`, shown, jsonShort(raw))
	}
	for _, k := range sortedKeys(herdr) {
		v := herdr[k]
		if k != "enableFullyInspectableMode" {
			return w, fmt.Errorf("%s: unknown key %s (the only one is enableFullyInspectableMode); remove it", shown, quotedKey("extensionSettings.herdr."+k))
		}
		if err := json.Unmarshal(v, &w.FullyInspectable); err != nil || string(v) == "null" {
			return w, fmt.Errorf("%s: %s must be true or false, not %s", shown, key, jsonShort(v))
		}
	}
	return w, nil
}

// jsonObject decodes valid JSON text that is an object; null, an array
// or a scalar is not one (Go would decode null as an empty map).
func jsonObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// quotedKey is a key as an error quotes it: escaped (a key may hold a
// newline, which would start a line that passes for herdr-pi's own) and
// clipped (a key may be most of a MiB).
func quotedKey(k string) string { return QuoteClipped(k, 80) }

// jsonShort is a JSON value as an error quotes it: short, one line.
func jsonShort(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "that"
	}
	if r := []rune(b.String()); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return b.String()
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
