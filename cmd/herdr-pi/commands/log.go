package commands

import (
	"strings"

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
	return logfile.Open(logfile.Options{Dir: paths.StateDir, Tag: tag, Debug: level == "debug" || strings.EqualFold(v, "debug")})
}
