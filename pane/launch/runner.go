package launch

import (
	"path/filepath"
	"slices"
	"strings"
)

// A runner runs a package's command: `<runner> [options] <package or
// command> [its arguments]`. Everything after the package is the
// package's, so that is where the agent's arguments begin.
type runner struct {
	name string
	// values take the next argument as their value unless written --k=v.
	values set
	// shell run a shell command string instead of a package (npx -c).
	shell set
	// npx reads options as npm's npx does (npm 11 bin/npx-cli.js): an
	// option that is not one of npm's switches takes the next argument as
	// its value unless that starts with a dash, and shorthands expand
	// first (-y is --yes, --no is --no-yes, -w is --workspace).
	npx bool
	// dashDash: the package must follow `--` (npm exec reads every option
	// on its line as its own, so nothing may be added after the package
	// without it).
	dashDash bool
}

var (
	npx = &runner{
		name:   "npx",
		values: setOf("package", "p", "cache", "userconfig", "call", "c", "shell", "npm", "node-arg", "n"),
		shell:  setOf("call", "c"),
		npx:    true,
	}
	npmExec = &runner{
		name:     "npm exec",
		values:   setOf("package", "cache", "userconfig", "prefix", "registry", "workspace", "w", "loglevel", "script-shell", "node-options"),
		shell:    setOf("call", "c"),
		dashDash: true,
	}
	pnpmDlx = &runner{
		name:   "pnpm dlx",
		values: setOf("package", "allow-build", "reporter", "cpu", "os", "libc", "C", "dir"),
		shell:  setOf("c", "shell-mode"),
	}
	pnpmExec = &runner{
		name:   "pnpm exec",
		values: setOf("filter", "F", "resume-from", "C", "dir", "reporter"),
		shell:  setOf("c", "shell-mode"),
	}
	yarnDlx = &runner{
		name:   "yarn dlx",
		values: setOf("p", "package"),
	}
	yarnExec = &runner{name: "yarn exec", values: setOf()}
)

// runnerFor finds the runner argv starts with and where its options begin.
// A package manager asked for something else (pnpm install, yarn pi) is
// reported as not understood: it may run a script or a bin, with arguments
// of its own.
func runnerFor(argv []string) (r *runner, start int, known bool) {
	sub := ""
	if len(argv) > 1 {
		sub = argv[1]
	}
	switch strings.TrimSuffix(filepath.Base(argv[0]), ".exe") {
	case "npx":
		return npx, 1, true
	case "bunx":
		return runtimes["bun"].runnerSpec, 1, true
	case "pnpx":
		return pnpmDlx, 1, true
	case "npm":
		if sub == "exec" || sub == "x" {
			return npmExec, 2, true
		}
		return nil, 0, true
	case "pnpm":
		switch sub {
		case "dlx":
			return pnpmDlx, 2, true
		case "exec":
			return pnpmExec, 2, true
		}
		return nil, 0, true
	case "yarn":
		switch sub {
		case "dlx":
			return yarnDlx, 2, true
		case "exec":
			return yarnExec, 2, true
		}
		return nil, 0, true
	}
	return nil, 0, false
}

func (r *runner) parse(argv []string, start int) Command {
	// args is what the runner reads, with shorthands expanded; from maps
	// each back to its index in argv.
	args := slices.Clone(argv[start:])
	from := make([]int, len(args))
	for i := range from {
		from[i] = start + i
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 >= len(args) {
				break
			}
			return r.pkg(argv, from[i+1])
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if r.dashDash {
				return opaque(argv, "%s reads the options after %s as its own; put -- before the package", r.name, a)
			}
			return r.pkg(argv, from[i])
		}
		key, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if r.shell[key] {
			return opaque(argv, "%s %s runs a shell command", r.name, a)
		}
		if r.npx {
			if sh, ok := npmShorthands[key]; ok {
				exp := slices.Clone(sh)
				if hasValue {
					exp = append(exp, value)
				}
				args = slices.Replace(args, i, i+1, exp...)
				from = slices.Replace(from, i, i+1, slices.Repeat([]int{from[i]}, len(exp))...)
				i--
				continue
			}
			next := i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")
			if !hasValue && !npxSwitches[key] && (r.values[key] || next) {
				i++
			}
			continue
		}
		if r.values[key] && !hasValue {
			i++
		}
	}
	return opaque(argv, "%s is given no package", r.name)
}

