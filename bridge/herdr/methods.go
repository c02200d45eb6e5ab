package herdr

import (
	"context"
)

// Agent states a report may carry (herdr-socket-api.md §4.2). "done" is
// derived by Herdr and cannot be reported.
const (
	StateIdle    = "idle"
	StateWorking = "working"
	StateBlocked = "blocked"
	StateUnknown = "unknown"
)

// Pong is Herdr's answer to ping.
type Pong struct {
	Version      string        `json:"version"`
	Protocol     int           `json:"protocol"`
	Capabilities *Capabilities `json:"capabilities"`
}

// Ping asks Herdr for its version. When Herdr speaks a protocol herdr-pi
// does not know (see [KnownProtocol]) it returns the Pong together with a
// *ProtocolMismatchError.
func (c *Client) Ping(ctx context.Context) (Pong, error) {
	var p Pong
	if err := c.call(ctx, "ping", nil, "pong", &p, retryOnce); err != nil {
		return Pong{}, err
	}
	if !KnownProtocol(p.Protocol) {
		want := Protocol
		if p.Protocol > Protocol {
			want = ProtocolResume
		}
		return p, &ProtocolMismatchError{Socket: c.Socket, Got: p.Protocol, Version: p.Version, Expected: want}
	}
	return p, nil
}

// AgentReport is one pane.report_agent.
type AgentReport struct {
	PaneID  string `json:"pane_id"`
	Source  string `json:"source"`
	Agent   string `json:"agent"`
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// Seq orders reports from one source on one pane; Herdr ignores one
	// that is not above the last it accepted (§6.3). Zero sends none.
	Seq uint64 `json:"seq,omitempty"`
	// ResumeArgv is the command that restores the agent after Herdr
	// restarts (protocol 22 on, landscape.md §9). Only for a Herdr that
	// speaks [ProtocolResume]; nil sends none.
	ResumeArgv []string `json:"resume_argv,omitempty"`
}

// ReportAgent sets the pane's agent state. Herdr answers ok even when it
// ignores the report (stale seq, another authority; §4.2), so success means
// delivered, not applied.
func (c *Client) ReportAgent(ctx context.Context, r AgentReport) error {
	return c.call(ctx, "pane.report_agent", r, "ok", nil, retryOnce)
}

// AgentRelease is one pane.release_agent.
type AgentRelease struct {
	PaneID string `json:"pane_id"`
	Source string `json:"source"`
	Agent  string `json:"agent"`
	Seq    uint64 `json:"seq,omitempty"`
}

// ReleaseAgent gives the pane's agent authority back, so a wrapper that ended
// does not leave its last state on the pane (§11.3).
func (c *Client) ReleaseAgent(ctx context.Context, r AgentRelease) error {
	return c.call(ctx, "pane.release_agent", r, "ok", nil, retryOnce)
}

// Notification is one notification.show.
type Notification struct {
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
	// Sound is none, done or request; empty means Herdr's default (none).
	Sound string `json:"sound,omitempty"`
	// Position is top-left, top-right, bottom-left or bottom-right; only
	// Herdr's in-app toasts use it.
	Position string `json:"position,omitempty"`
}

// NotificationResult says whether Herdr showed the toast, and if not, why:
// disabled, rate_limited, no_foreground_client or busy (§4.6).
type NotificationResult struct {
	Shown  bool   `json:"shown"`
	Reason string `json:"reason"`
}

// ShowNotification asks Herdr to show a toast. It is sent once: a repeat
// could show it twice.
func (c *Client) ShowNotification(ctx context.Context, n Notification) (NotificationResult, error) {
	var r NotificationResult
	err := c.call(ctx, "notification.show", n, "notification_show", &r, single)
	return r, err
}

// PaneInfo describes a pane (§4.4). Optional fields are empty when absent.
type PaneInfo struct {
	PaneID       string            `json:"pane_id"`
	TerminalID   string            `json:"terminal_id"`
	WorkspaceID  string            `json:"workspace_id"`
	TabID        string            `json:"tab_id"`
	Focused      bool              `json:"focused"`
	AgentStatus  string            `json:"agent_status"`
	Revision     uint64            `json:"revision"`
	Agent        string            `json:"agent,omitempty"`
	Cwd          string            `json:"cwd,omitempty"`
	Label        string            `json:"label,omitempty"`
	Title        string            `json:"title,omitempty"`
	DisplayAgent string            `json:"display_agent,omitempty"`
	Tokens       map[string]string `json:"tokens,omitempty"`
}

// PaneGet describes one pane.
func (c *Client) PaneGet(ctx context.Context, paneID string) (PaneInfo, error) {
	var r struct {
		Pane PaneInfo `json:"pane"`
	}
	err := c.call(ctx, "pane.get", map[string]string{"pane_id": paneID}, "pane_info", &r, retryOnce)
	return r.Pane, err
}

