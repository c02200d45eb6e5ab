package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// Herdr is what placing and closing a pane needs of Herdr's socket;
// *herdr.Client has these methods.
type Herdr interface {
	PaneLayout(ctx context.Context, paneID string) (herdr.Layout, error)
	PaneSplit(ctx context.Context, s herdr.Split) (herdr.PaneInfo, error)
	PaneList(ctx context.Context, workspaceID string) ([]herdr.PaneInfo, error)
	PaneSendInput(ctx context.Context, paneID, text string, keys ...string) error
	PaneClose(ctx context.Context, paneID string) error
	WorkspaceList(ctx context.Context) ([]herdr.WorkspaceInfo, error)
	WorkspaceCreate(ctx context.Context, p herdr.NewPlace) (herdr.WorkspaceCreated, error)
	WorkspaceClose(ctx context.Context, workspaceID string) error
	TabList(ctx context.Context, workspaceID string) ([]herdr.TabInfo, error)
	TabCreate(ctx context.Context, workspaceID string, p herdr.NewPlace) (herdr.TabInfo, herdr.PaneInfo, error)
	TabRename(ctx context.Context, tabID, label string) (herdr.TabInfo, error)
	TabClose(ctx context.Context, tabID string) error
	PaneGet(ctx context.Context, paneID string) (herdr.PaneInfo, error)
	PaneReportMetadata(ctx context.Context, m herdr.Metadata) error
}

// Mode is where a new pane goes.
type Mode string

const (
	// ModeSplit splits the caller's pane: right when it is wider than tall,
	// else down, without taking the focus.
	ModeSplit Mode = "split"
	// ModeTab opens a tab in the caller's workspace.
	ModeTab Mode = "tab"
	// ModeWorkspace opens (or reuses) the run's labelled workspace and a tab
	// per attempt in it, as the fully inspectable mode does.
	ModeWorkspace Mode = "workspace"
)

// Placement says where to open a pane and how it starts.
type Placement struct {
	Mode Mode
	// CallerPane is HERDR_PANE_ID of the pane `open` runs in: the pane to
	// split, and the workspace a new tab goes to.
	CallerPane string
	// Direction forces "right" or "down" for a split; "" decides by the
	// caller's geometry.
	Direction string
	// WorkspaceLabel names the run's workspace (ModeWorkspace), e.g.
	// "workflow review".
	WorkspaceLabel string
	// WorkspaceID, with ModeWorkspace, is the run's workspace when the
	// caller knows it; Dedicated opens a workspace of its own when there
	// is none (never one found by its label, which another run of the same
	// workflow may carry). Fully inspectable mode places this way.
	WorkspaceID string
	Dedicated   bool
	// TabLabel names the attempt's tab (ModeTab, ModeWorkspace), e.g.
	// "#2 reviewer".
	TabLabel string
	// Cwd and Env are where the pane's shell starts.
	Cwd string
	Env map[string]string
	// Title and Tokens say, beside the new pane in Herdr's sidebar, which
	// workflow attempt it holds (the pane's agent is plain "pi"): what the
	// workflow engine's own Herdr transport shows as the agent's label.
	Title  string
	Tokens map[string]string
	// Fresh opens a new tab in the run's workspace even when the
	// attempt's tab is open already (a live handoff must start its own
	// command; an inspection reuses the tab).
	Fresh bool
}

