package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestTheTemplateHasOneDataSlot(t *testing.T) {
	if n := bytes.Count(clientTemplate, dataSlot); n != 1 {
		t.Fatalf("client.mjs has %d data slots", n)
	}
}

func TestClientExtensionRefusesWhatItCannotServe(t *testing.T) {
	if _, err := ClientExtension(nil, "/s", "t"); err == nil || err.Error() != "tools: no tools to bridge" {
		t.Errorf("no tools: %v", err)
	}
	if _, err := ClientExtension(testSpecs, "", "t"); err == nil {
		t.Error("no socket: no error")
	}
	if _, err := ClientExtension(testSpecs, "/s", ""); err == nil {
		t.Error("no token: no error")
	}
}

func TestWriteClientMakesAPrivateFileBesideTheSocket(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	f := start(t, func(context.Context, Call, func(json.RawMessage)) (json.RawMessage, error) { return nil, nil })
	path, err := f.srv.WriteClient()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || filepath.Dir(path) != filepath.Dir(f.srv.Path()) || !strings.HasSuffix(path, ".mjs") {
		t.Fatalf("client %s mode %v", path, fi.Mode())
	}
	want, _ := ClientExtension(f.srv.Tools(), f.srv.Path(), f.srv.Token())
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatal("the written client is not ClientExtension's output")
	}
	if _, err := f.srv.WriteClient(); err == nil {
		t.Fatal("a second WriteClient replaced the file")
	}
}

func node(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("HERDR_PI_TEST_NODE_BIN"); dir != "" {
		return filepath.Join(dir, "node")
	}
	p, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node", "install Node (CI installs Node 24 with .ci/install-pi)")
	}
	return p
}

// hostile is text that would break out of a JavaScript string or object
// literal if it were spliced into code.
const hostile = "\"); globalThis.pwned = 1; (\" ` ${globalThis.pwned = 2} </script> \u2028\u2029 \\"

func harnessSpecs() []Spec {
	return []Spec{
		{
			Name: "echo", Label: "Echo", Description: "Echo " + hostile,
			PromptSnippet: "echo: say it back", PromptGuidelines: []string{"Use echo to test.", hostile},
			Parameters:   json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"__proto__":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`),
			RenderShell:  "self", ExecutionMode: "sequential",
		},
		{Name: "fail", Description: "Always fails."},
		{Name: "slow", Description: "Waits until cancelled."},
	}
}

// The generated extension, run by node with a stand-in for Pi, against a
// real server: definitions arrive intact (hostile text stays data), calls
// forward updates and settle on result or error, an abort reaches the
// executor as a cancelled context, and a vanished owner is an error.
func TestClientExtensionUnderNode(t *testing.T) {
	bin := node(t)
	b := newBlocker()
	f := start(t, func(ctx context.Context, call Call, update func(json.RawMessage)) (json.RawMessage, error) {
		switch call.Name {
		case "echo":
			var p struct{ Text string }
			_ = json.Unmarshal(call.Params, &p)
			update(json.RawMessage(`{"content":[{"type":"text","text":"echoing"}]}`))
			text, _ := json.Marshal("echo: " + p.Text)
			id, _ := json.Marshal(call.ToolCallID)
			return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}],"details":{"id":` + string(id) + `}}`), nil
		case "slow":
			return b.run(ctx, call, update)
		}
		return nil, errors.New("fail: as asked")
	}, func(c *Config) { c.Tools = harnessSpecs() })
	client, err := f.srv.WriteClient()
	if err != nil {
		t.Fatal(err)
	}
	// A socket that reads the request and closes, as an owner dying
	// mid-call would.
	closing, err := net.Listen("unix", filepath.Join(filepath.Dir(f.srv.Path()), "closing.sock"))
	if err != nil {
		t.Fatal(err)
	}
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := closing.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			c.Close()
		}
	}()
	defer func() { closing.Close(); <-acceptDone }()

	// A hang (a call that never settles keeps node alive) must end as a
	// failure, not stall the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "testdata/client_harness.mjs", "file://"+client, closing.Addr().String(), filepath.Join(filepath.Dir(f.srv.Path()), "none.sock"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BRIDGE_SOCKET=" + f.srv.Path(), "BRIDGE_TOKEN=" + f.srv.Token()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, stderr.String())
	}
	var out struct {
		Definitions []map[string]any
		Calls       map[string]struct {
			Updates []json.RawMessage
			Result  json.RawMessage
			Error   string
		}
		Injected bool
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("harness output %q: %v", raw, err)
	}

	if out.Injected {
		t.Fatal("text in a spec ran as code")
	}
	var want []map[string]any
	specs, _ := json.Marshal(f.srv.Tools())
	_ = json.Unmarshal(specs, &want)
	for _, d := range want {
		d["execute"] = "function"
	}
	if !reflect.DeepEqual(out.Definitions, want) {
		t.Fatalf("registered definitions:\n got %v\nwant %v", out.Definitions, want)
	}

	call := func(name string) (string, string, string) {
		c := out.Calls[name]
		var ups []string
		for _, u := range c.Updates {
			ups = append(ups, string(u))
		}
		return strings.Join(ups, ","), string(c.Result), c.Error
	}
	check := func(name, updates, result, errText string) {
		t.Helper()
		u, r, e := call(name)
		if u != updates || r != result || e != errText {
			t.Errorf("%s: updates %s result %s error %q\nwant updates %s result %s error %q", name, u, r, e, updates, result, errText)
		}
	}
	echoing := `{"content":[{"type":"text","text":"echoing"}]}`
	check("echo", echoing, `{"content":[{"type":"text","text":"echo: hi"}],"details":{"id":"id-echo"}}`, "")
	check("throwingUpdate", echoing, `{"content":[{"type":"text","text":"echo: again"}],"details":{"id":"id-echo"}}`, "")
	check("fail", "", "", "fail: as asked")
	check("abort", `{"content":[{"type":"text","text":"waiting"}]}`, "", "herdr-pi tool bridge: slow: aborted")
	check("preAborted", "", "", "herdr-pi tool bridge: echo: aborted")
	check("unknown", "", "", "unknown tool: nope (this bridge serves: echo, fail, slow)")
	check("earlyClose", "", "", "herdr-pi tool bridge: echo: the owner closed the connection before answering; the handoff may have ended")
	if _, _, e := call("missing"); !strings.HasPrefix(e, "herdr-pi tool bridge: echo: cannot reach the workflow owner (connect ENOENT") {
		t.Errorf("missing socket: %q", e)
	}

	if err := receive(t, b.ended, "the aborted call's cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("slow's context ended with %v", err)
	}
	f.logs.waitFor(t, "slow (id-slow) aborted by the caller")
	if n := f.exec.count(); n != 4 {
		t.Fatalf("executor ran %d times, want 4 (echo, fail, echo, slow)", n)
	}
}
