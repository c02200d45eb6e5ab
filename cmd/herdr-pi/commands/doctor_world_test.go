package commands

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/herdr-pi/herdr-pi/settings"
)

// world is a made-up machine for doctor: a home, XDG directories, a short
// private runtime base, and a bin directory that is the whole PATH, so
// only the programs a test puts there exist.
type world struct {
	t    *testing.T
	Home string
	Bin  string
	env  map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// Short: the runtime base holds unix sockets.
	root, err := os.MkdirTemp("/tmp", "hpdoc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &world{t: t, Home: filepath.Join(root, "home"), Bin: filepath.Join(root, "bin")}
	for _, d := range []string{w.Home, w.Bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.env = map[string]string{
		"HOME": w.Home, "PATH": w.Bin, "XDG_RUNTIME_DIR": root,
		"XDG_CONFIG_HOME": filepath.Join(w.Home, ".config"), "XDG_STATE_HOME": filepath.Join(w.Home, ".state"),
	}
	return w
}

// set changes environment variables ("" removes one).
func (w *world) set(kv ...string) *world {
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		if v == "" {
			delete(w.env, k)
		} else {
			w.env[k] = v
		}
	}
	return w
}

func (w *world) Env() []string {
	out := make([]string, 0, len(w.env))
	for k, v := range w.env {
		out = append(out, k+"="+v)
	}
	return out
}

func (w *world) paths() settings.Paths { return settings.Resolve(settings.EnvFrom(w.Env())) }

// doctorEnv is what the checks get in this world.
func (w *world) doctorEnv(timeout time.Duration) doctorEnv {
	env := settings.EnvFrom(w.Env())
	paths := settings.Resolve(env)
	cfg, cfgErr := settings.LoadConfig(paths.ConfigFile, paths.Pretty(paths.ConfigFile))
	return doctorEnv{Env: env, Paths: paths, Config: cfg, ConfigErr: cfgErr, ProgramTimeout: timeout}
}

// script puts an executable shell script named name on PATH.
func (w *world) script(name, body string) string {
	w.t.Helper()
	p := filepath.Join(w.Bin, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// file writes a file under the world's home (relative paths) or anywhere.
func (w *world) file(path, content string, mode os.FileMode) string {
	w.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.Home, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// fakeNode answers --version with v and, asked to load the probe, prints
// what a loaded probe reports. For tests whose subject is not the probe.
func (w *world) fakeNode(v string) {
	w.script("node", `case "$1" in
--version) echo `+v+` ;;
*) echo '{"handlers":["session_start","agent_start"],"channels":["herdr:blocked"]}' ;;
esac`)
}

// fakePi prints version v on stderr, as Pi 0.73.1 does without a terminal.
func (w *world) fakePi(v string) { w.script("pi", "echo "+v+" >&2") }

// healthy is a world where every local check passes: Pi and Node fit.
func (w *world) healthy() *world {
	w.fakeNode("v24.22.3")
	w.fakePi("1.6.0")
	return w
}

func (w *world) doctor(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"herdr-pi", "doctor"}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb, Env: w.Env()})
	return code, out.String(), errb.String()
}

// rowsByName indexes rows by "section/name".
func rowsByName(rows []checkRow) map[string]checkRow {
	m := map[string]checkRow{}
	for _, r := range rows {
		m[r.Section+"/"+r.Name] = r
	}
	return m
}

// compileSchema compiles docs/<name>.schema.json, the file the docs link
// to, with formats (date-time) asserted.
func compileSchema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join("..", "..", "..", "docs", name+".schema.json"))
	if err != nil {
		t.Fatalf("docs/%s.schema.json: %v", name, err)
	}
	return s
}

// validate checks a JSON document against a schema.
func validate(t testing.TB, s *jsonschema.Schema, doc string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("does not match its schema: %v\n%s", err, doc)
	}
}

// docExample is the first ```json block of docs/<page>.md.
func docExample(t testing.TB, page string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", page+".md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(md), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("docs/%s.md has no json example", page)
	}
	return block
}

// deadPID is the pid of a child that ran and was reaped: surely gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
