package handoff

import (
	"context"
	"fmt"
	"os"
	"time"
)

// InspectionTools are the only tools an inspection's Pi gets: it reads,
// it does not change the project.
const InspectionTools = "read,grep,find,ls"

// Inspection is an attempt to open read-only, as a fork of its session:
// whatever the person types lands in the fork, never in the attempt's own
// transcript (upstream reopens the original file; workflows-handoff.md §11).
type Inspection struct {
	// Title says what is opened, for the command file and messages.
	Title string
	// Label names the pane in its notifications (Placement.Title).
	Label       string
	SessionFile string
	// Model is the attempt's own, provider/model[:thinking]; "" leaves
	// Pi's default.
	Model string
	Cwd   string
}

// Opener opens panes that run a command under `herdr-pi wrap`.
type Opener struct {
	Herdr Herdr
	// Self is herdr-pi's own executable: it wraps Pi in the new pane, so
	// the pane reports its state like every herdr-pi pane.
	Self string
	// Pi is how to start Pi (default "pi" from PATH, or [open] pi).
	Pi []string
	// PiEnv is KEY=VALUE pairs for the pane's command on top of the
	// pane's own environment: PI_CODING_AGENT_DIR and
	// PI_CODING_AGENT_SESSION_DIR when the caller has them, so the pane's
	// Pi sees the same agent, and whatever else the caller must share
	// with the wrapper in the pane.
	PiEnv []string
	// FileDir is a private (0700) directory for command files.
	FileDir string
}

// InspectLaunch is the command that inspects in: Pi on a fork of the
// session, with read-only tools and the attempt's model, under wrap.
func (o Opener) InspectLaunch(in Inspection) Launch {
	argv := append(WrapArgv(o.Self, in.Label), o.Pi...)
	argv = append(argv, "--fork", in.SessionFile, "--tools", InspectionTools)
	if in.Model != "" {
		argv = append(argv, "--model", in.Model)
	}
	return Launch{Argv: argv, Env: o.PiEnv, Dir: in.Cwd, Title: in.Title}
}

// WrapArgv is how a pane herdr-pi opens starts: its Pi under `herdr-pi
// wrap` (self), so the pane reports its state, with label naming the pane
// in its notifications ("" for none) — the pane's title, so that the
// toasts of several workflow agents in one project say which one asks.
// The agent's command follows.
//
// --no-resume: Herdr 0.9 would otherwise start the pane's Pi again after
// it restarts, on the session file the pane wrote. A handed-off attempt
// goes back to its owner when its pane goes, and the owner writes that
// file on: a restored Pi would write it beside the owner. A restored
// inspection would lose its read-only tools (the resume command keeps
// only --session).
func WrapArgv(self, label string) []string {
	argv := []string{self, "wrap", "--agent", "pi"}
	if label != "" {
		argv = append(argv, "--label", label)
	}
	return append(argv, "--no-resume", "--")
}

// Opened is a pane that runs a launch.
type Opened struct {
	Placed
	Command []string `json:"command"`
	Env     []string `json:"env,omitempty"`
	Cwd     string   `json:"cwd"`
	// CommandFile is the script typed into the pane; it deletes itself
	// when the pane starts it ("" for a reused tab). WatchFile goes when
	// the command fails (CommandFile.Watch); the caller removes it when
	// done. StartedFile is where the pane's wrapper names its Pi's
	// session file (CommandFile.Started).
	CommandFile string `json:"-"`
	WatchFile   string `json:"-"`
	StartedFile string `json:"-"`
}

// undoBudget bounds closing what was opened after a failure, even when the
// failure was the caller giving up (its context is then done).
const undoBudget = 3 * time.Second

// Open places a pane and starts l in it through a command file. A failure
// after something was created closes exactly that, removes the file, and
// returns the first error; when that close fails too, a *LeftOpenError
// names what stays open, for the caller's ledger. A reused tab (ModeWorkspace, the attempt's tab
// is still open) starts nothing.
func (o Opener) Open(ctx context.Context, l Launch, p Placement) (Opened, error) {
	placed, err := Place(ctx, o.Herdr, p)
	if err != nil {
		return Opened{}, err
	}
	out := Opened{Placed: placed, Command: l.Argv, Env: l.Env, Cwd: l.Dir}
	if placed.Reused {
		return out, nil
	}
	cf, err := WriteCommandFile(o.FileDir, l)
	if err == nil {
		if err = o.Herdr.PaneSendInput(ctx, placed.PaneID, cf.Typed, "Enter"); err != nil {
			os.Remove(cf.Path)
			os.Remove(cf.Watch)
			err = fmt.Errorf("starting the command in pane %s: %w", placed.PaneID, err)
		}
	}
	out.CommandFile, out.WatchFile, out.StartedFile = cf.Path, cf.Watch, cf.Started
	if err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoBudget)
		defer cancel()
		return Opened{}, undoFailed(uctx, o.Herdr, &placed, err)
	}
	return out, nil
}
