package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A real `demo --json` matches docs/demo.schema.json, as does the example
// in docs/demo.md, and holds what the page promises: requests to Herdr,
// the state machine's transitions, the keys typed for the person. The
// schema is no formality: a request without its method fails it.
func TestDemoJSONMatchesItsDocumentedSchema(t *testing.T) {
	schema := docSchema(t, "demo")
	dir := t.TempDir()
	env := append(withoutHerdr(os.Environ()), "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	out, code := herdrPi(t, env, "demo", "--json")
	if code != 0 {
		t.Fatalf("demo --json: exit %d\n%s", code, out)
	}
	validateJSON(t, schema, out)
	var got struct {
		Format string
		Events []struct{ Source, Kind, Method, To string }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got.Events {
		seen[e.Source] = true
		seen[e.Kind+":"+e.To] = true
		seen[e.Method] = true
	}
	for _, want := range []string{"herdr", "state", "you", "transition:blocked", "reason_opened:", "run_finished:", "pane.report_agent", "notification.show", "pane.release_agent"} {
		if !seen[want] {
			t.Errorf("no %s event in the timeline:\n%s", want, out)
		}
	}
	t.Run("the documented example", func(t *testing.T) {
		md, err := os.ReadFile(filepath.Join("..", "docs", "demo.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(md), "```json\n")
		example, _, ok2 := strings.Cut(rest, "```")
		if !ok || !ok2 {
			t.Fatal("docs/demo.md has no json example")
		}
		validateJSON(t, schema, []byte(example))
	})
	broken := bytes.Replace(out, []byte(`"method": "pane.report_agent",`), nil, 1)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(broken))
	if err != nil || bytes.Equal(broken, out) {
		t.Fatalf("could not break the output (%v)", err)
	}
	if schema.Validate(inst) == nil {
		t.Error("a request to Herdr without its method validates")
	}
}
