package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/screen"
	"github.com/herdr-pi/herdr-pi/pane/state"
	"github.com/herdr-pi/herdr-pi/settings"
)

// stateSink receives every event of the state machine, in order: the log,
// the Herdr reporter, the trace file (HERDR_PI_TRACE); the notifier plugs in
// here too.
type stateSink func(state.Event)

// detection is the observing half of one wrap run: pty tap → shadow screen
// → manifest → state machine → sink. The copy loop only writes into the
// tap; everything else runs on detection's own goroutine.
type detection struct {
	tap      *pty.Tap
	machine  *state.Machine
	manifest *detect.Manifest
	agent    string

	cancel context.CancelFunc
	done   chan struct{}
	trace  *traceFile
}

// chooseAgent picks the manifest: --agent, else detect.agent from the
// config, else the command's base name when a manifest has that name, else
// pi.
func chooseAgent(flag, configured string, argv []string, set *detect.Set) string {
	if flag != "" {
		return flag
	}
	if configured != "" {
		return configured
	}
	if len(argv) > 0 {
		if base := filepath.Base(argv[0]); base != "" {
			if _, ok := set.Lookup(base); ok {
				return base
			}
		}
	}
	return "pi"
}

// pickManifest loads the manifests and chooses the agent's (chooseAgent).
// Manifest problems are shown on stderr before the agent starts (like
// config problems) and the embedded manifest is used instead.
func pickManifest(io IO, paths settings.Paths, cfg settings.Config, opts *wrapOptions, log *logger) (*detect.Manifest, string) {
	set, problems := detect.Load(paths.ManifestDir)
	for _, p := range problems {
		fmt.Fprintf(io.Err, "herdr-pi: manifest problems, using the built-in manifest:\n  %s\n",
			strings.ReplaceAll(p.Error(), "\n", "\n  "))
		log.Printf("manifest: %v", p)
	}
	agent := chooseAgent(opts.Agent, cfg.Detect.Agent, opts.Argv, set)
	manifest, ok := set.Lookup(agent)
	if !ok {
		fmt.Fprintf(io.Err, "herdr-pi: no detection manifest for agent %q (known: %s); detecting as pi\n",
			agent, strings.Join(set.Names(), ", "))
		manifest, _ = set.Lookup("pi")
	}
	log.Printf("detect: agent %q, manifest %s (%s)", agent, manifest.ID, manifest.Source)
	return manifest, agent
}

// startDetection builds the pipeline and starts its goroutine, which it
// owns: stop ends and waits for it. Every state event goes to the log, to
// the trace file when HERDR_PI_TRACE names one, then to sinks in order.
func startDetection(env settings.Env, cfg settings.Config, manifest *detect.Manifest, agent string, log *logger, sinks ...stateSink) *detection {
	d := &detection{tap: pty.NewTap(0), manifest: manifest, agent: agent, done: make(chan struct{})}
	all := []stateSink{func(e state.Event) { log.Printf("state: %s", describeEvent(e)) }}
	if path := env.Get("HERDR_PI_TRACE"); path != "" {
		t, err := openTrace(path)
		if err != nil {
			log.Printf("trace: %v", err)
		} else {
			d.trace = t
			all = append(all, t.write)
		}
	}
	all = append(all, sinks...)
	d.machine = state.New(state.Config{
		Debounce:     cfg.Detect.Debounce.D(),
		StartupGrace: cfg.Detect.StartupGrace.D(),
		Sink: func(e state.Event) {
			for _, s := range all {
				s(e)
			}
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		screen.Follow(ctx, d.tap, screen.FollowOptions{
			Rows: 24, Cols: 80, // replaced by the size the tap carries first
			Logf:    log.Printf,
			Publish: d.classify,
		})
	}()
	return d
}

// reportTransitions hands every transition to the Herdr reporter.
func reportTransitions(report func(st, message string)) stateSink {
	return func(e state.Event) {
		if e.Kind == state.EventTransition {
			report(string(e.To), e.Message)
		}
	}
}

// classify turns one screen snapshot into a verdict for the machine.
func (d *detection) classify(s screen.Snapshot) {
	v := d.manifest.Evaluate(detect.Input{Text: s.Text, Title: s.Title, Progress: s.Progress})
	sv := state.Verdict{State: state.State(v.State), Skip: v.Skip}
	if v.Rule != nil {
		sv.Rule = v.Rule.ID
	}
	d.machine.Screen(sv)
}

// stop ends detection once the child is gone. Nothing is left to detect:
// the screen consumer is cancelled rather than drained (it may be resting
// after a flood, and the wrapper's exit must not wait for it), then waited
// for, and the machine stops its timers.
func (d *detection) stop() {
	d.tap.Close()
	d.cancel()
	<-d.done
	d.machine.Stop()
	if d.trace != nil {
		d.trace.close()
	}
}

func describeEvent(e state.Event) string {
	switch e.Kind {
	case state.EventRunFinished:
		return fmt.Sprintf("run finished: %s (stop reason %q, %v)", e.Outcome, e.StopReason, e.Duration.Round(time.Millisecond))
	case state.EventOpened, state.EventClosed:
		return fmt.Sprintf("%s %s (%s)", e.Kind, e.Reason.Key, e.Reason.Kind)
	}
	s := fmt.Sprintf("%s → %s (%s)", e.From, e.To, e.Cause)
	if e.Message != "" {
		s += fmt.Sprintf(": %q", e.Message)
	}
	return s
}

// traceFile appends one JSON object per state event to the file named by
// HERDR_PI_TRACE — a debugging aid (docs/detect.md), and how the
// end-to-end tests watch the state machine from outside the process.
type traceFile struct {
	mu    sync.Mutex
	w     io.WriteCloser
	start time.Time
}

func openTrace(path string) (*traceFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &traceFile{w: f, start: time.Now()}, nil
}

type traceLine struct {
	state.Event
	ElapsedMs float64 `json:"elapsed_ms"`
}

func (t *traceFile) write(e state.Event) {
	line, err := json.Marshal(traceLine{Event: e, ElapsedMs: float64(e.At.Sub(t.start).Microseconds()) / 1000})
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(append(line, '\n'))
}

func (t *traceFile) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.w.Close()
}
