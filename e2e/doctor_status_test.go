package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// docSchema compiles docs/<name>.schema.json, the schema the docs link to.
func docSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join("..", "docs", name+".schema.json"))
	if err != nil {
		t.Fatalf("docs/%s.schema.json: %v", name, err)
	}
	return s
}

func validateJSON(t *testing.T, s *jsonschema.Schema, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("does not match its documented schema: %v\n%s", err, doc)
	}
}

// herdrPi runs the herdr-pi binary and returns its stdout and exit code.
func herdrPi(t *testing.T, env []string, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command("herdr-pi", args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitStatus(err); code != 0 && code != 1 {
		t.Fatalf("herdr-pi %q: exit %d: %s", args, code, stderr.Bytes())
	}
	return out, exitStatus(err)
}

// The acceptance: `doctor --json` validates against its documented
// schema, inside the fake Herdr and outside, on this machine as it is
// (with or without Pi), and its exit status agrees with its "ok".
func TestDoctorJSONValidatesInsideAndOutsideHerdr(t *testing.T) {
	schema := docSchema(t, "doctor")
	dir := t.TempDir()
	base := append(withoutHerdr(os.Environ()), "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	for _, tc := range []struct {
		name string
		env  []string
	}{{"outside Herdr", base}, {"inside the fake Herdr", append(base, h.Env()...)}} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, code := herdrPi(t, tc.env, "doctor", "--json")
			t.Logf("doctor took %v", time.Since(start))
			validateJSON(t, schema, out)
			var rep struct {
				OK     bool
				Checks []struct{ Section, Name, Status string }
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.OK != (code == 0) {
				t.Errorf("ok %v but exit %d", rep.OK, code)
			}
			rows := map[string]string{}
			for _, c := range rep.Checks {
				rows[c.Section+"/"+c.Name] = c.Status
			}
			for _, want := range []string{"herdr/environment", "pi/pi", "pi/node", "pi/probe", "pi/herdr integration", "pi/replaced extensions",
				"config/config.toml", "config/manifests", "notify/notification channel", "runtime/directory", "runtime/registry"} {
				if _, ok := rows[want]; !ok {
					t.Errorf("no %s row in %s", want, out)
				}
			}
			inside := strings.Contains(tc.name, "inside")
			if _, ok := rows["herdr/pane"]; ok != inside {
				t.Errorf("pane row present %v, inside Herdr %v", ok, inside)
			}
		})
	}
}

// status against a real wrapper: a fake agent under `herdr-pi wrap` in the
// fake Herdr's pane opens a wait, and `herdr-pi status` from the pane
// (found through the registry) shows it, as JSON, as plain text through a
// pipe, and coloured on a terminal; then the wait closes.
func TestStatusOfARunningWrapper(t *testing.T) {
	schema := docSchema(t, "status")
	dir, err := os.MkdirTemp("/tmp", "hpst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := herdrtest.Start(t)
	env := append(withoutHerdr(os.Environ()), "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = append(env, h.Env()...)
	script := agentScript(t,
		"print ready\\r\\n",
		"run herdr-pi waiting start --source deploy --id 42 --label approve",
		"readline",
		"run herdr-pi waiting stop --source deploy --id 42",
		"readline",
	)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", script}})
	if err != nil {
		t.Fatal(err)
	}
	finished := false
	t.Cleanup(func() {
		if !finished { // a failed test: end the wrapper and its agent
			r.wait(0)
		}
	})

	type status struct {
		State          string
		Since          time.Time
		Agent          string
		WrapperPID     int  `json:"wrapper_pid"`
		ChildPID       int  `json:"child_pid"`
		ProbeConnected bool `json:"probe_connected"`
		Reasons        []struct {
			Kind, Key, Label string
			Since            time.Time
		}
	}
	until := func(state string) (status, []byte) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			out, code := herdrPi(t, env, "status", "--json")
			var st status
			if code == 0 {
				if err := json.Unmarshal(out, &st); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if st.State == state {
					return st, out
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("status never became %s: exit %d\n%s\nterminal: %q", state, code, out, r.bytes())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	st, out := until("blocked")
	validateJSON(t, schema, out)
	if len(st.Reasons) != 1 || st.Reasons[0].Kind != "wait" || st.Reasons[0].Key != "hook:deploy:42" || st.Reasons[0].Label != "approve" ||
		st.Reasons[0].Since.IsZero() || st.Since.IsZero() || st.WrapperPID <= 0 || st.ChildPID <= 0 || st.ChildPID == st.WrapperPID || st.ProbeConnected || st.Agent == "" {
		t.Fatalf("status --json:\n%s", out)
	}

	plain, _ := herdrPi(t, env, "status")
	for _, want := range []string{
		"state    blocked for ", "agent    " + st.Agent + " (pid " + strconv.Itoa(st.ChildPID) + ")\n",
		"probe    not connected", "wrapper  pid " + strconv.Itoa(st.WrapperPID) + "\n",
		"reasons  1 open\n", "  wait  approve  hook:deploy:42  for ",
	} {
		if !strings.Contains(string(plain), want) {
			t.Errorf("status lacks %q:\n%s", want, plain)
		}
	}
	if bytes.Contains(plain, []byte("\x1b")) {
		t.Errorf("status into a pipe has escapes: %q", plain)
	}

	onTerminal := func(extra ...string) []byte {
		t.Helper()
		tr, err := startOuter(outerOptions{Keep: true, Env: append(append([]string{}, env...), extra...), Argv: []string{"herdr-pi", "status"}})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := tr.wait(10 * time.Second); err != nil || code != 0 {
			t.Fatalf("status on a terminal: exit %d, %v: %q", code, err, tr.bytes())
		}
		return tr.bytes()
	}
	if got := onTerminal(); !bytes.Contains(got, []byte("\x1b[1;31mblocked\x1b[0m for ")) {
		t.Errorf("status on a terminal is not coloured: %q", got)
	}
	if got := onTerminal("NO_COLOR=1"); bytes.Contains(got, []byte("\x1b[")) || !bytes.Contains(got, []byte("blocked for ")) {
		t.Errorf("status with NO_COLOR: %q", got)
	}

	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	st, out = until("idle")
	validateJSON(t, schema, out)
	if len(st.Reasons) != 0 || !strings.Contains(string(out), `"reasons": []`) {
		t.Errorf("idle status:\n%s", out)
	}
	if plain, _ := herdrPi(t, env, "status"); !strings.Contains(string(plain), "reasons  none open\n") {
		t.Errorf("idle status:\n%s", plain)
	}
	if _, err := r.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	code, err := r.wait(15 * time.Second)
	finished = true
	if err != nil || code != 0 {
		t.Fatalf("wrap: exit %d, %v", code, err)
	}
	if out, code := herdrPi(t, env, "status"); code != 1 || len(out) != 0 {
		t.Errorf("status after the wrapper exited: exit %d, %q", code, out)
	}
}
