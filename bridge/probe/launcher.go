package probe

import (
	"bytes"
	_ "embed"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
)

// Pi lists every extension loaded from a path (-e, settings, discovery) in
// the [Extensions] section of its start-up header; only built-in ones and
// inline ones its SDK entry registers with `hidden: true` stay out of it
// (Pi 1.6.0 resource-loader and interactive-mode). The launcher starts Pi
// through that entry, so a wrapped Pi's start screen is bare Pi's.

//go:embed launcher.mjs
var launcherSource []byte

// LauncherName is the launcher's name in the run directory, beside the
// probe (FileName), which it imports.
const LauncherName = "herdr-pi-launch.mjs"

// WriteLauncher puts the launcher into dir (the run directory the probe was
// written to) as a 0600 file and returns its path.
func WriteLauncher(dir string) (string, error) {
	return writeFile(filepath.Join(dir, LauncherName), launcherSource)
}

// LauncherArgs are node's arguments after its own options: the launcher,
// Pi's entry script as the command named it, and Pi's arguments.
func LauncherArgs(launcher, entry string, args []string) []string {
	return append([]string{launcher, entry}, args...)
}

// The entry files the launcher stands in for, as Pi 1.x publishes them. The
// launcher repeats what they do before calling main, so any other content
// (Pi 0.73.1's cli.js, a fork, a later set-up step) gets -e instead.
var (
	// dist/bundle/cli.js, which loads cli-runtime.js.
	bundleCLI = []byte("#!/usr/bin/env node\n" +
		"import { createRequire, enableCompileCache } from \"node:module\";\n\n" +
		"enableCompileCache();\n" +
		"createRequire(import.meta.url)(\"./cli-runtime.js\");\n")
	// cli-runtime.js: the bundle's chunks, its whole set-up, then main.
	bundleRuntime = lazyre.New(`^` + regexp.QuoteMeta("#!/usr/bin/env node\n"+
		`import { createRequire as __piCreateRequire } from "node:module"; const require = __piCreateRequire(import.meta.url);`+"\n") +
		`import\{configureHttpDispatcher,main\}from"\./chunks/chunk-[A-Z0-9]+\.js";` +
		`(?:import"\./chunks/chunk-[A-Z0-9]+\.js";|import\{APP_NAME\}from"\./chunks/chunk-[A-Z0-9]+\.js";)*` +
		regexp.QuoteMeta(`function setupCli(){process.title=APP_NAME,process.env.PI_CODING_AGENT="true",process.env.AI_AGENT="pi",process.emitWarning=(()=>{}),configureHttpDispatcher()}setupCli();main(process.argv.slice(2));`) +
		`\n?$`)
	// dist/cli.js, without its source map comment.
	modulesCLI = []byte("#!/usr/bin/env node\n" +
		"import { setupCli } from \"./cli/setup.js\";\n" +
		"import { main } from \"./main.js\";\n" +
		"setupCli();\n" +
		"main(process.argv.slice(2));\n")
	sourceMapComment = lazyre.New(`//# sourceMappingURL=\S*\n?$`)
)

// Launchable reports whether the launcher can stand in for Pi's entry
// script at entry (symlinks allowed, as `.bin/pi` is): it is one of the
// entry files above, byte for byte, with the files the launcher imports
// beside it.
func Launchable(entry string) bool {
	real, err := filepath.EvalSymlinks(entry)
	if err != nil || filepath.Base(real) != "cli.js" {
		return false
	}
	dir := filepath.Dir(real)
	cli, ok := readSmall(real, 4<<10)
	if !ok {
		return false
	}
	if bytes.Equal(cli, bundleCLI) {
		runtime, ok := readSmall(filepath.Join(dir, "cli-runtime.js"), 64<<10)
		return ok && bundleRuntime().Match(runtime) && regular(filepath.Join(dir, "index.js"))
	}
	return bytes.Equal(sourceMapComment().ReplaceAll(cli, nil), modulesCLI) &&
		regular(filepath.Join(dir, "cli", "setup.js")) && regular(filepath.Join(dir, "main.js"))
}

func regular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// readSmall reads a regular file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, bool) {
	if !regular(path) {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(b)) > limit {
		return nil, false
	}
	return b, true
}
