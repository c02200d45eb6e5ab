package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
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

// `herdr-pi demo | head -2`, or a reader that went away: the demo stops at
// its first write that fails, as docs/demo.md says (exit 1, the reason on
// stderr), and leaves nothing behind in TMPDIR. Killed by SIGPIPE instead,
// it left its temporary directories (the project, the wrapper's runtime
// and state, the stand-in's socket) for good.
func TestDemoIntoAClosedPipeStopsAndCleansUp(t *testing.T) {
	// Short: the demo's runtime directory is under it, and one too long
	// for a socket's path would send the wrapper's elsewhere.
	tmp, err := os.MkdirTemp("/tmp", "hpd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	cmd := exec.Command("herdr-pi", "demo")
	cmd.Env = append(withoutHerdr(os.Environ()), "TMPDIR="+tmp, "XDG_CONFIG_HOME="+tmp+"/c", "XDG_STATE_HOME="+tmp+"/s", "XDG_RUNTIME_DIR=")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	if code := exitStatus(err); code != 1 || !strings.Contains(stderr.String(), "herdr-pi demo: cannot write what it shows") {
		t.Errorf("exit %d, stderr %q; want 1 and the write that failed", code, stderr.String())
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		t.Errorf("left in TMPDIR: %s", e.Name())
	}
}
