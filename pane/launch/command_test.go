package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fakePiPackage lays out an installed Pi package under root, as npm does:
// node_modules/@earendil-works/pi-coding-agent/{package.json,dist/cli.js,
// dist/bundle/cli.js} and node_modules/.bin/pi → the bundle's cli.js. It
// returns the package directory.
func fakePiPackage(t *testing.T, root, name string) string {
	t.Helper()
	pkg := filepath.Join(root, "node_modules", filepath.FromSlash(name))
	for _, d := range []string{filepath.Join(pkg, "dist", "bundle"), filepath.Join(root, "node_modules", ".bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pkg, "package.json"), `{"name": "`+name+`", "version": "1.6.0"}`)
	write(filepath.Join(pkg, "dist", "cli.js"), "#!/usr/bin/env node\n")
	write(filepath.Join(pkg, "dist", "bundle", "cli.js"), "#!/usr/bin/env node\n")
	rel, _ := filepath.Rel(filepath.Join(root, "node_modules", ".bin"), filepath.Join(pkg, "dist", "bundle", "cli.js"))
	if err := os.Symlink(rel, filepath.Join(root, "node_modules", ".bin", "pi-dev")); err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestParse(t *testing.T) {
	root := t.TempDir()
	pkg := fakePiPackage(t, root, "@earendil-works/pi-coding-agent")
	old := fakePiPackage(t, filepath.Join(root, "old"), "@mariozechner/pi-coding-agent")
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(filepath.Join(other, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "package.json"), []byte(`{"name":"cowsay"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(pkg, "dist", "cli.js")
	bundle := filepath.Join(pkg, "dist", "bundle", "cli.js")
	oldCli := filepath.Join(old, "dist", "cli.js")
	otherCli := filepath.Join(other, "dist", "cli.js")
	devBin := filepath.Join(root, "node_modules", ".bin", "pi-dev")
	// A symlink with another name to a pi.mjs that sits in no package: the
	// name the link resolves to is Pi's.
	loose := filepath.Join(root, "loose")
	if err := os.MkdirAll(filepath.Join(loose, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(loose, "pi.mjs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	agentLink := filepath.Join(loose, "bin", "agent")
	if err := os.Symlink("../pi.mjs", agentLink); err != nil {
		t.Fatal(err)
	}
	// A FIFO called package.json between a script and Pi's package.json is
	// no manifest: reading it would hang the wrapper, so it is passed over
	// and Pi's own manifest above decides.
	fifoDir := filepath.Join(pkg, "dist", "fifo")
	if err := os.MkdirAll(fifoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "package.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifoCli := filepath.Join(fifoDir, "cli.js")
	if err := os.WriteFile(fifoCli, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		argv   string // words separated by "|"
		dir    string
		shape  Shape
		launch int // len(Launch); Args is the rest of argv
		pi     bool
	}{
		// The agent's own program.
		{argv: "pi", shape: Direct, launch: 1, pi: true},
		{argv: "pi|--model|m|-c", shape: Direct, launch: 1, pi: true},
		{argv: "/opt/pi/bin/pi.js|-c", shape: Direct, launch: 1, pi: true},
		{argv: "claude|--resume", shape: Direct, launch: 1},
		{argv: "./bin/pi-dev|--verbose", shape: Direct, launch: 1},
		{argv: bundle + "|-c", shape: Direct, launch: 1, pi: true},
		{argv: devBin + "|-c", shape: Direct, launch: 1, pi: true}, // a symlink into Pi's package
		{argv: "node_modules/.bin/pi-dev", dir: root, shape: Direct, launch: 1, pi: true},
		// A bare name runs from PATH, not from the command's directory:
		// a file of that name there says nothing.
		{argv: "cli.js", dir: filepath.Join(pkg, "dist"), shape: Direct, launch: 1},

		// A runtime running a script: Pi's arguments start after the script.
		{argv: "node|" + cli, shape: Script, launch: 2, pi: true},
		{argv: "node|" + cli + "|--model|m", shape: Script, launch: 2, pi: true},
		{argv: "/usr/local/bin/node|--inspect|" + cli + "|-c", shape: Script, launch: 3, pi: true},
		{argv: "node|--inspect-brk=9230|--enable-source-maps|" + bundle, shape: Script, launch: 4, pi: true},
		{argv: "node|-r|./trace.js|" + cli + "|-c", shape: Script, launch: 4, pi: true},
		{argv: "node|--require|./trace.js|--import|tsx|" + cli, shape: Script, launch: 6, pi: true},
		{argv: "node|--import=tsx|-C|dev|" + cli, shape: Script, launch: 5, pi: true},
		{argv: "node|--max-old-space-size|4096|" + cli, shape: Script, launch: 4, pi: true},
		{argv: "node|--|" + cli + "|-e|x.ts", shape: Script, launch: 3, pi: true},
		{argv: "nodejs|" + oldCli, shape: Script, launch: 2, pi: true},
		{argv: "node|dist/cli.js|-c", dir: pkg, shape: Script, launch: 2, pi: true},
		{argv: "node|node_modules/.bin/pi-dev", dir: root, shape: Script, launch: 2, pi: true},
		{argv: "node|" + otherCli, shape: Script, launch: 2},
		{argv: "node|./server.js|--port|1", shape: Script, launch: 2},
		{argv: "node|/opt/pi/pi.mjs", shape: Script, launch: 2, pi: true},
		{argv: "node|" + agentLink, shape: Script, launch: 2, pi: true},
		{argv: "node|" + fifoCli, shape: Script, launch: 2, pi: true},
		{argv: "bun|" + cli + "|-c", shape: Script, launch: 2, pi: true},
		{argv: "bun|run|--smol|" + cli + "|-c", shape: Script, launch: 4, pi: true},
		{argv: "bun|--bun|-r|./p.ts|" + cli, shape: Script, launch: 5, pi: true},
		{argv: "deno|run|-A|--config|deno.json|" + cli + "|-c", shape: Script, launch: 6, pi: true},
		{argv: "deno|--allow-read=/x|-A|" + cli, shape: Script, launch: 4, pi: true},
		{argv: "tsx|watch|--tsconfig|t.json|/src/pi.mjs|-c", shape: Script, launch: 5, pi: true},

		// A runner running a package: Pi's arguments start after the package.
		{argv: "npx|pi", shape: Package, launch: 2, pi: true},
		{argv: "npx|pi|--model|m", shape: Package, launch: 2, pi: true},
		{argv: "npx|-y|pi|-c", shape: Package, launch: 3, pi: true},
		{argv: "npx|--yes|@earendil-works/pi-coding-agent@1.6.0|-c", shape: Package, launch: 3, pi: true},
		{argv: "npx|@mariozechner/pi-coding-agent", shape: Package, launch: 2, pi: true},
		{argv: "npx|-p|@earendil-works/pi-coding-agent|pi|-c", shape: Package, launch: 4, pi: true},
		{argv: "npx|--package=@earendil-works/pi-coding-agent|pi", shape: Package, launch: 3, pi: true},
		{argv: "npx|--registry|http://127.0.0.1:9|pi", shape: Package, launch: 4, pi: true},
		{argv: "npx|-w|ws|--offline|pi|-c", shape: Package, launch: 5, pi: true},
		{argv: "npx|-d|pi", shape: Package, launch: 3, pi: true},       // -d is --loglevel info
		{argv: "npx|-w=ws|pi|-c", shape: Package, launch: 3, pi: true}, // -w=ws is --workspace ws: pi is not its value
		{argv: "npx|--cache=/tmp/c|--prefer-offline|pi", shape: Package, launch: 4, pi: true},
		{argv: "npx|--|pi|-c", shape: Package, launch: 3, pi: true},
		{argv: "npx|cowsay|hi", shape: Package, launch: 2},
		{argv: "npx|pi@2.0.0", shape: Package, launch: 2}, // the npm package called pi is not Pi
		{argv: "bunx|pi|-c", shape: Package, launch: 2, pi: true},
		{argv: "bunx|--bun|-p|@earendil-works/pi-coding-agent|pi", shape: Package, launch: 5, pi: true},
		{argv: "bun|x|pi|-c", shape: Package, launch: 3, pi: true},
		{argv: "pnpm|dlx|@earendil-works/pi-coding-agent|--model|m", shape: Package, launch: 3, pi: true},
		{argv: "pnpm|dlx|--package|@earendil-works/pi-coding-agent|pi", shape: Package, launch: 5, pi: true},
		{argv: "pnpx|pi", shape: Package, launch: 2, pi: true},
		{argv: "pnpm|exec|pi|-c", shape: Package, launch: 3, pi: true},
		{argv: "npm|exec|--|pi|-c", shape: Package, launch: 4, pi: true},
		{argv: "npm|x|--package=@earendil-works/pi-coding-agent|--|pi", shape: Package, launch: 5, pi: true},
		{argv: "yarn|dlx|-p|@earendil-works/pi-coding-agent|pi|-c", shape: Package, launch: 5, pi: true},
		{argv: "yarn|exec|pi", shape: Package, launch: 3, pi: true},

		// env in front: the command after it decides.
		{argv: "env|FOO=1|pi|-c", shape: Direct, launch: 3, pi: true},
		{argv: "env|-u|HOME|-i|node|--inspect|" + cli + "|-c", shape: Script, launch: 7, pi: true},
		{argv: "/usr/bin/env|--|npx|pi", shape: Package, launch: 4, pi: true},
		{argv: "env|-C|" + pkg + "|node|dist/cli.js", shape: Script, launch: 5, pi: true},
		{argv: "env|--chdir=" + pkg + "|node|dist/cli.js", shape: Script, launch: 4, pi: true},

		// Not understood: nothing may be added.
		{argv: "node", shape: Opaque},
		{argv: "node|-e|require('x')", shape: Opaque},
		{argv: "node|-pe|1", shape: Opaque},
		{argv: "node|--print|1", shape: Opaque},
		{argv: "node|-", shape: Opaque},
		{argv: "node|--test|" + cli, shape: Opaque},
		{argv: "node|--inspect", shape: Opaque},
		{argv: "node|-r", shape: Opaque},
		{argv: "node|--", shape: Opaque}, // -- and then no script
		{argv: "bun|install", shape: Opaque},
		{argv: "deno|eval|1", shape: Opaque},
		{argv: "npx", shape: Opaque},
		{argv: "npx|-c|pi -c", shape: Opaque},
		{argv: "npx|--call=pi", shape: Opaque},
		{argv: "npx|--no|pi", shape: Opaque},                 // --no is --no-yes, which takes pi as its value
		{argv: "npx|--no-update-notifier|pi", shape: Opaque}, // so does any --no-x
		{argv: "npm|exec|pi|-c", shape: Opaque},              // npm would read -c as its own
		{argv: "npm|start", shape: Opaque},
		{argv: "pnpm|pi", shape: Opaque},
		{argv: "pnpm|dlx|-c|pi", shape: Opaque},
		{argv: "yarn|pi", shape: Opaque},
		{argv: "sh|-c|pi -c", shape: Opaque},
		{argv: "bash|./run-pi.sh", shape: Opaque},
		{argv: "env|-S|pi -c", shape: Opaque},
		{argv: "env|FOO=1", shape: Opaque},
		{argv: "env|FOO=1|node|-e|1", shape: Opaque},
	}
	for _, tt := range tests {
		argv := strings.Split(tt.argv, "|")
		name := strings.ReplaceAll(strings.ReplaceAll(tt.argv, root, "<tmp>"), "|", " ")
		t.Run(name, func(t *testing.T) {
			c := Parse(argv, tt.dir)
			if c.Shape != tt.shape || c.Pi != tt.pi {
				t.Fatalf("shape %v pi %v (why %q), want %v pi %v", c.Shape, c.Pi, c.Why, tt.shape, tt.pi)
			}
			if c.Shape == Opaque {
				if c.Why == "" || !slices.Equal(c.Launch, argv) || !slices.Equal(c.Args, argv[1:]) {
					t.Fatalf("opaque: launch %q args %q why %q", c.Launch, c.Args, c.Why)
				}
				if _, err := c.With([]string{"-e", "p"}); err == nil {
					t.Fatal("With on an opaque command must fail")
				}
				return
			}
			if !slices.Equal(c.Launch, argv[:tt.launch]) || !slices.Equal(c.Args, argv[tt.launch:]) {
				t.Fatalf("launch %q args %q, want %q | %q", c.Launch, c.Args, argv[:tt.launch], argv[tt.launch:])
			}
			if c.Agent != argv[tt.launch-1] {
				t.Fatalf("agent %q, want %q", c.Agent, argv[tt.launch-1])
			}
		})
	}
}

// With puts the added arguments where the agent reads them and never
// writes into the caller's argv.
func TestWith(t *testing.T) {
	argv := []string{"node", "--inspect", "/p/pi.js", "--model", "m"}
	orig := slices.Clone(argv)
	c := Parse(argv, "")
	got, err := c.With(append([]string{"-e", "/run/probe.mjs"}, c.Args...))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node", "--inspect", "/p/pi.js", "-e", "/run/probe.mjs", "--model", "m"}
	if !slices.Equal(got, want) {
		t.Fatalf("With: %q, want %q", got, want)
	}
	if !slices.Equal(argv, orig) {
		t.Fatalf("With changed the caller's argv: %q", argv)
	}
	_, err = Parse([]string{"node", "-e", "x"}, "").With(nil)
	if err == nil || !strings.Contains(err.Error(), "node runs no script with -e") {
		t.Fatalf("opaque With: %v", err)
	}
}

func TestNodeEntry(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "pi"), []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/nonexistent:" + bin}
	tests := []struct {
		argv, node, script string // "|"-separated; node "" means none
	}{
		{"pi|-c", "node", filepath.Join(bin, "pi")}, // found on PATH
		{"env|A=1|/opt/bin/pi", "env|A=1|node", "/opt/bin/pi"},
		{"./bin/pi-dev", "node", "/work/proj/bin/pi-dev"}, // from the command's directory
		{"node|--inspect|/p/cli.js|-c", "node|--inspect", "/p/cli.js"},
		{"/usr/bin/nodejs|dist/cli.js", "/usr/bin/nodejs", "/work/proj/dist/cli.js"},
		{"pi-missing", "", ""},
		{"bun|/p/cli.js", "", ""},
		{"npx|pi", "", ""},
		{"node|-e|x", "", ""},
	}
	for _, tt := range tests {
		node, script, ok := Parse(strings.Split(tt.argv, "|"), "").NodeEntry(env, "/work/proj")
		if ok != (tt.node != "") || strings.Join(node, "|") != tt.node || script != tt.script {
			t.Errorf("%s: node %q script %q ok %v; want %q %q", tt.argv, node, script, ok, tt.node, tt.script)
		}
	}
}
