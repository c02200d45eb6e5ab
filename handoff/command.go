package handoff

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// Launch is a command for a pane: what it runs, with which extra
// environment, where.
type Launch struct {
	Argv []string
	// Env holds KEY=VALUE pairs set for the command only, in order.
	Env []string
	Dir string
	// Title is a comment line in the command file saying what it is for.
	Title string
}

// Line is the launch as one shell command line: env assignments, then the
// quoted arguments.
func (l Launch) Line() string {
	var b strings.Builder
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(k + "=" + shellword.Quote(v) + " ")
	}
	for i, a := range l.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellword.Quote(a))
	}
	return b.String()
}

// StartedFileEnv names, for the herdr-pi wrapper a command file starts,
// the file to write its Pi's session file to once Pi says it started
// (CommandFile.Started). The wrapper takes it out of its agent's
// environment: a herdr-pi wrap nested in the agent is not the pane's.
const StartedFileEnv = "HERDR_PI_STARTED_FILE"

// script is the command file's text. It removes itself first (nothing is
// left behind once the pane runs it), then runs the launch in its
// directory. A launch that fails removes the watch file (telling whoever
// opened the pane) and keeps the pane open until Enter, so its error can
// be read; one that ends well ends the pane.
func (l Launch) script(self, watch, started string) string {
	var b strings.Builder
	b.WriteString("# " + termtext.Clean(l.Title) + "\n")
	b.WriteString("# Written by herdr-pi open for one run; it deletes itself when it starts.\n")
	b.WriteString("rm -f -- " + shellword.Quote(self) + "\n")
	if l.Dir != "" {
		b.WriteString("cd -- " + shellword.Quote(l.Dir) + " || { rm -f -- " + shellword.Quote(watch) +
			"; printf 'herdr-pi open: cannot enter %s; press Enter to close this pane.\\n' " + shellword.Quote(termtext.Clean(l.Dir)) + "; read -r _; exit 1; }\n")
	}
	b.WriteString("export " + StartedFileEnv + "=" + shellword.Quote(started) + "\n")
	b.WriteString(l.Line() + "\n")
	b.WriteString("status=$?\n")
	b.WriteString("if [ \"$status\" -ne 0 ]; then\n")
	b.WriteString("\trm -f -- " + shellword.Quote(watch) + "\n")
	b.WriteString("\tprintf '\\nherdr-pi open: the command ended with status %s; press Enter to close this pane.\\n' \"$status\"\n")
	b.WriteString("\tread -r _\n")
	b.WriteString("fi\n")
	b.WriteString("exit \"$status\"\n")
	return b.String()
}

// CommandFile is a launch written to a private file, and the short text to
// type into a pane to run it. Herdr truncates typed input near 4096 bytes
// (herdr-socket-api.md), so long command lines never travel as input.
type CommandFile struct {
	Path string
	// Watch is an empty file beside it that the script removes when the
	// launch fails: its absence tells the opener at once, where the pane
	// itself stays open to show the failure. The opener removes it when
	// it is done watching.
	Watch string
	// Started is where the herdr-pi wrapper in the pane writes the
	// session file its Pi named at session_start (StartedFileEnv). Unlike
	// the wrapper's status it outlives the wrapper: a pane closed right
	// after its Pi started still tells the opener so. It is not made
	// here; the opener's directory takes it along when it goes.
	Started string
	// Typed replaces the pane's shell with the script: when the launch
	// ends, so does the pane (and Herdr sends pane.exited).
	Typed string
}

// WriteCommandFile writes l as a 0600 script into dir, which must be a
// private (0700) directory the caller owns and removes.
func WriteCommandFile(dir string, l Launch) (CommandFile, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return CommandFile{}, err
	}
	path := filepath.Join(dir, "open-"+hex.EncodeToString(rnd[:])+".sh")
	watch := strings.TrimSuffix(path, ".sh") + ".watch"
	started := strings.TrimSuffix(path, ".sh") + ".started"
	w, err := os.OpenFile(watch, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return CommandFile{}, fmt.Errorf("writing the command file: %w", err)
	}
	w.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.Remove(watch)
		return CommandFile{}, fmt.Errorf("writing the command file: %w", err)
	}
	_, werr := f.WriteString(l.script(path, watch, started))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		os.Remove(watch)
		return CommandFile{}, fmt.Errorf("writing the command file %s: %w", path, werr)
	}
	return CommandFile{Path: path, Watch: watch, Started: started, Typed: "exec sh " + shellword.Quote(path)}, nil
}
