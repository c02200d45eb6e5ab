package commands

import (
	"fmt"
	"io"
	"strings"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/observe"
	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

// pickManifest loads the manifests and chooses the agent's
// (observe.ChooseAgent). Manifest problems are shown on stderr before the
// agent starts (like config problems) and the embedded manifest is used
// instead.
func pickManifest(io IO, paths settings.Paths, cfg settings.Config, opts *wrapOptions, log *logger) (*detect.Manifest, string) {
	set, problems := detect.Load(paths.ManifestDir)
	tellManifestProblems(io.Err, "herdr-pi", problems)
	for _, p := range problems {
		log.Printf("manifest: %v", p)
	}
	agent := observe.ChooseAgent(opts.Agent, cfg.Detect.Agent, opts.Argv, set)
	manifest, ok := set.Lookup(agent)
	if !ok {
		tell(io.Err, "herdr-pi: no detection manifest for agent %q (known: %s%s); detecting as pi\n",
			agent, strings.Join(set.Names(), ", "), meantAgent(agent, set.Names()))
		manifest, _ = set.Lookup("pi")
	}
	log.Printf("detect: agent %q, manifest %s (%s)", agent, manifest.ID, manifest.Source)
	return manifest, agent
}

// meantAgent is, for an agent id no manifest has that is a typo of one
// that has (--agent Pi, as the product is written; settings.Meant), the
// hint that names it: ids are matched exactly, and only "pi" gets Pi's
// probe.
func meantAgent(agent string, known []string) string {
	if k := settings.Meant(agent, known); k != "" {
		return fmt.Sprintf("; did you mean %q? agent ids are matched exactly", k)
	}
	return ""
}

// tellManifestProblems says every manifest problem on stderr under one
// header, each indented below it, as config problems are said. who starts
// the header: "herdr-pi" among the agent's output in wrap's pane, the
// command's name where a command says it before its own result.
func tellManifestProblems(w io.Writer, who string, problems []error) {
	if len(problems) == 0 {
		return
	}
	var list strings.Builder
	for _, p := range problems {
		list.WriteString("\n  " + strings.ReplaceAll(p.Error(), "\n", "\n  "))
	}
	// A broken claude.toml has no built-in manifest to give way to.
	instead := "using the built-in manifest"
	if lacking := doctor.ManifestsWithoutBuiltIn(problems); len(lacking) > 0 {
		instead = "ignoring these files (no manifest is built in as " + strings.Join(lacking, " or ") + ")"
	}
	tell(w, "%s: manifest problems, %s:%s\n", who, instead, list.String())
}

// startDetection starts watching the run. Every state event goes to the
// trace file when HERDR_PI_TRACE names one, then to sinks in order, then to
// the log; stop ends it (and closes the trace). The sinks (Herdr's report,
// the notifications) never wait, and the log may: a write can block for as
// long as the disk under the state directory makes it (writeback under
// load, a home on NFS), and a sink behind it would hear a blocked state
// that much late. So may a report that the log held back until the next
// state came: the reporter sends only the newest, and Herdr would never
// see the one in between. The trace, on only when asked for, comes first,
// so whoever reads it after Herdr shows a state finds the event there. A
// trace that cannot be opened is said on stderr before the agent starts,
// like config problems: the user asked for it and would otherwise find an
// empty file and no reason.
func startDetection(io IO, env settings.Env, cfg settings.Config, manifest *detect.Manifest, log *logger, sinks ...func(state.Event)) (o *observe.Observer, stop func()) {
	var all []func(state.Event)
	var trace *observe.Trace
	if path := env.Get("HERDR_PI_TRACE"); path != "" {
		t, err := observe.OpenTrace(path)
		if err != nil {
			tell(io.Err, "herdr-pi: HERDR_PI_TRACE: %v; running without a trace\n", err)
			log.Printf("trace: %v", err)
		} else {
			trace = t
			all = append(all, t.Write)
		}
	}
	all = append(all, sinks...)
	all = append(all, func(e state.Event) { log.Printf("state: %s", observe.Describe(e)) })
	o = observe.Start(observe.Config{Manifest: manifest, Debounce: cfg.Detect.Debounce.D(), StartupGrace: cfg.Detect.StartupGrace.D(),
		Sinks: all, Logf: log.Printf})
	return o, func() {
		o.Stop()
		if trace != nil {
			trace.Close()
		}
	}
}

// reportTransitions hands every transition to the Herdr presence, and a
// blocked state's new message (a wait started again with a new label).
func reportTransitions(report func(st, message string)) func(state.Event) {
	return func(e state.Event) {
		if e.Kind == state.EventTransition || e.Kind == state.EventRelabelled {
			report(string(e.To), e.Message)
		}
	}
}
