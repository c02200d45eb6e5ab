package herdrtest

// knownMethods are the 91 methods of protocol 20 (herdr-socket-api.md §4.1).
// A known method the fake does not implement answers not_implemented; any
// other method is an invalid request, as in Herdr.
var knownMethods = map[string]bool{}

func init() {
	for _, m := range []string{
		"ping", "server.stop", "server.live_handoff", "server.reload_config", "server.agent_manifests",
		"server.reload_agent_manifests", "notification.show", "client.window_title.set",
		"client.window_title.clear", "session.snapshot", "workspace.create", "workspace.list",
		"workspace.get", "workspace.focus", "workspace.rename", "workspace.move", "workspace.move_block",
		"workspace.report_metadata", "workspace.close", "worktree.list", "worktree.create", "worktree.open",
		"worktree.remove", "tab.create", "tab.list", "tab.get", "tab.focus", "tab.rename", "tab.move",
		"tab.close", "agent.list", "agent.get", "agent.read", "agent.explain", "agent.send_keys",
		"agent.rename", "agent.view.set", "agent.view.clear", "agent.focus", "agent.start", "agent.prompt",
		"agent.wait", "pane.split", "pane.swap", "pane.move", "pane.zoom", "pane.layout",
		"pane.process_info", "layout.export", "layout.apply", "layout.set_split_ratio", "pane.neighbor",
		"pane.edges", "pane.focus_direction", "pane.resize", "pane.list", "pane.current", "pane.get",
		"pane.focus", "pane.input.set", "pane.rename", "pane.send_text", "pane.send_keys",
		"pane.send_input", "pane.read", "pane.graphics.set", "pane.graphics.clear", "pane.graphics.info",
		"pane.report_agent", "pane.report_agent_session", "pane.report_metadata",
		"pane.clear_agent_authority", "pane.release_agent", "pane.close", "popup.close",
		"events.subscribe", "events.wait", "pane.wait_for_output", "integration.install",
		"integration.uninstall", "plugin.link", "plugin.list", "plugin.unlink", "plugin.enable",
		"plugin.disable", "plugin.action.list", "plugin.action.invoke", "plugin.log.list",
		"plugin.pane.open", "plugin.pane.focus", "plugin.pane.close",
	} {
		knownMethods[m] = true
	}
}
