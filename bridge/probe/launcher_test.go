package probe

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// realRuntime is the shape of Pi 1.6.0's dist/bundle/cli-runtime.js (the
// chunk list shortened).
const realRuntime = "#!/usr/bin/env node\n" +
	`import { createRequire as __piCreateRequire } from "node:module"; const require = __piCreateRequire(import.meta.url);` + "\n" +
	`import{configureHttpDispatcher,main}from"./chunks/chunk-KSDI5FD4.js";import"./chunks/chunk-XGGZYFNG.js";import{APP_NAME}from"./chunks/chunk-36QC74V4.js";import"./chunks/chunk-JXWJOIH4.js";` +
	`function setupCli(){process.title=APP_NAME,process.env.PI_CODING_AGENT="true",process.env.AI_AGENT="pi",process.emitWarning=(()=>{}),configureHttpDispatcher()}setupCli();main(process.argv.slice(2));` + "\n"

// fakePi lays out a Pi package under root with the given files (relative
// to the package) and a node_modules/.bin/pi link to bin; it returns the
// link.
func fakePi(t *testing.T, root string, files map[string]string, bin string) string {
	t.Helper()
	pkg := filepath.Join(root, "node_modules", "@earendil-works", "pi-coding-agent")
	files["package.json"] = `{"name": "@earendil-works/pi-coding-agent", "type": "module"}`
	for name, body := range files {
		p := filepath.Join(pkg, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "node_modules", ".bin", "pi")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, filepath.FromSlash(bin)), link); err != nil {
		t.Fatal(err)
	}
	return link
}

func TestLaunchable(t *testing.T) {
	modules := string(modulesCLI) + "//# sourceMappingURL=cli.js.map"
	tests := []struct {
		name  string
		files map[string]string
		bin   string
		want  bool
	}{
		{"bundle", map[string]string{"dist/bundle/cli.js": string(bundleCLI), "dist/bundle/cli-runtime.js": realRuntime, "dist/bundle/index.js": ""}, "dist/bundle/cli.js", true},
		{"modules", map[string]string{"dist/cli.js": modules, "dist/cli/setup.js": "", "dist/main.js": ""}, "dist/cli.js", true},
		{"bundle with another set-up step", map[string]string{"dist/bundle/cli.js": string(bundleCLI), "dist/bundle/index.js": "",
			"dist/bundle/cli-runtime.js": strings.Replace(realRuntime, "configureHttpDispatcher()}", "configureHttpDispatcher(),more()}", 1)}, "dist/bundle/cli.js", false},
		{"bundle with code before", map[string]string{"dist/bundle/cli.js": string(bundleCLI), "dist/bundle/index.js": "",
			"dist/bundle/cli-runtime.js": "globalThis.x=1;\n" + realRuntime}, "dist/bundle/cli.js", false},
		{"bundle without index.js", map[string]string{"dist/bundle/cli.js": string(bundleCLI), "dist/bundle/cli-runtime.js": realRuntime}, "dist/bundle/cli.js", false},
		{"another cli.js (Pi 0.73.1)", map[string]string{"dist/cli.js": "#!/usr/bin/env node\nimport { main } from \"./main.js\";\nprocess.title = APP_NAME;\nmain(process.argv.slice(2));\n",
			"dist/cli/setup.js": "", "dist/main.js": ""}, "dist/cli.js", false},
		{"modules without setup.js", map[string]string{"dist/cli.js": modules, "dist/main.js": ""}, "dist/cli.js", false},
		{"not a cli.js", map[string]string{"dist/pi.js": string(bundleCLI)}, "dist/pi.js", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := fakePi(t, t.TempDir(), tt.files, tt.bin)
			if got := Launchable(link); got != tt.want {
				t.Fatalf("Launchable = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("a FIFO", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "cli.js"), 0o600); err != nil {
			t.Fatal(err)
		}
		if Launchable(filepath.Join(dir, "cli.js")) {
			t.Fatal("a FIFO is launchable")
		}
	})
	if Launchable(filepath.Join(t.TempDir(), "missing", "cli.js")) {
		t.Fatal("a missing file is launchable")
	}
}

// The installed Pi 1.6.0 is launchable, by its bin link and by its
// unbundled cli.js; Pi 0.73.1 is not (it gets -e).
func TestLaunchableRealPi(t *testing.T) {
	cur := pitest.Current(t)
	if !Launchable(cur.Bin) {
		t.Fatalf("Pi %s at %s is not launchable", cur.Name, cur.Bin)
	}
	real, _ := filepath.EvalSymlinks(cur.Bin)
	if unbundled := filepath.Join(filepath.Dir(real), "..", "cli.js"); !Launchable(unbundled) {
		t.Fatalf("%s is not launchable", unbundled)
	}
	if old := pitest.Old(t); Launchable(old.Bin) {
		t.Fatalf("Pi %s at %s is launchable", old.Name, old.Bin)
	}
}

// launched is what the fake Pi's main saw.
type launched struct {
	Args      []string
	Argv1     string
	Title     string
	Agent     string
	SetupRan  bool
	Factories []struct {
		Name, Factory string
		Hidden        bool
	}
	FromEntry bool
}

// report is the body of a fake main: it prints what it was given.
const report = `export function main(args, options) {
	const f = (options?.extensionFactories ?? []).map((x) => ({ Name: x.name, Hidden: x.hidden === true, Factory: x.factory?.name ?? "" }));
	console.log(JSON.stringify({ Args: args, Argv1: process.argv[1], Title: process.title, Agent: process.env.PI_CODING_AGENT ?? "",
		SetupRan: globalThis.setupRan === true, Factories: f, FromEntry: globalThis.fromEntry === true }));
}
`

func runLauncher(t *testing.T, entry string, args ...string) launched {
	t.Helper()
	dir := t.TempDir()
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	l, err := WriteLauncher(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node(t), LauncherArgs(l, entry, args)...)
	cmd.Env = append(os.Environ(), "PI_CODING_AGENT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("launcher: %v\n%s", err, out)
	}
	var got launched
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("launcher printed %q: %v", out, err)
	}
	return got
}

