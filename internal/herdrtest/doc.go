// Package herdrtest is an in-process fake Herdr server for tests: a unix
// socket that speaks protocol 20 as strictly as the real one (see
// ../shared/reference/herdr-socket-api.md §12), or protocol 22 (Herdr 0.9,
// Options.Protocol; see [Protocol22] for what differs), keeps workspaces, tabs and
// panes with Herdr-shaped ids, records every request for assertions, and can
// be told to be slow, hang, drop connections or answer garbage.
//
// When the reference schema (../shared/reference/herdr/herdr-api.schema.json)
// is reachable, every request line is validated against it, and so is every
// line the fake writes; a mismatch is a violation that [Start] turns into a
// test failure. Without the file (a fresh clone) the check is skipped with a
// logged message.
//
// Typical use:
//
//	s := herdrtest.Start(t)
//	cmd.Env = append(os.Environ(), s.Env()...)
//	…
//	s.WaitFor(t, 5*time.Second, "a release", func() bool { return len(s.Releases(s.PaneID())) > 0 })
//
// With Options.RealPanes every pane is a real shell in a real pty: a
// private tmux server per fake (workspace → session, tab → window, pane →
// pane) whose panes get Herdr's pane environment, take pane.send_input as
// typed input, and end for real (pane.exited with the exit status, or
// killed by pane.close). A test reads a pane with Screen, Output and
// WaitForText, and its end with Exited and WaitExited; Close ends the tmux
// server and everything that ran in it. Without tmux, Start ends the test
// through testenv.Missing.
//
//	s := herdrtest.Start(t, herdrtest.Options{RealPanes: &herdrtest.RealPanes{}})
//	… a client splits w1:p1 and types a command into the new pane w1:p2 …
//	s.WaitForText(t, "w1:p2", "ready", 10*time.Second)
//	ex := s.WaitExited(t, "w1:p2", 10*time.Second) // ex.Code, ex.Screen
package herdrtest
