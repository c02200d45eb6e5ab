// Package probe holds the Pi extension that `herdr-pi wrap` injects into an
// interactive Pi (probe.js, embedded), and the Go side of it: writing it
// into the wrapper's private run directory, deciding from Pi's arguments
// whether Pi will run interactively (the only mode the probe is given to:
// print, JSON and RPC runs stay a pure passthrough), and how it goes in —
// through a launcher that registers it as a hidden extension (launcher.mjs,
// for Pi entry scripts it knows), else with -e.
//
// What the probe sends is decoded by bridge/control.
package probe

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/session"
	"github.com/herdr-pi/herdr-pi/settings"
)

//go:embed probe.js
var source []byte

// FileName is the probe's name in the run directory. The .mjs extension
// makes it an ES module to every loader Pi has used.
const FileName = "herdr-pi-probe.mjs"

// Instruction is the sentinel integration's system-prompt text (reference
// notifications-and-sentinel.md §15), around the one marker defined in
// pane/session; probe.js carries the same text.
const Instruction = "<herdr_integration>\n" +
	"When you cannot continue until you receive a response, end your final response with " + session.Marker + " on a line by itself.\n" +
	"Use the marker only when a response is required to continue. Do not use it for optional questions, suggestions, or completed work.\n" +
	"</herdr_integration>"

// Source is the probe's JavaScript.
func Source() []byte { return append([]byte(nil), source...) }

// Write puts the probe into dir (the wrapper's private 0700 run directory,
// made for this run) as a new 0600 file and returns its path.
func Write(dir string) (string, error) {
	if err := writeHandoff(dir); err != nil {
		return "", err
	}
	return writeFile(filepath.Join(dir, FileName), source)
}

// writeFile creates path for b, once ([control.WriteNewFile]): the
// directory is a fresh private one and nothing else writes there, so
// whatever is at path already is not ours, and the person hears so.
func writeFile(path string, b []byte) (string, error) {
	err := control.WriteNewFile(path, b)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("probe: %s is there already, put there by something other than this run: it is not loaded into Pi (remove it, and check who can write to %s)", path, filepath.Dir(path))
	}
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	return path, nil
}

// Interactive reports whether Pi run with args (Pi's own arguments: after
// the program, node's script or npx's package) and these terminals starts
// its interactive TUI; only then is the probe passed. See
// [settings.PiArgs.Interactive].
func Interactive(args []string, stdinTTY, stdoutTTY bool) bool {
	return settings.ParsePiArgs(args).Interactive(stdinTTY, stdoutTTY)
}

// Inject returns Pi's arguments with the probe loaded: `-e path` goes
// first, before anything (such as `--`) that could end Pi's options.
func Inject(path string, args []string) []string {
	return append([]string{"-e", path}, args...)
}
