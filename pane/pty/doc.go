// Package pty runs one command under a pseudo-terminal and passes the caller's
// terminal through to it untouched: raw mode, window size, signals and exit
// status. Output reaches the caller's terminal first; observers get a copy
// through a bounded, non-blocking hand-off ([Tap]) and can never slow the child.
//
// It knows nothing about agents, screens or Herdr.
package pty
