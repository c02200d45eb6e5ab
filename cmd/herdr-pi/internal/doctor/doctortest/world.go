// Package doctortest makes up machines for doctor's tests: a home, XDG
// directories, a short private runtime base, and a bin directory that is
// the whole PATH, so only the programs a test puts there exist. The doctor
// package's tests and the doctor command's tests share it.
package doctortest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/settings"
)

// World is one made-up machine.
type World struct {
	T    testing.TB
	Home string
	Bin  string
	env  map[string]string
}

// New makes a world that lives as long as the test.
func New(t testing.TB) *World {
	t.Helper()
	// Short: the runtime base holds unix sockets.
	root, err := os.MkdirTemp("/tmp", "hpdoc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &World{T: t, Home: filepath.Join(root, "home"), Bin: filepath.Join(root, "bin")}
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

// Set changes environment variables ("K=" removes K).
func (w *World) Set(kv ...string) *World {
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

// Env is the world's environment as KEY=VALUE pairs.
func (w *World) Env() []string {
	out := make([]string, 0, len(w.env))
	for k, v := range w.env {
		out = append(out, k+"="+v)
	}
	return out
}

// Paths are herdr-pi's paths in this world.
func (w *World) Paths() settings.Paths { return settings.Resolve(settings.EnvFrom(w.Env())) }

// Script puts an executable shell script named name on PATH.
func (w *World) Script(name, body string) string {
	w.T.Helper()
	p := filepath.Join(w.Bin, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		w.T.Fatal(err)
	}
	return p
}

// File writes a file under the world's home (relative paths) or anywhere.
func (w *World) File(path, content string, mode os.FileMode) string {
	w.T.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.Home, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		w.T.Fatal(err)
	}
	return path
}

// FakeNode answers --version with v and, asked to load the probe, prints
// what a loaded probe reports. For tests whose subject is not the probe.
func (w *World) FakeNode(v string) {
	w.Script("node", `case "$1" in
--version) echo `+v+` ;;
*) echo '{"handlers":["session_start","agent_start"],"channels":["herdr:blocked"]}' ;;
esac`)
}

// FakePi prints version v on stderr, as Pi 0.73.1 does without a terminal.
func (w *World) FakePi(v string) { w.Script("pi", "echo "+v+" >&2") }

// Healthy makes every local check pass: Pi and Node fit.
func (w *World) Healthy() *World {
	w.FakeNode("v24.22.3")
	w.FakePi("1.6.0")
	return w
}
