package doctor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/settings"
)

// piLoads is what Pi's settings.json says Pi loads: package sources
// ("npm:…", "git:…", paths, or objects with a source), as `pi install`
// records them (pi-agent.md §7.7), the
// extensions a package entry narrows itself to, and the settings' own
// extension paths.
type piLoads struct {
	packages, filters, extensions []string
}

func readPiLoads(agentDir string) piLoads {
	var out piLoads
	data, err := settings.ReadFile(filepath.Join(agentDir, "settings.json"), settings.JSON)
	if err != nil {
		return out
	}
	var s struct {
		Packages   []json.RawMessage `json:"packages"`
		Extensions []json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(data, &s) != nil {
		return out
	}
	for _, p := range s.Packages {
		var src string
		if json.Unmarshal(p, &src) != nil {
			var obj struct {
				Source     string            `json:"source"`
				Extensions []json.RawMessage `json:"extensions"`
			}
			if json.Unmarshal(p, &obj) != nil {
				continue
			}
			src = obj.Source
			out.filters = append(out.filters, jsonStrings(obj.Extensions)...)
		}
		out.packages = append(out.packages, src)
	}
	out.extensions = jsonStrings(s.Extensions)
	return out
}

// jsonStrings keeps the strings of a JSON array, passing over the rest.
func jsonStrings(vs []json.RawMessage) []string {
	var out []string
	for _, v := range vs {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// hasPackage reports whether a package source names the npm package (any
// version) or a checkout of it.
func hasPackage(sources []string, name string) bool { return packageSource(sources, name) != "" }

// packageSource is the first source that names the npm package (any
// version) or a checkout of it, as settings.json has it, or "".
func packageSource(sources []string, name string) string {
	for _, src := range sources {
		s := strings.TrimPrefix(src, "npm:")
		if s == name || strings.HasPrefix(s, name+"@") || containsPathElement(s, name) {
			return src
		}
	}
	return ""
}

// containsPathElement says whether name follows a '/' in s and ends there,
// at a '/' or at a version's '@': "@xzzpig/pi-notify@0.1.0" and
// "./packages/pi-notify" hold pi-notify, "@someone/pi-notify-extra" does
// not.
func containsPathElement(s, name string) bool {
	for rest := s; ; {
		i := strings.Index(rest, "/"+name)
		if i < 0 {
			return false
		}
		rest = rest[i+1+len(name):]
		if rest == "" || rest[0] == '/' || rest[0] == '@' {
			return true
		}
	}
}

// workflowsRow says which integration owns workflow panes: the workflow
// engine's Herdr actions come from herdr-pi when the owner Pi runs under
// `herdr-pi wrap` (its probe registers them, and hides @piewf/herdr's),
// from @piewf/herdr when a Pi runs without it.
func workflowsRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "workflow panes", Status: status, Detail: detail, Fix: fix}
	}
	// Pi loads the packages of its agent directory and of the project it
	// starts in: either may bring the engine or @piewf/herdr.
	var engine bool
	var read []string
	upstreamIn, removeUpstream := "", ""
	for _, scope := range piScopes(d) {
		pkgs := readPiLoads(scope.dir).packages
		read = append(read, scope.settings)
		engine = engine || hasPackage(pkgs, "pi-extensible-workflows")
		if src := packageSource(pkgs, "@piewf/herdr"); src != "" && upstreamIn == "" {
			upstreamIn, removeUpstream = scope.settings, scope.remove+" "+shellword.Word(src)
		}
	}
	switch {
	case !engine && upstreamIn == "":
		return row(OK, fmt.Sprintf("the workflow engine (pi-extensible-workflows) is not among Pi's packages in %s; herdr-pi open still inspects runs it finds", strings.Join(read, " or ")), "")
	case upstreamIn == "":
		return row(OK, "herdr-pi owns workflow panes: a Pi started with 'herdr-pi wrap pi' offers herdr-pi's Herdr actions in /workflow, and herdr-pi open can take its live attempts over", "")
	}
	return row(Warn, fmt.Sprintf("both herdr-pi and @piewf/herdr can own workflow panes (%s lists @piewf/herdr): under 'herdr-pi wrap pi' herdr-pi's actions replace @piewf/herdr's, which it hides; a Pi started without herdr-pi uses @piewf/herdr's (it polls Herdr, and other panes cannot take its attempts over)", upstreamIn),
		fmt.Sprintf("start workflow owners with 'herdr-pi wrap pi'; to leave one integration: %s", removeUpstream))
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

// replacedExtension is a Pi extension herdr-pi does the job of (the seeds
// it re-implements), and what it costs to keep it besides.
type replacedExtension struct {
	name    string // as people call it
	pkg     string // its npm package
	dir     string // its folder under <agent dir>/extensions when linked there
	doubles bool   // it writes to the terminal itself: each notification twice
	// more is what else it does that herdr-pi does too, for whoever keeps
	// it for that ("" when nothing).
	more string
}

var replacedExtensions = []replacedExtension{
	{name: "pi-terminal-notifications", pkg: "@xzzpig/pi-terminal-notifications", dir: "pi-terminal-notifications", doubles: true},
	// Its successor writes its own sequences in Pi's TUI just the same.
	{name: "pi-notify", pkg: "@xzzpig/pi-notify", dir: "pi-notify", doubles: true,
		more: "its pushes to ntfy are herdr-pi's too, with [notify.ntfy] in config.toml"},
	{name: "pi-herdr-integration", pkg: "@siddr/pi-herdr-integration", dir: "herdr-integration"},
}

// piScope is one place Pi loads extensions from: the agent directory
// (every project) or a project's .pi directory, which Pi reads in its
// working directory.
type piScope struct {
	dir      string // holds settings.json and extensions/
	settings string // settings.json as the row shows it
	remove   string // the command that takes a package out of this scope
}

// piScopes are the agent directory and, when doctor runs in a project
// with a .pi directory, that project's.
func piScopes(d Input) []piScope {
	scopes := []piScope{{dir: d.Paths.PiAgentDir, settings: d.Paths.Pretty(filepath.Join(d.Paths.PiAgentDir, "settings.json")), remove: "pi remove"}}
	if d.Dir == "" {
		return scopes
	}
	project := filepath.Join(d.Dir, ".pi")
	if project == d.Paths.PiAgentDir {
		return scopes
	}
	if fi, err := os.Stat(project); err == nil && fi.IsDir() {
		// `pi remove -l` edits the settings of the project it runs in:
		// the fix goes there first (the absolute path: a quoted ~ would
		// not expand).
		scopes = append(scopes, piScope{dir: project, settings: d.Paths.Pretty(filepath.Join(project, "settings.json")),
			remove: "cd " + shellword.Word(d.Dir) + " && pi remove -l"})
	}
	return scopes
}

// replacedExtensionsRow says whether Pi loads an extension herdr-pi
// replaces, globally or in the project doctor runs in.
// pi-terminal-notifications and pi-notify are a warning: outside Herdr their own
// notification sequence passes through the wrapper to the terminal beside
// herdr-pi's, so each is told twice. pi-herdr-integration only repeats
// what the probe does (herdr-pi counts its herdr:blocked events with its
// own reasons), so it is redundant, not wrong.
func replacedExtensionsRow(d Input) Row {
	var doubled, redundant []string
	var fixes []string
	for _, scope := range piScopes(d) {
		loads := readPiLoads(scope.dir)
		paths := slices.Concat(loads.filters, loads.extensions)
		for _, e := range replacedExtensions {
			where := ""
			src := cmp.Or(packageSource(loads.packages, e.pkg), packageSource(loads.packages, e.name))
			listed := mentioning(paths, e.dir)
			switch {
			case src != "":
				where = scope.settings + " lists its package"
				fixes = append(fixes, scope.remove+" "+shellword.Word(src))
			case listed != "":
				where = scope.settings + " loads it"
				fixes = append(fixes, fmt.Sprintf("take %s out of %s", listed, scope.settings))
			default:
				dir := filepath.Join(scope.dir, "extensions", e.dir)
				if !extensionIn(dir) {
					continue
				}
				where = "Pi loads " + d.Paths.Pretty(dir)
				fixes = append(fixes, "remove "+d.Paths.Pretty(dir)+" (pi remove, or delete the link)")
			}
			what := fmt.Sprintf("%s is installed (%s)", e.name, where)
			if e.doubles {
				what += ": outside Herdr each notification reaches your terminal twice, its own passing through herdr-pi beside herdr-pi's"
				if e.more != "" {
					what += " (" + e.more + ")"
				}
				doubled = append(doubled, what)
			} else {
				redundant = append(redundant, what+": redundant under herdr-pi, which does its job and counts its herdr:blocked events with its own")
			}
		}
	}
	row := Row{Name: "replaced extensions", Status: OK}
	switch {
	case len(doubled) > 0:
		row.Status = Warn
		row.Detail = strings.Join(append(doubled, redundant...), "; ")
		row.Fix = strings.Join(fixes, "; ") + "; herdr-pi does their jobs"
	case len(redundant) > 0:
		row.Detail = strings.Join(redundant, "; ") + "; " + strings.Join(fixes, "; ") + " leaves herdr-pi alone"
	default:
		row.Detail = "neither pi-terminal-notifications (nor its successor pi-notify) nor pi-herdr-integration is installed in Pi: herdr-pi does their jobs"
	}
	return row
}

// mentioning is the first path that names the folder dir as one of its
// elements (".../pi-terminal-notifications/extensions/index.ts"), or "".
func mentioning(paths []string, dir string) string {
	for _, p := range paths {
		if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), dir) {
			return p
		}
	}
	return ""
}

// extensionIn reports whether dir holds an extension Pi would load (an
// index or a package.json), not merely pi-terminal-notifications'
// config.json, which stays when the extension is removed.
func extensionIn(dir string) bool {
	for _, f := range []string{"index.ts", "index.js", "index.mjs", "package.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}
