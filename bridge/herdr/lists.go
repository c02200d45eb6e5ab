package herdr

import "context"

// TabList lists the tabs of a workspace ("" means every workspace).
func (c *Client) TabList(ctx context.Context, workspaceID string) ([]TabInfo, error) {
	var r struct {
		Tabs []TabInfo `json:"tabs"`
	}
	err := c.call(ctx, "tab.list", optionalWorkspace(workspaceID), "tab_list", &r, retryOnce)
	return r.Tabs, err
}

// PaneList lists the panes of a workspace ("" means every workspace).
func (c *Client) PaneList(ctx context.Context, workspaceID string) ([]PaneInfo, error) {
	var r struct {
		Panes []PaneInfo `json:"panes"`
	}
	err := c.call(ctx, "pane.list", optionalWorkspace(workspaceID), "pane_list", &r, retryOnce)
	return r.Panes, err
}

func optionalWorkspace(id string) any {
	if id == "" {
		return struct{}{}
	}
	return map[string]string{"workspace_id": id}
}