// The launcher calls Pi's main as Pi's entry would — same arguments, same
// argv[1], Pi's set-up done — with the probe as a hidden inline extension.
func TestLauncherStartsPiThroughItsEntry(t *testing.T) {
	hidden := []struct {
		Name, Factory string
		Hidden        bool
	}{{"herdr-pi", "herdrPiProbe", true}}
	t.Run("bundle", func(t *testing.T) {
		link := fakePi(t, t.TempDir(), map[string]string{
			"dist/bundle/cli.js": string(bundleCLI), "dist/bundle/cli-runtime.js": realRuntime,
			"dist/bundle/index.js": report,
		}, "dist/bundle/cli.js")
		got := runLauncher(t, link, "--model", "m", "-c")
		if !slices.Equal(got.Args, []string{"--model", "m", "-c"}) || got.Argv1 != link || got.Title != "pi" || got.Agent != "true" ||
			!slices.Equal(got.Factories, hidden) {
			t.Fatalf("main saw %+v", got)
		}
	})
	t.Run("modules", func(t *testing.T) {
		link := fakePi(t, t.TempDir(), map[string]string{
			"dist/cli.js": string(modulesCLI), "dist/cli/setup.js": "export function setupCli() { globalThis.setupRan = true; }\n",
			"dist/main.js": report,
		}, "dist/cli.js")
		got := runLauncher(t, link, "hello")
		if !slices.Equal(got.Args, []string{"hello"}) || got.Argv1 != link || !got.SetupRan || !slices.Equal(got.Factories, hidden) {
			t.Fatalf("main saw %+v", got)
		}
	})
	// Should Pi's entry not be what it looked like, Pi's own entry runs
	// with the probe passed by -e: Pi always starts.
	t.Run("fallback", func(t *testing.T) {
		link := fakePi(t, t.TempDir(), map[string]string{
			"dist/bundle/cli.js":         "globalThis.fromEntry = true;\nimport { main } from \"./cli-runtime.js\";\nmain(process.argv.slice(2));\n",
			"dist/bundle/cli-runtime.js": report,
			"dist/bundle/index.js":       "export const VERSION = \"9\";\n", // no main
		}, "dist/bundle/cli.js")
		got := runLauncher(t, link, "-c")
		if len(got.Args) != 3 || got.Args[0] != "-e" || filepath.Base(got.Args[1]) != FileName || got.Args[2] != "-c" ||
			got.Argv1 != link || len(got.Factories) != 0 || !got.FromEntry {
			t.Fatalf("fallback: main saw %+v", got)
		}
	})
}
