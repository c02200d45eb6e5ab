package commands

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Pi in print mode is not wrapped at all: wrap steps aside through the
// factory's Exec, with the agent's own argv and environment, and nothing
// else starts.
func TestWrapHandsPiPrintModeToExec(t *testing.T) {
	dir := t.TempDir()
	pi := filepath.Join(dir, "pi")
	if err := os.WriteFile(pi, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr strings.Builder
	env := []string{"PATH=" + dir, "HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	f := NewFactory(IO{In: devnull, Out: out, Err: &stderr, Env: env, Dir: dir})
	var got []string
	var gotEnv []string
	f.Exec = func(path string, argv, env []string, wd string) error {
		got, gotEnv = append([]string{path, wd}, argv...), env
		return nil
	}
	if code := runWith(context.Background(), []string{"herdr-pi", "wrap", "pi", "-p", "hello"}, f); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := []string{pi, dir, "pi", "-p", "hello"}; !slices.Equal(got, want) {
		t.Errorf("exec %q, want %q", got, want)
	}
	if !slices.Equal(gotEnv, env) {
		t.Errorf("exec env %q, want the caller's %q", gotEnv, env)
	}
}

// The log line of a Pi that wrap steps aside for names its command line
// without the key given on it (people paste the log into issues).
func TestWrapLogsPiPrintModeWithoutItsKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pi"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var stderr strings.Builder
	env := []string{"PATH=" + dir, "HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	f := NewFactory(IO{In: devnull, Out: devnull, Err: &stderr, Env: env, Dir: dir})
	f.Exec = func(string, []string, []string, string) error { return nil }
	if code := runWith(context.Background(), []string{"herdr-pi", "wrap", "pi", "--api-key", "hunter2", "-p", "hello"}, f); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "herdr-pi", "herdr-pi.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `exec ["pi" "--api-key" "xxxxx" "-p" "hello"]`; !strings.Contains(string(b), want) || strings.Contains(string(b), "hunter2") {
		t.Errorf("the log says\n%s\nwant %s and no hunter2", b, want)
	}
}