// AgentInfo describes a pane that hosts an agent (§4.5).
type AgentInfo struct {
	PaneID         string `json:"pane_id"`
	TerminalID     string `json:"terminal_id"`
	WorkspaceID    string `json:"workspace_id"`
	TabID          string `json:"tab_id"`
	Focused        bool   `json:"focused"`
	AgentStatus    string `json:"agent_status"`
	Revision       uint64 `json:"revision"`
	Agent          string `json:"agent,omitempty"`
	Name           string `json:"name,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	StateChangeSeq uint64 `json:"state_change_seq,omitempty"`
}

// AgentGet describes the agent in a pane (target is a pane id or an agent
// name). Herdr answers agent_not_found for a pane without an agent.
func (c *Client) AgentGet(ctx context.Context, target string) (AgentInfo, error) {
	var r struct {
		Agent AgentInfo `json:"agent"`
	}
	err := c.call(ctx, "agent.get", map[string]string{"target": target}, "agent_info", &r, retryOnce)
	return r.Agent, err
}

// WorkspaceInfo describes a workspace (§4.3).
type WorkspaceInfo struct {
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	TabCount    int    `json:"tab_count"`
	ActiveTabID string `json:"active_tab_id"`
	AgentStatus string `json:"agent_status"`
}

// TabInfo describes a tab (§4.3).
type TabInfo struct {
	TabID       string `json:"tab_id"`
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	AgentStatus string `json:"agent_status"`
}

// NewPlace says where a new workspace, tab or pane starts.
type NewPlace struct {
	Cwd   string            `json:"cwd,omitempty"`
	Label string            `json:"label,omitempty"`
	Focus bool              `json:"focus,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
}

// WorkspaceCreated is what workspace.create and tab.create return.
type WorkspaceCreated struct {
	Workspace WorkspaceInfo `json:"workspace"`
	Tab       TabInfo       `json:"tab"`
	RootPane  PaneInfo      `json:"root_pane"`
}

// WorkspaceCreate opens a new workspace with one tab and one pane.
func (c *Client) WorkspaceCreate(ctx context.Context, p NewPlace) (WorkspaceCreated, error) {
	var r WorkspaceCreated
	err := c.call(ctx, "workspace.create", p, "workspace_created", &r, creating)
	return r, err
}

// WorkspaceList lists every workspace.
func (c *Client) WorkspaceList(ctx context.Context) ([]WorkspaceInfo, error) {
	var r struct {
		Workspaces []WorkspaceInfo `json:"workspaces"`
	}
	err := c.call(ctx, "workspace.list", nil, "workspace_list", &r, retryOnce)
	return r.Workspaces, err
}

// WorkspaceClose closes a workspace and its panes.
func (c *Client) WorkspaceClose(ctx context.Context, workspaceID string) error {
	return c.call(ctx, "workspace.close", map[string]string{"workspace_id": workspaceID}, "ok", nil, single)
}

// TabCreate opens a tab in workspaceID ("" means the active workspace).
func (c *Client) TabCreate(ctx context.Context, workspaceID string, p NewPlace) (tab TabInfo, root PaneInfo, err error) {
	params := struct {
		WorkspaceID string `json:"workspace_id,omitempty"`
		NewPlace
	}{workspaceID, p}
	var r WorkspaceCreated
	err = c.call(ctx, "tab.create", params, "tab_created", &r, creating)
	return r.Tab, r.RootPane, err
}

// TabRename sets a tab's label.
func (c *Client) TabRename(ctx context.Context, tabID, label string) (TabInfo, error) {
	var r struct {
		Tab TabInfo `json:"tab"`
	}
	err := c.call(ctx, "tab.rename", map[string]string{"tab_id": tabID, "label": label}, "tab_info", &r, retryOnce)
	return r.Tab, err
}

// TabFocus makes a tab the active one (of its workspace, which becomes
// the active workspace).
func (c *Client) TabFocus(ctx context.Context, tabID string) (TabInfo, error) {
	var r struct {
		Tab TabInfo `json:"tab"`
	}
	err := c.call(ctx, "tab.focus", map[string]string{"tab_id": tabID}, "tab_info", &r, retryOnce)
	return r.Tab, err
}

// TabClose closes a tab; closing a workspace's last tab closes the workspace.
func (c *Client) TabClose(ctx context.Context, tabID string) error {
	return c.call(ctx, "tab.close", map[string]string{"tab_id": tabID}, "ok", nil, single)
}

