package launch

import (
	"path/filepath"
	"strings"
)

// A runtime runs a script: `<runtime> [options] [subcommand] <script>
// [script arguments]`. Its options are read the way the runtime reads them,
// so the script is found behind `--require x`, `--inspect`, `--import x`.
type runtime struct {
	name string
	// values take the next argument as their value unless written --k=v.
	values set
	// noScript make the runtime evaluate code, check, test or print
	// something instead of running a script.
	noScript set
	// shorts are the single-dash options it knows besides those above;
	// an unknown one (say a cluster like -pe) makes the line opaque.
	shorts set
	// skip are subcommands that still run a script (bun run, deno run,
	// tsx watch); other lists subcommands that run no script.
	skip, other set
	// runner, when set, is a subcommand that is a package runner (bun x).
	runner     string
	runnerSpec *runner
}

type set map[string]bool

func setOf(words ...string) set {
	s := make(set, len(words))
	for _, w := range words {
		s[w] = true
	}
	return s
}

// Option names below are without their dashes; a key in values or
// noScript serves both its long and short spelling.
var runtimes = map[string]*runtime{}

func init() {
	node := &runtime{
		name: "node",
		values: setOf("r", "require", "import", "loader", "experimental-loader", "C", "conditions",
			"input-type", "title", "inspect-port", "debug-port", "env-file", "env-file-if-exists",
			"disable-warning", "watch-path", "redirect-warnings", "report-dir", "report-directory",
			"report-filename", "report-signal", "diagnostic-dir", "cpu-prof-dir", "cpu-prof-name",
			"cpu-prof-interval", "heap-prof-dir", "heap-prof-name", "heap-prof-interval",
			"icu-data-dir", "openssl-config", "secure-heap", "secure-heap-min",
			"max-http-header-size", "unhandled-rejections", "dns-result-order", "tls-cipher-list",
			"tls-keylog", "trace-event-categories", "trace-event-file-pattern", "experimental-policy",
			"policy-integrity", "experimental-config-file", "localstorage-file", "use-largepages",
			"snapshot-blob", "es-module-specifier-resolution", "experimental-specifier-resolution",
			"max-old-space-size", "max-semi-space-size", "stack-size", "stack-trace-limit",
			"watch-kill-signal", "network-family-autoselection-attempt-timeout"),
		noScript: setOf("e", "eval", "p", "print", "c", "check", "i", "interactive", "test", "run",
			"v", "version", "h", "help", "v8-options", "completion-bash", "prof-process"),
		shorts: setOf(),
	}
	runtimes["node"], runtimes["nodejs"] = node, node

	bunx := &runner{
		name:   "bunx",
		values: setOf("p", "package"),
	}
	runtimes["bun"] = &runtime{
		name: "bun",
		values: setOf("r", "preload", "cwd", "c", "config", "env-file", "tsconfig-override", "d",
			"define", "l", "loader", "conditions", "main-fields", "extension-order", "port",
			"jsx-factory", "jsx-fragment", "jsx-import-source", "jsx-runtime", "install",
			"elide-lines", "F", "filter", "shell", "fetch-preconnect", "max-http-header-size",
			"dns-result-order", "console-depth", "user-agent", "title"),
		noScript: setOf("e", "eval", "p", "print", "h", "help", "v", "version", "revision"),
		shorts:   setOf("b", "i", "u"),
		skip:     setOf("run"),
		other: setOf("install", "i", "add", "a", "remove", "rm", "update", "outdated", "link",
			"unlink", "pm", "test", "build", "create", "c", "init", "upgrade", "publish", "patch",
			"patch-commit", "audit", "info", "why", "exec", "repl"),
		runner:     "x",
		runnerSpec: bunx,
	}

	runtimes["deno"] = &runtime{
		name: "deno",
		values: setOf("c", "config", "import-map", "cert", "location", "seed", "ext", "L",
			"log-level", "preload", "import"),
		noScript: setOf("h", "help", "V", "version"),
		shorts:   setOf("A", "q", "r", "I", "P"),
		skip:     setOf("run"),
		other: setOf("serve", "task", "eval", "repl", "test", "bench", "compile", "install",
			"uninstall", "add", "remove", "fmt", "lint", "check", "info", "doc", "cache", "upgrade",
			"jupyter", "publish", "types", "coverage", "completions", "init", "clean", "outdated",
			"x", "approve-scripts", "lsp", "vendor", "bundle", "deploy"),
	}

	runtimes["tsx"] = &runtime{
		name:     "tsx",
		values:   setOf("tsconfig", "import", "r", "require", "C", "conditions", "include", "exclude", "ignore"),
		noScript: setOf("e", "eval", "p", "print", "h", "help", "v", "version", "test"),
		shorts:   setOf(),
		skip:     setOf("watch"),
	}
}

func (r *runtime) parse(argv []string, dir string) Command {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if i+1 >= len(argv) {
				return opaque(argv, "%s is given no script", r.name)
			}
			return r.script(argv, i+1, dir)
		case a == "-":
			return opaque(argv, "%s reads its script from stdin", r.name)
		case strings.HasPrefix(a, "-"):
			key, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			long := strings.HasPrefix(a, "--")
			switch {
			case r.noScript[key]:
				return opaque(argv, "%s runs no script with %s", r.name, a)
			case r.values[key]:
				if !hasValue {
					i++ // its value
				}
			case !long && !r.shorts[key]:
				return opaque(argv, "%s option %s is not known to herdr-pi", r.name, a)
			}
		case r.skip[a]:
			// bun run, deno run, tsx watch: options and the script follow.
		case r.runner != "" && a == r.runner:
			return r.runnerSpec.parse(argv, i+1)
		case r.other[a]:
			return opaque(argv, "%s %s runs no script", r.name, a)
		default:
			return r.script(argv, i, dir)
		}
	}
	return opaque(argv, "%s is given no script", r.name)
}

func (r *runtime) script(argv []string, i int, dir string) Command {
	return Command{
		Shape:   Script,
		Launch:  argv[: i+1 : i+1],
		Args:    argv[i+1:],
		Agent:   argv[i],
		Pi:      piScript(argv[i], dir),
		runtime: r.name,
	}
}

// shells run a command string or script of their own: nothing can be added
// to what they run from outside.
var shells = setOf("sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh")

func isShell(argv0 string) bool {
	return shells[strings.TrimSuffix(filepath.Base(argv0), ".exe")]
}
