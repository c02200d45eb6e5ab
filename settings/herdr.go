package settings

import "strings"

// Herdr is the pane environment Herdr gives every process it starts.
type Herdr struct {
	SocketPath  string
	PaneID      string
	TabID       string
	WorkspaceID string
}

// HerdrEnv reports the Herdr environment and whether it is complete: HERDR_ENV
// is exactly "1" and both HERDR_SOCKET_PATH and HERDR_PANE_ID are non-blank.
// Outside a complete environment herdr-pi sends nothing to Herdr.
func HerdrEnv(env Env) (Herdr, bool) {
	h := Herdr{
		SocketPath:  strings.TrimSpace(env.Get("HERDR_SOCKET_PATH")),
		PaneID:      strings.TrimSpace(env.Get("HERDR_PANE_ID")),
		TabID:       strings.TrimSpace(env.Get("HERDR_TAB_ID")),
		WorkspaceID: strings.TrimSpace(env.Get("HERDR_WORKSPACE_ID")),
	}
	ok := env.Get("HERDR_ENV") == "1" && h.SocketPath != "" && h.PaneID != ""
	return h, ok
}

// MissingHerdr names what is missing from an incomplete Herdr environment,
// for doctor and error messages.
func MissingHerdr(env Env) []string {
	var missing []string
	if env.Get("HERDR_ENV") != "1" {
		missing = append(missing, `HERDR_ENV (must be "1")`)
	}
	if strings.TrimSpace(env.Get("HERDR_SOCKET_PATH")) == "" {
		missing = append(missing, "HERDR_SOCKET_PATH")
	}
	if strings.TrimSpace(env.Get("HERDR_PANE_ID")) == "" {
		missing = append(missing, "HERDR_PANE_ID")
	}
	return missing
}