// Placed is where a pane was opened, and what was created for it.
type Placed struct {
	PaneID      string `json:"pane_id"`
	TabID       string `json:"tab_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	Direction   string `json:"direction,omitempty"`
	// Reused is true when the attempt's tab already existed: nothing new
	// was opened and nothing should be launched in it.
	Reused bool `json:"reused,omitempty"`
	// Created lists what this placement opened, in order, as "pane w1:p3",
	// "tab w2:t2" or "workspace w2".
	Created []string `json:"created,omitempty"`
	// Terminal is the terminal_id of the pane this placement opened ("" for
	// a reused tab): a Herdr started afresh counts its pane ids from the
	// start again, and only the terminal tells the pane herdr-pi opened
	// from a namesake ([Foreign]). open --json says it (docs/open.md).
	Terminal string `json:"terminal,omitempty"`
	// RootTab is the tab Herdr opened with a workspace this placement
	// created (its spare shell): it belongs to the workspace, not to
	// anyone who joined it. UndoJoined tells it from others' tabs.
	RootTab string `json:"-"`
	// RootPane is that tab's pane and RootTerminal its terminal_id: the
	// workspace's own fact a Herdr started afresh cannot give a namesake
	// workspace ([ForeignWorkspace]). Not in open --json: the spare shell
	// is the workspace's, not the attempt's, and the ledger keeps both.
	RootPane     string `json:"-"`
	RootTerminal string `json:"-"`
}

// Place opens a pane as p says. On failure it closes what it had opened
// already and returns the first error; when that close fails too, a
// *LeftOpenError names what stays open, for the caller's ledger.
func Place(ctx context.Context, h Herdr, p Placement) (Placed, error) {
	var (
		out Placed
		err error
	)
	p.cleanText()
	switch p.Mode {
	case ModeSplit, "":
		out, err = placeSplit(ctx, h, p)
	case ModeTab:
		out, err = placeTab(ctx, h, p)
	case ModeWorkspace:
		out, err = placeWorkspace(ctx, h, p)
	default:
		return Placed{}, fmt.Errorf("unknown placement %q", p.Mode)
	}
	if err != nil {
		// Not on ctx: a placement given up halfway (ctx cancelled) must
		// still close what it made, which nothing else knows of.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoBudget)
		defer cancel()
		return Placed{}, undoFailed(uctx, h, &out, err)
	}
	if !out.Reused && (p.Title != "" || len(p.Tokens) > 0) {
		// Display only: a Herdr that refuses it (an older one, or a
		// title it does not like) still runs the pane as asked.
		_ = h.PaneReportMetadata(ctx, herdr.Metadata{PaneID: out.PaneID, Source: MetadataSource,
			Agent: "pi", Title: p.Title, Tokens: p.Tokens})
	}
	return out, nil
}

// Label sets the title and tokens that name a workflow attempt beside its
// pane. The title reads as the attempt's tab does, "fx-retry #2 fixer"
// (n as the tab counts), with " (inspect)" for a read-only fork; the
// tokens workflow, attempt (fixer#3: the attempt's own number, left out
// when unknown) and run (the short id) serve sidebar rows that show
// $workflow and the like.
func (p *Placement) Label(workflow, runShort, agent string, n, attempt int, inspect bool) {
	p.Title = fmt.Sprintf("%s #%d %s", workflow, n, agent)
	if inspect {
		p.Title += " (inspect)"
	}
	p.Tokens = map[string]string{"workflow": workflow, "run": runShort}
	if attempt > 0 {
		p.Tokens["attempt"] = fmt.Sprintf("%s#%d", agent, attempt)
	}
}

// cleanText makes the labels, title and tokens harmless where Herdr
// draws them, its sidebar and tab bar being a terminal: they come from the
// workflow store (a workflow's or an agent's name), which anyone who can
// write a workflow fills. The cleaned label is also what finds the run's
// workspace again.
func (p *Placement) cleanText() {
	p.WorkspaceLabel, p.TabLabel, p.Title = termtext.Clean(p.WorkspaceLabel), termtext.Clean(p.TabLabel), termtext.Clean(p.Title)
	if p.Tokens != nil {
		tokens := make(map[string]string, len(p.Tokens))
		for k, v := range p.Tokens {
			tokens[k] = termtext.Clean(v)
		}
		p.Tokens = tokens
	}
}

// MetadataSource is the source of the metadata Place reports for a pane,
// apart from the wrapper's state reports. It is guarded by agent "pi", so
// Herdr shows it only while Pi runs there, not over the shell left after.
const MetadataSource = "custom:herdr-pi-open"

// SplitDirection is right when the pane is wider than tall, else down (a
// square pane splits down).
func SplitDirection(width, height int) string {
	if width > height {
		return "right"
	}
	return "down"
}

func placeSplit(ctx context.Context, h Herdr, p Placement) (Placed, error) {
	if p.CallerPane == "" {
		return Placed{}, errors.New("splitting needs the caller's pane (HERDR_PANE_ID); run inside a Herdr pane or use --workspace")
	}
	dir := p.Direction
	if dir == "" {
		layout, err := h.PaneLayout(ctx, p.CallerPane)
		if err != nil {
			return Placed{}, fmt.Errorf("reading the layout of pane %s: %w", p.CallerPane, err)
		}
		found := false
		for _, pn := range layout.Panes {
			if pn.PaneID == p.CallerPane {
				dir, found = SplitDirection(pn.Rect.Width, pn.Rect.Height), true
				break
			}
		}
		if !found {
			return Placed{}, fmt.Errorf("Herdr's layout of tab %s does not list pane %s", layout.TabID, p.CallerPane)
		}
	}
	pane, err := h.PaneSplit(creating(ctx), herdr.Split{TargetPaneID: p.CallerPane, Direction: dir,
		NewPlace: herdr.NewPlace{Cwd: p.Cwd, Env: p.Env}})
	if err != nil {
		return Placed{}, fmt.Errorf("splitting pane %s %s: %w", p.CallerPane, dir, err)
	}
	if pane.PaneID == "" {
		return Placed{}, errors.New("Herdr split a pane but returned no pane id")
	}
	out := Placed{PaneID: pane.PaneID, TabID: pane.TabID, WorkspaceID: pane.WorkspaceID, Direction: dir,
		Created: []string{"pane " + pane.PaneID}, Terminal: pane.TerminalID}
	return out, givenUp(ctx)
}

// creating is the context of a request that makes a pane, tab or
// workspace: not ctx's cancel. Cut off by it, the request would lose
// Herdr's answer, the id of what Herdr makes all the same, and nothing
// could close that (a herdr-pi close giving a live handoff up while its
// pane was being split left the pane open). The client's own deadline
// for such requests still bounds a hung Herdr; once the answer is in,
// givenUp says whether ctx ended meanwhile, and Place closes what was
// made. A ctx already ended is kept: the request then fails at once and
// nothing is made only to be closed again.
func creating(ctx context.Context) context.Context {
	if ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// givenUp is ctx's error, if it has ended, as the error of a placement
// step that went on without it (see creating).
func givenUp(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("placing the pane was given up: %w", err)
	}
	return nil
}

func placeTab(ctx context.Context, h Herdr, p Placement) (Placed, error) {
	ws := ""
	if p.CallerPane != "" {
		ws = workspaceOf(p.CallerPane)
	}
	tab, root, err := h.TabCreate(creating(ctx), ws, herdr.NewPlace{Cwd: p.Cwd, Env: p.Env, Label: p.TabLabel})
	if err != nil {
		return Placed{}, fmt.Errorf("opening a tab: %w", err)
	}
	out := Placed{PaneID: root.PaneID, TabID: tab.TabID, WorkspaceID: tab.WorkspaceID, Created: []string{"tab " + tab.TabID},
		Terminal: root.TerminalID}
	if root.PaneID == "" {
		return out, fmt.Errorf("Herdr opened tab %s but returned no pane id", tab.TabID)
	}
	return out, givenUp(ctx)
}

func placeWorkspace(ctx context.Context, h Herdr, p Placement) (Placed, error) {
	var out Placed
	if p.WorkspaceID != "" || !p.Dedicated {
		wss, err := h.WorkspaceList(ctx)
		if err != nil {
			return out, fmt.Errorf("listing workspaces: %w", err)
		}
		for _, w := range wss {
			if (p.WorkspaceID != "" && w.WorkspaceID == p.WorkspaceID) || (p.WorkspaceID == "" && w.Label == p.WorkspaceLabel) {
				out.WorkspaceID = w.WorkspaceID
				break
			}
		}
	}
	if out.WorkspaceID == "" {
		created, err := h.WorkspaceCreate(creating(ctx), herdr.NewPlace{Cwd: p.Cwd, Label: p.WorkspaceLabel})
		if err != nil {
			return out, fmt.Errorf("opening workspace %q: %w", p.WorkspaceLabel, err)
		}
		out.WorkspaceID = created.Workspace.WorkspaceID
		if out.WorkspaceID == "" {
			return out, fmt.Errorf("Herdr opened workspace %q but returned no workspace id", p.WorkspaceLabel)
		}
		out.Created = append(out.Created, "workspace "+out.WorkspaceID)
		out.RootTab = created.Tab.TabID
		out.RootPane, out.RootTerminal = created.RootPane.PaneID, created.RootPane.TerminalID
		if err := givenUp(ctx); err != nil {
			return out, err
		}
		// The root tab carries the run's name too, so the workspace reads
		// the same whichever tab is shown.
		if _, err := h.TabRename(ctx, created.Tab.TabID, p.WorkspaceLabel); err != nil {
			return out, fmt.Errorf("labelling tab %s: %w", created.Tab.TabID, err)
		}
	} else {
		tabs, err := h.TabList(ctx, out.WorkspaceID)
		if err != nil {
			return out, fmt.Errorf("listing the tabs of workspace %s: %w", out.WorkspaceID, err)
		}
		for _, t := range tabs {
			if t.Label == p.TabLabel && !p.Fresh {
				out.TabID, out.Reused = t.TabID, true
				out.PaneID, err = firstPaneOf(ctx, h, out.WorkspaceID, t.TabID)
				return out, err
			}
		}
	}
	tab, root, err := h.TabCreate(creating(ctx), out.WorkspaceID, herdr.NewPlace{Cwd: p.Cwd, Env: p.Env, Label: p.TabLabel})
	if err != nil {
		return out, fmt.Errorf("opening tab %q in workspace %s: %w", p.TabLabel, out.WorkspaceID, err)
	}
	out.TabID, out.PaneID, out.Terminal = tab.TabID, root.PaneID, root.TerminalID
	out.Created = append(out.Created, "tab "+tab.TabID)
	if root.PaneID == "" {
		return out, fmt.Errorf("Herdr opened tab %s but returned no pane id", tab.TabID)
	}
	return out, givenUp(ctx)
}

// UndoJoined is Undo for a placement others may have joined since it was
// recorded: an open or a live handoff of the same run finds the run's
// workspace in the ledger and adds its tab, and a person may add one by
// hand. A workspace the placement created is closed only while it holds
// nothing but its root tab and the placement's own; else only that tab
// closes and kept says the workspace stays. When Herdr cannot say what the
// workspace holds, it stays too: closing someone's tab is worse than
// leaving an empty workspace behind.
func (p *Placed) UndoJoined(ctx context.Context, h Herdr) (kept bool, err error) {
	if len(p.Created) < 2 || !strings.HasPrefix(p.Created[0], "workspace ") {
		return false, p.Undo(ctx, h)
	}
	ws := strings.TrimPrefix(p.Created[0], "workspace ")
	own := strings.TrimPrefix(p.Created[1], "tab ")
	// A Herdr started afresh since may have given the workspace's id, and
	// its root tab's, to the person's: nothing of it is closed then.
	if why := p.foreignWorkspace(ctx, h, ws); why != "" {
		p.Created = nil
		return false, &ForeignError{Thing: "workspace " + ws, Why: why}
	}
	tabs, lerr := h.TabList(ctx, ws)
	joined := lerr != nil
	for _, t := range tabs {
		if t.TabID != own && t.TabID != p.RootTab {
			joined = true
		}
	}
	if !joined {
		return false, p.undo(ctx, h, false) // told ours just now
	}
	p.Created = p.Created[1:]
	return true, p.Undo(ctx, h)
}

// foreignWorkspace is ForeignWorkspace for the workspace p created, told
// by its root pane and the pane p opened in it; "" for a placement from
// before herdr-pi kept terminals.
func (p *Placed) foreignWorkspace(ctx context.Context, h Herdr, ws string) string {
	if p.RootTerminal == "" {
		return ""
	}
	terminals := []string{p.RootTerminal}
	if p.Terminal != "" {
		terminals = append(terminals, p.Terminal)
	}
	return ForeignWorkspace(ctx, h, ws, p.RootPane, terminals)
}

// ForeignError is a close that closed nothing because the id names
// something herdr-pi did not open now ([Foreign]): its record goes, and
// the caller says why.
type ForeignError struct{ Thing, Why string }

func (e *ForeignError) Error() string { return "leaving " + e.Thing + " open: " + e.Why }

func firstPaneOf(ctx context.Context, h Herdr, workspaceID, tabID string) (string, error) {
	panes, err := h.PaneList(ctx, workspaceID)
	if err != nil {
		return "", fmt.Errorf("listing the panes of workspace %s: %w", workspaceID, err)
	}
	for _, pn := range panes {
		if pn.TabID == tabID {
			return pn.PaneID, nil
		}
	}
	return "", fmt.Errorf("tab %s has no pane", tabID)
}

// workspaceOf is the workspace part of a pane id ("w1:p3" → "w1"); ""
// when the id has no such part (Herdr then uses the active workspace).
func workspaceOf(paneID string) string {
	ws, _, ok := strings.Cut(paneID, ":")
	if !ok {
		return ""
	}
	return ws
}

// LeftOpenError is an open or a placement that failed after it had made
// something in Herdr, which it then could not close either (Herdr refused
// or did not answer): Left names what stays open, as Placed.Created does,
// outermost first. Only the caller knows whose it is (the run), so only
// the caller can put it in the ledger (Ledger.AddLeftOpen), and must:
// else no herdr-pi close would ever find it.
type LeftOpenError struct {
	// Err is why opening failed; Close why closing what it made failed.
	Err, Close error
	Left       []string
	// Placed is the placement as it was made (its Created is Left): the
	// panes and terminals Herdr gave, which the records keep (see
	// [Placed.Records]).
	Placed Placed
}

func (e *LeftOpenError) Error() string {
	return fmt.Sprintf("%v (and closing what was opened failed: %v)", e.Err, e.Close)
}

// Unwrap is why opening failed: the close's failure is only told.
func (e *LeftOpenError) Unwrap() error { return e.Err }

// undoFailed closes what p created after err, and returns err — as a
// *LeftOpenError naming what stays open when the close failed. Herdr's
// word that a thing is gone already leaves nothing open; nor does an id
// that names what herdr-pi did not open now (a *ForeignError, which the
// result wraps too). Herdr itself gone took the pane's processes along,
// but a Herdr that comes back brings the pane back (its layout, restored
// with new shells; the pane itself after a live handoff): that is left
// open too, for the ledger, so herdr-pi close can see to it.
func undoFailed(ctx context.Context, h Herdr, p *Placed, err error) error {
	made := *p
	made.Created = slices.Clone(p.Created)
	uerr := p.Undo(ctx, h)
	var fe *ForeignError
	switch {
	case uerr == nil:
		return err
	case errors.As(uerr, &fe):
		return fmt.Errorf("%w (%w)", err, fe)
	case Gone(uerr):
		return fmt.Errorf("%w (and closing what was opened failed: %v)", err, uerr)
	}
	return &LeftOpenError{Err: err, Close: uerr, Left: made.Created, Placed: made}
}

// Undo closes what the placement created, once. Things were created
// outermost first (workspace, tab, pane) and a workspace or tab takes what
// is inside it along, so closing the first is closing all of it. A Herdr
// started afresh since (it counts its ids from the start again) may have
// given that id to the person's own pane, tab or workspace: then nothing
// is closed and a *ForeignError says why, as close and a handback do
// ([Foreign]).
func (p *Placed) Undo(ctx context.Context, h Herdr) error {
	return p.undo(ctx, h, true)
}

// undo is Undo; check false skips the look at Herdr for a workspace the
// caller has just told is still ours.
func (p *Placed) undo(ctx context.Context, h Herdr, check bool) error {
	if len(p.Created) == 0 {
		return nil
	}
	kind, id, _ := strings.Cut(p.Created[0], " ")
	p.Created = nil
	if check {
		why, gone := "", false
		switch kind {
		case "workspace":
			why = p.foreignWorkspace(ctx, h, id)
		case "tab", "pane":
			// A tab created is the tab of the pane opened (PaneID).
			why, gone = ForeignOrGone(ctx, h, kind, id, p.PaneID, p.Terminal)
		}
		if why != "" {
			return &ForeignError{Thing: kind + " " + id, Why: why}
		}
		if gone {
			return nil
		}
	}
	var err error
	switch kind {
	case "workspace":
		err = h.WorkspaceClose(ctx, id)
	case "tab":
		err = h.TabClose(ctx, id)
	case "pane":
		err = h.PaneClose(ctx, id)
	}
	if err != nil {
		return fmt.Errorf("closing %s %s: %w", kind, id, err)
	}
	return nil
}
