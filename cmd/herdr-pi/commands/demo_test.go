package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/demo"
)

// demo --json that cannot run prints one object on stdout: no timeline, an
// error with code failed, in the documented schema; stderr says why as
// without --json, and the exit status stays 1.
func TestDemoJSONThatCannotRunPrintsTheFailureObject(t *testing.T) {
	schema := compileSchema(t, "demo")
	var out, errb bytes.Buffer
	f := NewFactory(IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: []string{"HOME=" + t.TempDir(), "HERDR_PI_LOG=off"}})
	f.Executable = func() (string, error) { return "", errors.New("readlink /proc/self/exe: no such file or directory") }
	exit := runWith(context.Background(), []string{"herdr-pi", "demo", "--json"}, f)
	if exit != exitError || !strings.Contains(errb.String(), "herdr-pi demo: cannot find my own executable") {
		t.Errorf("exit %d, stderr %q; want 1 and why", exit, errb.String())
	}
	validate(t, schema, out.String())
	var got struct {
		Format string
		Events []demo.Event
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Format != demo.Format || got.Error.Code != "failed" ||
		!strings.HasPrefix(got.Error.Message, "cannot find my own executable") || got.Events != nil {
		t.Errorf("stdout %q (%v); want format %s, code failed and why, no timeline", out.String(), err, demo.Format)
	}
	for _, doc := range docExamples(t, "demo") {
		validate(t, schema, doc)
	}
}
