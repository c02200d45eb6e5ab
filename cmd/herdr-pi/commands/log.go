package commands

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/settings"
)

// logger is the diagnostic log (internal/logfile): private, shared by every
// herdr-pi process, never the terminal.
type logger = logfile.Logger

// openLog opens the log in the state directory. level is the config's
// [log] level ("info" or "debug"); HERDR_PI_LOG=debug raises it and
// HERDR_PI_LOG=off turns the log off.
func openLog(paths settings.Paths, env settings.Env, level, tag string) *logger {
	v := env.Get("HERDR_PI_LOG")
	if strings.EqualFold(v, "off") {
		return logfile.Open(logfile.Options{Tag: tag}) // no directory: drops every line
	}
	if logDir(paths.StateDir) != nil {
		// The log's directory follows the runtime directory's rule: one
		// that is not ours, or that others may enter, is refused, never
		// repaired behind the person's back. The log is off then;
		// doctor's runtime section says why and how to fix it.
		return logfile.Open(logfile.Options{Tag: tag})
	}
	return logfile.Open(logfile.Options{Dir: paths.StateDir, Tag: tag, Debug: level == "debug" || strings.EqualFold(v, "debug")})
}

// logDir makes the log's directory as the runtime directory is made
// (control.EnsurePrivateDir: created 0700, then checked to be ours and
// closed to others), its missing parents 0700 too.
func logDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	return control.EnsurePrivateDir(dir)
}
