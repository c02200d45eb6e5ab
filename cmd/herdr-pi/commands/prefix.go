package commands

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/settings"
)

// maxNamedOthers bounds how many passed-over runs the note names.
const maxNamedOthers = 3

// prefixNote is open's one line (without its "herdr-pi open: ") about a
// prefix that took a run of the caller's project over runs of other
// projects (store.PassedOver): which run it took, how many others start
// with it, and what names each of them instead. Every name in it comes
// from the store, so each is cleaned: no control character, and so no
// second line, reaches the terminal.
func prefixNote(paths settings.Paths, prefix, takenRef, takenWorkflow string, others []handoff.OtherMatch) string {
	taken := render.Clean(takenRef)
	if takenWorkflow != "" {
		taken += " (" + render.Clean(takenWorkflow) + ")"
	}
	named := make([]string, 0, min(len(others), maxNamedOthers))
	for _, o := range others[:min(len(others), maxNamedOthers)] {
		var about []string
		if o.Workflow != "" {
			about = append(about, render.Clean(o.Workflow))
		}
		if o.Cwd != "" {
			about = append(about, render.Clean(paths.Pretty(o.Cwd)))
		} else {
			about = append(about, "project "+render.Clean(o.Project))
		}
		named = append(named, render.Clean(o.Ref)+" ("+strings.Join(about, ", ")+")")
	}
	list := strings.Join(named, ", ")
	if more := len(others) - len(named); more > 0 {
		list += fmt.Sprintf(" and %d more (herdr-pi open --list shows them)", more)
	}
	q := render.Clean(strconv.Quote(prefix))
	also := fmt.Sprintf("%d runs of other projects start with %s too", len(others), q)
	if len(others) == 1 {
		also = fmt.Sprintf("1 run of another project starts with %s too", q)
	}
	return fmt.Sprintf("%s named run %s of this project, whose runs are searched first; %s: %s; "+
		"give one of those, or a full id, to name another", q, taken, also, list)
}

// closeRefusesPassedOver is why close refuses a prefix its caller's
// project would settle: see closeRun.
const closeRefusesPassedOver = "close takes a prefix only when it names one run in the whole store, " +
	"whichever project you are in: it closes panes, so a prefix must not mean another run from another directory"
