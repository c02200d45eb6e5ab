// Package herdr speaks Herdr's socket protocol (protocol 20, see
// ../shared/reference/herdr-socket-api.md, and Herdr 0.9's protocol 22,
// ../shared/reference/landscape.md §9): a [Client] that sends one NDJSON
// request per connection under a client-side deadline, a [Reporter] that
// keeps one pane's agent state in Herdr without ever blocking its caller, a
// [Watcher] that follows Herdr's event stream across reconnects, and a
// [Presence] that puts them together for the life of a wrapper: claim the
// pane, report, report again when Herdr comes back, release at the end.
//
// It knows nothing about ptys, screens or how a state was decided; it only
// delivers what it is given, in order, and takes it back at the end.
package herdr
