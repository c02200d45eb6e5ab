package launch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// Shape says how a command line starts its agent.
type Shape int

const (
	// Direct: the agent's own program (pi, ./bin/pi-dev, claude).
	Direct Shape = iota
	// Script: a JavaScript runtime running the agent's script
	// (node [options] cli.js, bun run …, deno run …, tsx …).
	Script
	// Package: a package runner running the agent's command (npx pi,
	// bunx …, pnpm dlx …, npm exec -- …, yarn dlx …).
	Package
	// Opaque: a runtime or runner whose agent arguments could not be found
	// (an eval string, a shell command, an option it does not know). Nothing
	// may be added to such a command line.
	Opaque
)

func (s Shape) String() string {
	switch s {
	case Direct:
		return "direct"
	case Script:
		return "script"
	case Package:
		return "package"
	}
	return "opaque"
}

// Command is a command line split where the agent's own arguments begin.
type Command struct {
	Shape Shape
	// Launch is the part that starts the agent: the program; the runtime,
	// its options and the script; or the runner, its options and the
	// package. Opaque: the whole command line.
	Launch []string
	// Args are the agent's own arguments. Opaque: everything after the
	// program, a best guess to read options from, never to write into.
	Args []string
	// Agent names what Launch runs: the program, script or package as
	// written ("" when Opaque).
	Agent string
	// Pi reports that Agent is Pi: by name (pi, pi.js, pi.mjs), by npm
	// package (@earendil-works/pi-coding-agent, @mariozechner/…), or by a
	// script inside such a package (…/pi-coding-agent/dist/cli.js).
	Pi bool
	// Why says, for Opaque, what could not be read (for the log).
	Why string

	runtime string // Script: the runtime's name (node, bun, deno, tsx)
}

// Parse splits argv. dir is the directory the command will run in (for a
// script's relative path); "" means the current directory.
func Parse(argv []string, dir string) Command {
	if len(argv) == 0 {
		return Command{Shape: Opaque, Why: "no command"}
	}
	name := strings.TrimSuffix(filepath.Base(argv[0]), ".exe")
	if name == "env" {
		return parseEnv(argv, dir)
	}
	if isShell(argv[0]) {
		return opaque(argv, "%s runs a shell", name)
	}
	if r, ok := runtimes[name]; ok {
		return r.parse(argv, dir)
	}
	if r, start, ok := runnerFor(argv); ok {
		if r == nil {
			return opaque(argv, "%s %s may run a script or a command of its own", name, strings.Join(argv[1:min(2, len(argv))], ""))
		}
		return r.parse(argv, start)
	}
	return Command{
		Shape:  Direct,
		Launch: argv[:1:1],
		Args:   argv[1:],
		Agent:  argv[0],
		Pi:     piName(argv[0]) || strings.Contains(argv[0], "/") && piScript(argv[0], dir),
	}
}

// With returns the command line with args in place of the agent's own
// arguments. It refuses an Opaque command: where its agent reads its
// arguments is unknown.
func (c Command) With(args []string) ([]string, error) {
	if c.Shape == Opaque {
		return nil, fmt.Errorf("cannot tell where %q takes the agent's arguments: %s", strings.Join(c.Launch, " "), c.Why)
	}
	return append(slices.Clip(c.Launch), args...), nil
}

// NodeEntry splits a command that runs a script with node into node's part
// and the script: `node [options] <script>`, or a Direct program (say pi,
// an npm bin run through its `#!/usr/bin/env node` line) with "node" in
// its place. The script comes back as an absolute path, found the way the
// command will find it: a bare program name on env's PATH, a relative path
// from dir. The caller must make sure the script is one for node.
func (c Command) NodeEntry(env []string, dir string) (node []string, script string, ok bool) {
	n := len(c.Launch)
	switch {
	case c.Shape == Script && c.runtime == "node":
		node, script = slices.Clip(c.Launch[:n-1]), c.Launch[n-1]
	case c.Shape == Direct:
		node, script = append(slices.Clip(c.Launch[:n-1]), "node"), c.Launch[n-1]
		if !strings.Contains(script, "/") {
			found, err := pty.Resolve(script, env)
			if err != nil {
				return nil, "", false
			}
			script = found
		}
	default:
		return nil, "", false
	}
	if !filepath.IsAbs(script) {
		script = filepath.Join(dir, script)
	}
	return node, script, true
}

func opaque(argv []string, why string, args ...any) Command {
	return Command{Shape: Opaque, Launch: argv, Args: argv[1:], Why: fmt.Sprintf(why, args...)}
}

// parseEnv reads `env [-i] [-u name] [-C dir] [name=value…] command…` and
// the command after it.
func parseEnv(argv []string, dir string) Command {
	i := 1
scan:
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
			break scan
		case a == "-C" || a == "--chdir":
			if i+1 < len(argv) {
				dir = resolveDir(dir, argv[i+1])
			}
			i++
		case a == "-u" || a == "--unset":
			i++
		case strings.HasPrefix(a, "--chdir="):
			dir = resolveDir(dir, strings.TrimPrefix(a, "--chdir="))
		case a == "-S" || strings.HasPrefix(a, "--split-string"):
			return opaque(argv, "env %s splits a string into a command", a)
		case strings.HasPrefix(a, "-") && a != "-":
			// -i, -0, --ignore-environment, --unset=x: nothing to skip.
		case strings.Contains(a, "="):
			// name=value
		default:
			break scan
		}
	}
	if i >= len(argv) {
		return opaque(argv, "env is given no command")
	}
	c := Parse(argv[i:], dir)
	c.Launch = append(slices.Clip(argv[:i]), c.Launch...)
	if c.Shape == Opaque {
		c.Args = argv[1:]
	}
	return c
}

func resolveDir(dir, to string) string {
	if filepath.IsAbs(to) || dir == "" {
		return to
	}
	return filepath.Join(dir, to)
}
