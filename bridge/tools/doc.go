// Package tools is the custom-tool bridge of a live handoff. A workflow
// agent's custom tools exist only inside the Pi that owns the run (their
// execute closures); when the agent continues in a Herdr pane, the pane's
// Pi calls them through this bridge.
//
// The owner side is a Go server on a private unix socket ([Serve]): it
// checks the caller's uid and the handoff's token, and hands each call to
// an [Executor] the wrapper implements. The pane side is a small generated
// Pi extension ([ClientExtension]) that registers the tools and forwards
// every call over the socket.
//
// It moves calls; it does not run tools, choose which tools exist, or
// decide when a handoff starts or ends.
package tools
