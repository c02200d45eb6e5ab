package commands

import (
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/pane/launch"
	agentsignals "github.com/herdr-pi/herdr-pi/pane/signals"
)

// resumeArgv is the command that resumes Pi's session file under
// herdr-pi: herdr-pi wrap, the user's --agent and --no-probe, the part of their command
// that starts Pi, and --session with the file (Pi's other arguments are
// left out, as Pi's own resume hint leaves them out). nil without a file.
func resumeArgv(opts *wrapOptions, c launch.Command, file string) []string {
	if file == "" {
		return nil
	}
	argv := wrapSelf(opts)
	start := c.Launch
	if c.Shape == launch.Opaque || len(start) == 0 {
		start = []string{"pi"}
	}
	if strings.HasPrefix(start[0], "-") {
		argv = append(argv, "--")
	}
	argv = append(argv, start...)
	return append(argv, "--session", file)
}

// herdrStatus is the signals' answer to `status` with what the Presence
// knows beside the sentence — how often it re-asserted the pane — what
// each notification channel did, and the names notifications give the
// pane.
type herdrStatus struct {
	*agentsignals.Signals
	presence *herdr.Presence
	notes    wrapNotifier
	names    notifyNames
}

func (s herdrStatus) Status() control.Status {
	st := s.Signals.Status()
	st.Label, st.Cwd = s.names.Label, s.names.Cwd
	st.HerdrReasserts, _ = s.presence.Reasserts()
	st.Notifications = s.notes.status()
	return st
}
