// Package e2e holds herdr-pi's end-to-end tests: testscript scripts that run
// the real herdr-pi binary (this test binary, re-executed) against a scripted
// fake agent under real ptys.
package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/commands"
	"github.com/herdr-pi/herdr-pi/internal/golden"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) {
	// A race-enabled binary sleeps a second before it exits (GORACE
	// atexit_sleep_ms defaults to 1000); every herdr-pi and fakeagent run here
	// is this binary, so switch that off for the whole suite.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(testenv.Checked(m), map[string]func(){
		"herdr-pi": func() {
			os.Exit(commands.Main(context.Background(), os.Args, commands.SystemIO()))
		},
		"fakeagent": fakeAgentMain,
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		UpdateScripts:       golden.Updating(),
		RequireExplicitExec: true,
		Cmds:                scriptCmds(),
		Setup: func(env *testscript.Env) error {
			// Keep every file herdr-pi writes inside the script's sandbox.
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.state")
			env.Setenv("HERDR_PI_CONFIG", "")
			// and every runtime file (the wrappers' control sockets, the
			// toast board of each fake Herdr) in a short directory of its own.
			rt, err := os.MkdirTemp("/tmp", "hps")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(rt) })
			env.Setenv("XDG_RUNTIME_DIR", rt)
			env.Setenv("GORACE", os.Getenv("GORACE"))
			setupHerdrFake(env)
			return nil
		},
	})
}
