// Package pty runs one command under a pseudo-terminal and passes the caller's
// terminal through to it untouched: raw mode, window size, signals and exit
// status. Output reaches the caller's terminal first; observers get a copy
// through a bounded, non-blocking hand-off ([Tap]) and can never slow the child.
//
// The command runs under a small session leader (this binary re-executed,
// package leader; why in leader.go) so that job control works as in a
// shell: a command that stops itself (Ctrl-Z) stops the wrapper too, and fg
// resumes both.
//
// It knows nothing about agents, screens or Herdr.
package pty
