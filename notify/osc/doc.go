// Package osc builds the desktop-notification escape sequences terminals
// understand — OSC 9, OSC 99 and OSC 777 — from untrusted text, wraps them
// for tmux, and picks the protocol for a terminal from TERM_PROGRAM. It only
// makes bytes: it never writes to a terminal, reads a file or asks tmux.
//
// Byte sequences, tables and sanitising rules follow the seed package
// @xzzpig/pi-terminal-notifications v0.1.1 as described in
// ../shared/reference/notifications-and-sentinel.md (§3.2, §4.1, §5.1, §26).
package osc
