package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/e2e/herdrfake"
)

// docSchema compiles the JSON Schema that docs/doctor.md documents (its
// last json block), so the documentation is checked against the output.
func docSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "doctor.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(md), "```json\n")
	last := blocks[len(blocks)-1]
	last = last[:strings.Index(last, "```")]
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(last))
	if err != nil {
		t.Fatalf("docs/doctor.md schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("doctor.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("doctor.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runDoctor(t *testing.T, env []string, args ...string) (code int, out string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	home := t.TempDir()
	env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config", "XDG_STATE_HOME=" + home + "/.state"}, env...)
	code = Main(context.Background(), append([]string{"herdr-pi", "doctor"}, args...), IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr, Env: env})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	return code, stdout.String()
}

func TestDoctorJSONMatchesItsDocumentedSchema(t *testing.T) {
	schema := docSchema(t)
	s := herdrfake.Start(t)
	for _, tc := range []struct {
		name string
		env  []string
		code int
		ok   bool
	}{
		{"inside the fake", s.Env(), 0, true},
		{"socket pointing nowhere", append(s.Env(), "HERDR_SOCKET_PATH=/nonexistent/herdr.sock"), 1, false},
		{"outside Herdr", nil, 0, true},
		{"incomplete", []string{"HERDR_ENV=1"}, 1, false},
	} {
		code, out := runDoctor(t, tc.env, "--json")
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.code, out)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s: output does not match docs/doctor.md: %v\n%s", tc.name, err, out)
		}
		var rep doctorReport
		_ = json.Unmarshal([]byte(out), &rep)
		if rep.OK != tc.ok || rep.Counts[statusFail] > 0 == tc.ok {
			t.Errorf("%s: ok=%v counts=%v", tc.name, rep.OK, rep.Counts)
		}
		for _, r := range rep.Checks {
			if r.Status != statusOK && r.Fix == "" {
				t.Errorf("%s: %s/%s is %s without a fix", tc.name, r.Section, r.Name, r.Status)
			}
		}
	}
	if n := len(s.Requests()); n == 0 {
		t.Error("doctor never asked the fake anything")
	}
}

func TestDoctorNamesTheMissingSocketAndTheFix(t *testing.T) {
	code, out := runDoctor(t, []string{"HERDR_ENV=1", "HERDR_PANE_ID=w1:p1", "HERDR_SOCKET_PATH=/nonexistent/dir/herdr.sock"})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"fail  socket", "/nonexistent/dir/herdr.sock does not exist", "fix: start Herdr"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
