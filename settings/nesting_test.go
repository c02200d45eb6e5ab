package settings

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// decodedDepth is how deep a decoded TOML or JSON value nests (a table,
// object or array is one level).
func decodedDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			d = max(d, decodedDepth(c))
		}
		return d + 1
	case []map[string]any:
		for _, c := range v {
			d = max(d, decodedDepth(c))
		}
		return d + 1
	case []any:
		for _, c := range v {
			d = max(d, decodedDepth(c))
		}
		return d + 1
	}
	return 0
}

// scannedDepth is the smallest limit the scanner accepts text under.
func scannedDepth(scan func([]byte, int) int, data []byte) int {
	for limit := 0; ; limit++ {
		if scan(data, limit) == 0 {
			return limit
		}
	}
}

func TestNestingScannerCountsWhatTheDecoderBuilds(t *testing.T) {
	cases := []struct {
		name, text string
		depth      int
	}{
		{"empty", "", 1},
		{"scalar", "a = 1", 1},
		{"array", "a = [[1]]", 3},
		{"inline table", "a = {b = {c = 1}}", 3},
		{"dotted key", "a.b.c = 1", 3},
		{"dotted key in inline table", "x = {a.b = [1]}", 4},
		{"quoted dots are not dots", `"a.b.c" = 1` + "\n'x.y' = 2", 1},
		{"float values are not keys", "a = 1.5\nb = [1.5, 2.5]", 2},
		{"header", "[a]\nb = 1", 2},
		{"array of tables", "[[a]]\nb = [1]", 4},
		{"header path, counted twice per dot", "[a.b]\nc = 1", 4},
		{"brackets in strings and comments", "a = \"[[[{{{\" # [[[{{{\nb = '''\n[[[\n'''\nc = \"\"\"x\"\"\"\"\" # ]]]]", 1},
		{"multi-line array", "a = [\n  [1],\n  [2, [3]],\n]\nb.c = 1", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scannedDepth(tomlDepth, []byte(c.text)); got != c.depth {
				t.Errorf("scanned depth %d, want %d", got, c.depth)
			}
			var v map[string]any
			if _, err := toml.Decode(c.text, &v); err != nil {
				t.Fatalf("not TOML: %v", err)
			}
		})
	}
}

func TestNestingScannerNamesTheLine(t *testing.T) {
	text := "a = 1\n\nb = " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n"
	if line := tomlDepth([]byte(text), MaxDepth); line != 3 {
		t.Fatalf("TOML: line %d, want 3", line)
	}
	text = "{\n\"a\":\n" + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}"
	if line := jsonDepth([]byte(text), 64); line != 3 {
		t.Fatalf("JSON: line %d, want 3", line)
	}
}

// FuzzNestingDepth checks the scanners against the decoders: for every text
// that decodes, the TOML scan is at least the decoded depth (so a file the
// scan lets through never nests deeper than the limit), and the JSON scan
// is exactly it.
func FuzzNestingDepth(f *testing.F) {
	for _, s := range []string{
		"a = [[1]]", "a.b.c = {d.e = [{f = 1}]}", "[a.b]\nc = 1", "[[a]]\n[[a.b]]\n[a.b.c]\nd.e = 1",
		"a = \"\"\"x\"\"\"\"\"\nb = [{c = 1}]", "a = '[' # ]\n", `{"a": [[{"b": "[\"]"}]]}`, "[1, [2, {\"x\": {}}]]",
		"x = {a = [1], b.c = 2}", "'a'.\"b\".c = 1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1024 {
			return
		}
		tomlScan := scannedDepth(tomlDepth, data)
		var tv map[string]any
		if _, err := toml.Decode(string(data), &tv); err == nil {
			if d := decodedDepth(tv); tomlScan < d {
				t.Fatalf("TOML %q: scanned depth %d below decoded depth %d", data, tomlScan, d)
			}
		}
		jsonScan := scannedDepth(jsonDepth, data)
		var jv any
		if err := json.Unmarshal(data, &jv); err == nil {
			if d := decodedDepth(jv); jsonScan != d {
				t.Fatalf("JSON %q: scanned depth %d, decoded depth %d", data, jsonScan, d)
			}
		}
	})
}
