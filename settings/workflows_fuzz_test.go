package settings

import (
	"encoding/json"
	"strings"
	"testing"
)

// maxWorkflowError bounds what ParseWorkflows says past the file's name: a
// sentence, the way out and a short quote of the value at fault, whatever
// the file holds (a key or a value of a MiB makes a message of a line).
const maxWorkflowError = 400

// An error of the engine's settings is one line of bounded length that
// names the file: doctor shows it in a row and open prints it, and a key
// or value quoted whole made a message of a MiB, or of many lines that
// could pass for herdr-pi's own.
func TestWorkflowErrorsQuoteValuesShortOnOneLine(t *testing.T) {
	huge := strings.Repeat("k", 512<<10) // under the 1 MiB limit of settings files
	for _, c := range []struct{ name, text string }{
		{"huge top-level key", `{"` + huge + `":1}`},
		{"huge extension key", `{"extensionSettings":{"` + huge + `":{}}}`},
		{"huge herdr key", `{"extensionSettings":{"herdr":{"` + huge + `":true}}}`},
		{"huge value", `{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"` + huge + `"}}}`},
		{"value over lines", "{\"extensionSettings\":{\"herdr\":{\"enableFullyInspectableMode\":[\n1,\n2\n]}}}"},
		{"key with a newline escape", `{"extensionSettings":{"herdr":{"a\nINFO forged":true}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseWorkflows([]byte(c.text), "w.json")
			if err == nil {
				t.Fatal("no error")
			}
			checkWorkflowError(t, err, "w.json")
		})
	}
}

func checkWorkflowError(t *testing.T, err error, shown string) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, shown+": ") {
		t.Fatalf("error %.200q does not begin with the file's name", msg)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error %.300q is more than one line", msg)
	}
	if n := len(msg) - len(shown); n > maxWorkflowError {
		t.Fatalf("error is %d bytes past the file's name, want at most %d: %.200q…", n, maxWorkflowError, msg)
	}
}

// FuzzParseWorkflows: whatever the file holds, ParseWorkflows ends with a
// one-line bounded error naming the file, or with the value the engine
// reads from it.
func FuzzParseWorkflows(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `"on"`, `{`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true}}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":"yes"}}}`,
		`{"extensions":{"herdr":{"enableFullyInspectableMode":true}}}`,
		`{"concurrency":4,"extensions":["a.ts"],"extensionSettings":{"trajectory":{"port":8080}}}`,
		`{"extensionSettings":{"herdr":{"enableFullyInspectableMode":true,"z":1}}}`,
		"{\"extensionSettings\":{\"herdr\":{\"enableFullyInspectableMode\":[\n1\n]}}}",
		`{"extensionSettings":{"herdr":{"\u202e\u009b":true}}}`,
		`{"a":{"b":{"c":{"d":[[[[[[[[[[1]]]]]]]]]]}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkflows(data, "w.json")
		if err != nil {
			checkWorkflowError(t, err, "w.json")
			return
		}
		var ref struct {
			ExtensionSettings struct {
				Herdr struct {
					EnableFullyInspectableMode bool `json:"enableFullyInspectableMode"`
				} `json:"herdr"`
			} `json:"extensionSettings"`
		}
		if uerr := json.Unmarshal(data, &ref); uerr != nil {
			t.Fatalf("took %q, which does not decode: %v", data, uerr)
		}
		if w.FullyInspectable != ref.ExtensionSettings.Herdr.EnableFullyInspectableMode {
			t.Fatalf("%q: FullyInspectable %v, the file says %v", data, w.FullyInspectable, ref.ExtensionSettings.Herdr.EnableFullyInspectableMode)
		}
	})
}
