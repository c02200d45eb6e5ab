package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed client.mjs
var clientTemplate []byte

// dataSlot is the JavaScript string literal in client.mjs that the data
// replaces.
var dataSlot = []byte(`"__HERDR_PI_TOOL_BRIDGE_DATA__"`)

// ClientExtension renders the pane's Pi extension (an ES module, loaded
// with --extension) that registers specs and sends their calls to socket
// with token. The data goes in as one JSON string literal that the module
// parses with JSON.parse: no value is ever spliced into code, and no key
// (not even "__proto__") is read as an object-literal property.
func ClientExtension(specs []Spec, socket, token string) ([]byte, error) {
	specs, err := normalizeSpecs(specs)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if socket == "" || token == "" {
		return nil, fmt.Errorf("tools: the client extension needs a socket path and a token")
	}
	data, err := json.Marshal(struct {
		Socket string `json:"socket"`
		Token  string `json:"token"`
		Tools  []Spec `json:"tools"`
	}{socket, token, specs})
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	// A JSON string is a valid JavaScript string literal; json.Marshal
	// also escapes U+2028 and U+2029, which older engines reject inside
	// literals.
	literal, err := json.Marshal(string(data))
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if bytes.Count(clientTemplate, dataSlot) != 1 {
		panic("tools: client.mjs must hold exactly one data slot")
	}
	return bytes.Replace(clientTemplate, dataSlot, literal, 1), nil
}
