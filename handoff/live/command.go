package live

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/tools"
	"github.com/herdr-pi/herdr-pi/handoff"
)

// writeFiles writes the launch's files (by content) into dir, 0600, and
// returns their paths by name. dir is private and the caller's to remove.
func writeFiles(dir string, files []control.LaunchFile) (map[string]string, error) {
	paths := map[string]string{}
	for _, f := range files {
		// The names were checked as plain names (control.Launch.check);
		// the join cannot leave dir.
		p := filepath.Join(dir, f.Name)
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("writing the launch's file %s: %w", f.Name, err)
		}
		_, werr := w.WriteString(f.Content)
		if cerr := w.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("writing the launch's file %s: %w", p, werr)
		}
		paths[f.Name] = p
	}
	return paths, nil
}

// paneCommand is what the pane runs: herdr-pi wrap (so the pane reports its
// own state, its notifications named with label), then the launch's words with its files' paths and the tool
// bridge's client extension put in; the launch's environment in a stable
// order with extra after it; the launch's directory.
func paneCommand(self, label string, l control.Launch, files map[string]string, bridgeClient string, extra []string) (handoff.Launch, error) {
	argv := handoff.WrapArgv(self, label)
	for i, a := range l.Argv {
		switch {
		case a.ToolBridge:
			if bridgeClient == "" {
				return handoff.Launch{}, fmt.Errorf("argv[%d] names the tool bridge, which did not start", i)
			}
			argv = append(argv, bridgeClient)
		case a.File != "":
			p, ok := files[a.File]
			if !ok {
				return handoff.Launch{}, fmt.Errorf("argv[%d] names file %q, which was not written", i, a.File)
			}
			argv = append(argv, a.Prefix+p)
		default:
			argv = append(argv, a.Text)
		}
	}
	keys := make([]string, 0, len(l.Env))
	for k := range l.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys)+len(extra))
	for _, k := range keys {
		env = append(env, k+"="+l.Env[k])
	}
	env = append(env, extra...)
	title := fmt.Sprintf("herdr-pi: live handoff of %s (run %s)", l.Label, l.RunID)
	return handoff.Launch{Argv: argv, Env: env, Dir: l.Cwd, Title: title}, nil
}

// toolSpecs are the bridged tools as the bridge takes them (the same
// fields).
func toolSpecs(in []control.ToolSpec) []tools.Spec {
	out := make([]tools.Spec, 0, len(in))
	for _, t := range in {
		out = append(out, tools.Spec{Name: t.Name, Label: t.Label, Description: t.Description, PromptSnippet: t.PromptSnippet,
			PromptGuidelines: t.PromptGuidelines, Parameters: t.Parameters, RenderShell: t.RenderShell, ExecutionMode: t.ExecutionMode})
	}
	return out
}
