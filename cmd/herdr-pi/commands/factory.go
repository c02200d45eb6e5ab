package commands

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

// Factory hands every command what it needs of the world. Each part is
// built on first use and then kept, so a command that never looks at the
// config never reads it. Main builds the real one from the process IO;
// tests build one with NewFactory and replace the parts they fake.
type Factory struct {
	IO IO

	// Paths are where herdr-pi's files are, from IO's environment.
	Paths func() settings.Paths
	// Config is herdr-pi's config.toml. With problems in it, it is the
	// defaults and an error naming each problem by file and line: no
	// command refuses to run over a typo.
	Config func() (settings.Config, error)
	// Log opens the log file for one command (tag names it in every line)
	// at the configured level. The caller closes it.
	Log func(tag string) *logger
	// Herdr is this pane's Herdr: its environment and a client for its
	// socket. ok is false outside a complete Herdr environment, where
	// nothing may be sent to Herdr.
	Herdr func() (env settings.Herdr, client *herdr.Client, ok bool)
	// Exec replaces herdr-pi with a program (wrap's way out when Pi runs
	// non-interactively). It returns only when that fails.
	Exec func(path string, argv, env []string, dir string) error
	// Executable is herdr-pi's own binary (the demo runs it under wrap).
	Executable func() (string, error)
}

// NewFactory is the factory of a process with this IO.
func NewFactory(io IO) *Factory {
	f := &Factory{IO: io, Exec: execProgram, Executable: os.Executable}
	f.Paths = sync.OnceValue(func() settings.Paths { return settings.Resolve(io.env()) })
	f.Config = sync.OnceValues(func() (settings.Config, error) {
		return f.Paths().LoadConfig()
	})
	f.Log = func(tag string) *logger {
		cfg, _ := f.Config()
		return openLog(f.Paths(), io.env(), cfg.Log.Level, tag)
	}
	f.Herdr = func() (settings.Herdr, *herdr.Client, bool) {
		h, ok := settings.HerdrEnv(io.env())
		if !ok {
			return h, nil, false
		}
		return h, herdr.NewClient(h.SocketPath), true
	}
	return f
}

// execProgram replaces the process with path. Its failure reads like any
// other failure to start the agent (exit 126).
func execProgram(path string, argv, env []string, dir string) error {
	if dir != "" {
		if err := os.Chdir(dir); err != nil {
			return err
		}
	}
	err := unix.Exec(path, argv, env)
	return &pty.StartError{Command: argv[0], Code: 126, Err: err, Reason: "cannot execute: " + err.Error()}
}
