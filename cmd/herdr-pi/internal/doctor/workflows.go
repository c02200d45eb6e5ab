package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/herdr-pi/herdr-pi/settings"
)

// piPackages are the package sources in Pi's settings.json ("npm:…",
// "git:…", paths, or objects with a source), as `pi install` records them
// (pi-agent.md §7.7). A missing or unreadable file is no packages.
func piPackages(agentDir string) []string {
	data, err := settings.ReadFile(filepath.Join(agentDir, "settings.json"), settings.JSON)
	if err != nil {
		return nil
	}
	var s struct {
		Packages []json.RawMessage `json:"packages"`
	}
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	var out []string
	for _, p := range s.Packages {
		var src string
		if json.Unmarshal(p, &src) != nil {
			var obj struct {
				Source string `json:"source"`
			}
			if json.Unmarshal(p, &obj) != nil {
				continue
			}
			src = obj.Source
		}
		out = append(out, src)
	}
	return out
}

// hasPackage reports whether a package source names the npm package (any
// version) or a checkout of it.
func hasPackage(sources []string, name string) bool {
	for _, s := range sources {
		s = strings.TrimPrefix(s, "npm:")
		if s == name || strings.HasPrefix(s, name+"@") || strings.Contains(s, "/"+name) {
			return true
		}
	}
	return false
}

// workflowsRow says which integration owns workflow panes: the workflow
// engine's Herdr actions come from herdr-pi when the owner Pi runs under
// `herdr-pi wrap` (its probe registers them, and hides @piewf/herdr's),
// from @piewf/herdr when a Pi runs without it.
func workflowsRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "workflow panes", Status: status, Detail: detail, Fix: fix}
	}
	pkgs := piPackages(d.Paths.PiAgentDir)
	engine := hasPackage(pkgs, "pi-extensible-workflows")
	upstream := hasPackage(pkgs, "@piewf/herdr")
	shown := d.Paths.Pretty(filepath.Join(d.Paths.PiAgentDir, "settings.json"))
	switch {
	case !engine && !upstream:
		return row(OK, fmt.Sprintf("the workflow engine (pi-extensible-workflows) is not among Pi's packages in %s; herdr-pi open still inspects runs it finds", shown), "")
	case !upstream:
		return row(OK, "herdr-pi owns workflow panes: a Pi started with 'herdr-pi wrap pi' offers herdr-pi's Herdr actions in /workflow, and herdr-pi open can take its live attempts over", "")
	}
	return row(Warn, fmt.Sprintf("both herdr-pi and @piewf/herdr can own workflow panes (%s lists @piewf/herdr): under 'herdr-pi wrap pi' herdr-pi's actions replace @piewf/herdr's, which it hides; a Pi started without herdr-pi uses @piewf/herdr's (it polls Herdr, and other panes cannot take its attempts over)", shown),
		"start workflow owners with 'herdr-pi wrap pi'; 'pi remove npm:@piewf/herdr' leaves one integration")
}

// workflowSettingsRow reads the workflow engine's global settings file as
// the owner's probe does when a run starts: whether fully inspectable mode
// is on, or what in the file keeps it from saying (text that is not JSON,
// a key the engine does not know, the obsolete extensions.herdr shape),
// naming the file and the key. Such a file fails every run the engine
// starts, so it is a failure here too.
func workflowSettingsRow(d Input) Row {
	file := settings.WorkflowSettingsFile(d.Paths.PiAgentDir)
	shown := d.Paths.Pretty(file)
	w, err := settings.LoadWorkflows(file)
	const until = "; until then fully inspectable mode is off and the engine refuses to start runs"
	var fe *settings.FileError
	switch {
	case errors.As(err, &fe) && fe.Line == 0:
		// Not read at all: nothing in it to edit yet.
		return Row{Name: "workflow settings", Status: Fail, Detail: err.Error(),
			Fix: unreadableFix(err, d.Paths, file, "JSON", piDirChosenBy(d.Paths)) + until}
	case err != nil:
		return Row{Name: "workflow settings", Status: Fail, Detail: err.Error(),
			Fix: fmt.Sprintf("edit %s as the message says", shown) + until}
	case w.FullyInspectable:
		return Row{Name: "workflow settings", Status: OK, Detail: fmt.Sprintf("fully inspectable mode is on (%s): under 'herdr-pi wrap pi' every workflow agent runs in a tab of its run's Herdr workspace", shown)}
	}
	why := shown + " sets no extensionSettings.herdr.enableFullyInspectableMode"
	if link, target := settings.BrokenLink(file); link != "" {
		// The engine and the probe read it as missing, and so does
		// LoadWorkflows; the person who made the link meant otherwise.
		return Row{Name: "workflow settings", Status: Warn,
			Detail: fmt.Sprintf("fully inspectable mode is off: %s is a symlink to %s, which does not exist, so the engine reads no settings file", d.Paths.Pretty(link), target),
			Fix:    brokenLinkFix(d.Paths, file, link, target, piDirChosenBy(d.Paths))}
	}
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		why = shown + " does not exist"
	}
	return Row{Name: "workflow settings", Status: OK, Detail: fmt.Sprintf("fully inspectable mode is off (%s)", why)}
}
