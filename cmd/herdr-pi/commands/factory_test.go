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
