// Package settings says where herdr-pi's files are and what they say: the
// XDG and Pi directories, herdr-pi's config.toml, and whether we run inside a
// complete Herdr environment. It validates with file:line errors and never
// touches the terminal, the network or another package of herdr-pi.
package settings

import (
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// Env is a process environment as a lookup. Build it with [EnvFrom] so tests
// can pass any environment they like.
type Env map[string]string

// EnvFrom turns KEY=VALUE pairs into an Env; the last value of a key wins.
func EnvFrom(kv []string) Env {
	e := make(Env, len(kv))
	for _, s := range kv {
		if k, v, ok := strings.Cut(s, "="); ok {
			e[k] = v
		}
	}
	return e
}

// Get returns the value of key, or "" when unset.
func (e Env) Get(key string) string { return e[key] }

// Paths are the files and directories herdr-pi reads and writes.
type Paths struct {
	Home string
	// ConfigFile is herdr-pi's config.toml (HERDR_PI_CONFIG overrides).
	ConfigFile string
	// ConfigNamed is true when HERDR_PI_CONFIG chose ConfigFile: someone
	// asked for that file, so its absence is a mistake, not "no config".
	ConfigNamed bool
	// ConfigDir holds config.toml and manifests/.
	ConfigDir string
	// ManifestDir holds user detection manifests (<agent>.toml).
	ManifestDir string
	// StateDir holds the log. (The pane registry is under RuntimeBase,
	// beside the run directories whose sockets it names.)
	StateDir string
	// RuntimeBase is the parent of the private per-run directories.
	RuntimeBase string
	// PiAgentDir is Pi's agent directory (PI_CODING_AGENT_DIR, default ~/.pi/agent).
	PiAgentDir string
	// PiAgentDirNamed is true when PI_CODING_AGENT_DIR chose PiAgentDir:
	// when it is no directory, the variable is what to fix.
	PiAgentDirNamed bool
}

// Resolve computes Paths from the environment, following the XDG base
// directory rules.
func Resolve(env Env) Paths {
	home := env.Get("HOME")
	if !filepath.IsAbs(home) {
		home = accountHome()
	}
	xdg := func(key, fallback string) string {
		if v := env.Get(key); filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, fallback)
	}
	p := Paths{Home: home}
	p.ConfigDir = filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "herdr-pi")
	p.ConfigFile = filepath.Join(p.ConfigDir, "config.toml")
	if v := env.Get("HERDR_PI_CONFIG"); v != "" {
		// Set where no shell expands "~" (a Herdr layout's env, a
		// systemd unit), "~/…" still means the home, as it does in
		// PI_CODING_AGENT_DIR.
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			v = filepath.Join(home, rest)
		}
		p.ConfigFile, p.ConfigNamed = v, true
	}
	p.ManifestDir = filepath.Join(p.ConfigDir, "manifests")
	p.StateDir = filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "herdr-pi")
	// Runtime directories hold unix sockets, whose paths are limited to 107
	// bytes: prefer the short XDG_RUNTIME_DIR, else TMPDIR, else /tmp.
	base := env.Get("XDG_RUNTIME_DIR")
	if !usableRuntimeBase(base) {
		base = RuntimeFallback(env)
	}
	p.RuntimeBase = filepath.Join(base, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	p.PiAgentDir = piAgentDir(env.Get("PI_CODING_AGENT_DIR"), home)
	p.PiAgentDirNamed = env.Get("PI_CODING_AGENT_DIR") != ""
	return p
}

// RuntimeFallback is the directory the runtime directory goes under when
// XDG_RUNTIME_DIR is unset (or unusable): TMPDIR, as os.TempDir reads it,
// when usable, else /tmp. Doctor's fixes name it.
func RuntimeFallback(env Env) string {
	// A relative TMPDIR would be a different directory for every
	// command's working directory.
	if tmp := env.Get("TMPDIR"); usableRuntimeBase(tmp) {
		return tmp
	}
	return "/tmp"
}

// usableRuntimeBase says whether dir may hold the runtime directory: an
// absolute path short enough to leave room for a socket's name under it.
func usableRuntimeBase(dir string) bool { return filepath.IsAbs(dir) && len(dir) <= 60 }

// noHome stands in for a home that cannot be found: like the nobody
// account's, it does not exist and only root could make it, so nothing is
// read from it and the log is not written.
const noHome = "/nonexistent"

// accountHome is the home of the user running herdr-pi from the user
// database, for when HOME is unset or relative — never the working
// directory, where a checked-out repository could put a config.toml, a
// manifest or Pi's settings for herdr-pi to read. Node's os.homedir, which
// Pi uses, looks there too.
func accountHome() string {
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return noHome
}

// piAgentDir is Pi's agent directory as Pi itself reads
// PI_CODING_AGENT_DIR (read in Pi 1.6.0's installed package, its path
// normalising; the reference does not cover it): "~" and "~/…" are under
// home, a file:// URL is its path, anything else stays as given. The
// owner's probe resolves it the same way (bridge/probe/handoff.js
// agentDir): doctor, open and the probe must find the same settings file.
func piAgentDir(dir, home string) string {
	switch {
	case dir == "":
		return filepath.Join(home, ".pi", "agent")
	case dir == "~":
		return home
	case strings.HasPrefix(dir, "~/"):
		return filepath.Join(home, dir[2:])
	case strings.HasPrefix(dir, "file://"):
		if u, err := url.Parse(dir); err == nil && (u.Host == "" || u.Host == "localhost") {
			return "/" + strings.TrimPrefix(u.Path, "/")
		}
	}
	return dir
}

// Pretty shortens a path under home to ~/… for messages.
func (p Paths) Pretty(path string) string {
	if p.Home != "" && p.Home != "/" {
		if rel, err := filepath.Rel(p.Home, path); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join("~", rel)
		}
	}
	return path
}
