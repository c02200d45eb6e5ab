// Package bridge groups herdr-pi's wire protocols: the Herdr socket client
// and reporter (bridge/herdr), the wrapper's private control socket
// (bridge/control), the embedded Pi probe extension (bridge/probe), and the
// custom-tool bridge of a live handoff (bridge/tools).
package bridge