func (r *runner) pkg(argv []string, i int) Command {
	return Command{
		Shape:  Package,
		Launch: argv[: i+1 : i+1],
		Args:   argv[i+1:],
		Agent:  argv[i],
		Pi:     piPackage(argv[i]),
	}
}

// npxSwitches are the options npx knows take no value: npm's Boolean
// config keys and npx's own (npm 11.19 @npmcli/config definitions).
var npxSwitches = setOf(
	"all", "allow-same-version", "audit", "bin-links", "browser", "bypass-2fa", "color",
	"commit-hooks", "dangerously-allow-all-scripts", "description", "dev", "diff-ignore-all-space",
	"diff-name-only", "diff-no-prefix", "diff-text", "dry-run", "engine-strict", "expect-results",
	"force", "foreground-scripts", "format-package-lock", "fund", "git-tag-version", "global",
	"global-style", "if-present", "ignore-scripts", "include-staged", "include-workspace-root",
	"include-attestations", "init-private", "install-links", "json", "legacy-bundling",
	"legacy-peer-deps", "link", "long", "offline", "omit-lockfile-registry-resolved", "optional",
	"package-lock", "package-lock-only", "parseable", "allow-scripts-pending", "allow-scripts-pin",
	"prefer-dedupe", "prefer-offline", "prefer-online", "production", "progress", "provenance",
	"read-only", "rebuild-bundle", "save", "save-bundle", "save-dev", "save-exact", "save-optional",
	"save-peer", "save-prod", "packages-all", "shrinkwrap", "sign-git-commit", "sign-git-tag",
	"strict-peer-deps", "strict-allow-scripts", "strict-ssl", "timing", "unicode", "update-notifier",
	"usage", "version", "versions", "workspaces", "workspaces-update", "yes",
	// npx's own, and its removed switches
	"no-install", "quiet", "q", "version", "v", "help", "h",
	"always-spawn", "ignore-existing", "shell-auto-fallback",
)

// npmShorthands expand before npx reads an option (npm 11.19). npx skips
// the removed -n.
var npmShorthands = map[string][]string{
	"enjoy-by": {"--before"}, "d": {"--loglevel", "info"}, "dd": {"--loglevel", "verbose"},
	"ddd": {"--loglevel", "silly"}, "quiet": {"--loglevel", "warn"}, "q": {"--loglevel", "warn"},
	"s": {"--loglevel", "silent"}, "silent": {"--loglevel", "silent"}, "verbose": {"--loglevel", "verbose"},
	"desc": {"--description"}, "help": {"--usage"}, "local": {"--no-global"}, "no": {"--no-yes"},
	"porcelain": {"--parseable"}, "readonly": {"--read-only"}, "reg": {"--registry"},
	"iwr": {"--include-workspace-root"}, "ws": {"--workspaces"}, "a": {"--all"}, "c": {"--call"},
	"f": {"--force"}, "g": {"--global"}, "L": {"--location"}, "l": {"--long"}, "m": {"--message"},
	"C": {"--prefix"}, "S": {"--save"}, "B": {"--save-bundle"}, "D": {"--save-dev"},
	"E": {"--save-exact"}, "O": {"--save-optional"}, "P": {"--save-prod"}, "?": {"--usage"},
	"H": {"--usage"}, "h": {"--usage"}, "v": {"--version"}, "w": {"--workspace"}, "y": {"--yes"},
}
