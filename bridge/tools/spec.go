package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// Spec is what the pane's Pi needs to offer one bridged tool to its model:
// every field of Pi's registerTool definition that is data (reference
// workflows-handoff.md §6; Pi 1.6.0's ToolDefinition). Functions (execute,
// renderers) do not travel: execute goes over the socket, and the pane
// draws the tool with Pi's default renderers.
type Spec struct {
	Name        string `json:"name"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description"`
	// PromptSnippet and PromptGuidelines feed the default system prompt.
	PromptSnippet    string   `json:"promptSnippet,omitempty"`
	PromptGuidelines []string `json:"promptGuidelines,omitempty"`
	// Parameters is the tool's JSON schema (an object; Pi validates the
	// model's arguments against it). Empty means no parameters.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// OutputSchema is the JSON schema of the result's structuredContent
	// (Pi 1.6.0; older Pis ignore it).
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// RenderShell is "", "default" or "self"; ExecutionMode is "",
	// "sequential" or "parallel".
	RenderShell   string `json:"renderShell,omitempty"`
	ExecutionMode string `json:"executionMode,omitempty"`
}

// noParameters is the schema of a tool that takes none.
var noParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// normalize checks one spec and fills its defaults (label, parameters).
func (s Spec) normalize() (Spec, error) {
	fail := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("tool %q: "+format, append([]any{control.Clip(s.Name)}, args...)...)
	}
	if s.Name == "" {
		return Spec{}, errors.New("a bridged tool has no name")
	}
	if len(s.Name) > maxName || !control.Printable(s.Name) {
		return fail("the name must be at most %d printable bytes", maxName)
	}
	if s.Label == "" {
		s.Label = s.Name
	}
	if len(bytes.TrimSpace(s.Parameters)) == 0 {
		s.Parameters = noParameters
	}
	if !isObject(s.Parameters) {
		return fail("parameters must be a JSON schema object")
	}
	if len(s.OutputSchema) > 0 && !isObject(s.OutputSchema) {
		return fail("outputSchema must be a JSON schema object")
	}
	switch s.RenderShell {
	case "", "default", "self":
	default:
		return fail("renderShell %q is not \"default\" or \"self\"", control.Clip(s.RenderShell))
	}
	switch s.ExecutionMode {
	case "", "sequential", "parallel":
	default:
		return fail("executionMode %q is not \"sequential\" or \"parallel\"", control.Clip(s.ExecutionMode))
	}
	return s, nil
}

// normalizeSpecs checks a tool set: every spec valid, names unique, at
// least one tool (a bridge without tools has nothing to do).
func normalizeSpecs(specs []Spec) ([]Spec, error) {
	if len(specs) == 0 {
		return nil, errors.New("no tools to bridge")
	}
	out := make([]Spec, 0, len(specs))
	seen := map[string]bool{}
	for _, s := range specs {
		n, err := s.normalize()
		if err != nil {
			return nil, err
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("tool %q is listed twice", control.Clip(n.Name))
		}
		seen[n.Name] = true
		out = append(out, n)
	}
	return out, nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