// Split says which pane to split and how.
type Split struct {
	// TargetPaneID is the pane to split; empty means WorkspaceID's focused
	// pane, or the active pane when that is empty too.
	TargetPaneID string `json:"target_pane_id,omitempty"`
	WorkspaceID  string `json:"workspace_id,omitempty"`
	// Direction is "right" or "down".
	Direction string   `json:"direction"`
	Ratio     *float64 `json:"ratio,omitempty"`
	NewPlace
}

// PaneSplit opens a new pane (running the default shell) next to a pane.
func (c *Client) PaneSplit(ctx context.Context, s Split) (PaneInfo, error) {
	params := struct {
		TargetPaneID string            `json:"target_pane_id,omitempty"`
		WorkspaceID  string            `json:"workspace_id,omitempty"`
		Direction    string            `json:"direction"`
		Ratio        *float64          `json:"ratio,omitempty"`
		Cwd          string            `json:"cwd,omitempty"`
		Focus        bool              `json:"focus,omitempty"`
		Env          map[string]string `json:"env,omitempty"`
	}{s.TargetPaneID, s.WorkspaceID, s.Direction, s.Ratio, s.Cwd, s.Focus, s.Env}
	var r struct {
		Pane PaneInfo `json:"pane"`
	}
	err := c.call(ctx, "pane.split", params, "pane_info", &r, creating)
	return r.Pane, err
}

// PaneSendInput types text (bracketed-paste wrapped when the pane's program
// asked for it) followed by keys such as "Enter" into a pane.
func (c *Client) PaneSendInput(ctx context.Context, paneID, text string, keys ...string) error {
	params := struct {
		PaneID string   `json:"pane_id"`
		Text   string   `json:"text,omitempty"`
		Keys   []string `json:"keys,omitempty"`
	}{paneID, text, keys}
	return c.call(ctx, "pane.send_input", params, "ok", nil, single)
}

// PaneClose closes a pane.
func (c *Client) PaneClose(ctx context.Context, paneID string) error {
	return c.call(ctx, "pane.close", map[string]string{"pane_id": paneID}, "ok", nil, single)
}

// Metadata is what pane.report_metadata shows beside a pane: display
// only, it never changes the pane's state. Agent guards it: Herdr shows it
// only while that agent runs in the pane. Herdr trims text and caps it at
// 80 characters; token names match [A-Za-z0-9_-]{1,32}, 16 at most a call.
type Metadata struct {
	PaneID string            `json:"pane_id"`
	Source string            `json:"source"`
	Agent  string            `json:"agent,omitempty"`
	Title  string            `json:"title,omitempty"`
	Tokens map[string]string `json:"tokens,omitempty"`
}

// PaneReportMetadata sets a pane's display metadata for one source.
func (c *Client) PaneReportMetadata(ctx context.Context, m Metadata) error {
	return c.call(ctx, "pane.report_metadata", m, "ok", nil, single)
}

// Process is one foreground process of a pane.
type Process struct {
	PID     int      `json:"pid"`
	Name    string   `json:"name"`
	Argv0   string   `json:"argv0,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Cmdline string   `json:"cmdline,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
}

// ProcessInfo is what runs in a pane.
type ProcessInfo struct {
	PaneID                   string    `json:"pane_id"`
	ShellPID                 *int      `json:"shell_pid"`
	ForegroundProcessGroupID *int      `json:"foreground_process_group_id"`
	ForegroundProcesses      []Process `json:"foreground_processes"`
}

// PaneProcessInfo tells what runs in a pane ("" means the active pane).
func (c *Client) PaneProcessInfo(ctx context.Context, paneID string) (ProcessInfo, error) {
	params := map[string]string{}
	if paneID != "" {
		params["pane_id"] = paneID
	}
	var r struct {
		ProcessInfo ProcessInfo `json:"process_info"`
	}
	err := c.call(ctx, "pane.process_info", params, "pane_process_info", &r, retryOnce)
	return r.ProcessInfo, err
}

// Rect is a cell rectangle in a tab's layout.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Layout is the arrangement of panes in one tab.
type Layout struct {
	WorkspaceID   string `json:"workspace_id"`
	TabID         string `json:"tab_id"`
	Zoomed        bool   `json:"zoomed"`
	Area          Rect   `json:"area"`
	FocusedPaneID string `json:"focused_pane_id"`
	Panes         []struct {
		PaneID  string `json:"pane_id"`
		Focused bool   `json:"focused"`
		Rect    Rect   `json:"rect"`
	} `json:"panes"`
}

// PaneLayout describes the layout of the tab holding paneID ("" means the
// active pane).
func (c *Client) PaneLayout(ctx context.Context, paneID string) (Layout, error) {
	params := map[string]string{}
	if paneID != "" {
		params["pane_id"] = paneID
	}
	var r struct {
		Layout Layout `json:"layout"`
	}
	err := c.call(ctx, "pane.layout", params, "pane_layout", &r, retryOnce)
	return r.Layout, err
}
