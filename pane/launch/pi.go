package launch

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// piPackages are the npm packages Pi is published as (pi-agent.md §0).
var piPackages = map[string]bool{
	"@earendil-works/pi-coding-agent": true,
	"@mariozechner/pi-coding-agent":   true,
}

// piName: a program or script named like Pi's command.
func piName(path string) bool {
	switch filepath.Base(path) {
	case "pi", "pi.js", "pi.mjs":
		return true
	}
	return false
}

// piPackage: an npm package spec (name, optionally @version or @tag) of
// Pi, or the bare command name a runner resolves to a local Pi.
func piPackage(spec string) bool {
	if spec == "pi" {
		return true
	}
	name := spec
	if at := strings.LastIndexByte(spec, '@'); at > 0 {
		name = spec[:at]
	}
	return piPackages[name]
}

// piScript: path (relative to dir) names Pi, or a file inside one of Pi's
// packages — the nearest package.json above it, after following symlinks,
// is Pi's. A dev checkout's …/dist/cli.js is recognised the same way.
func piScript(path, dir string) bool {
	if piName(path) {
		return true
	}
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	if piName(real) {
		return true
	}
	// A few levels are enough for dist/bundle/cli.js and keep a stray
	// path from walking the whole tree.
	for d, i := filepath.Dir(real), 0; i < 6; d, i = filepath.Dir(d), i+1 {
		if name, ok := packageName(filepath.Join(d, "package.json")); ok {
			return piPackages[name]
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return false
}

// packageName reads the "name" of a package.json; ok is false when there
// is no such regular file. It reads at most 64 KiB: a package manifest is
// small, and a FIFO or device must not hang the wrapper.
func packageName(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", true
	}
	var m struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Name, true
}
