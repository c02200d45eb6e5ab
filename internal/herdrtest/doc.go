// Package herdrtest is an in-process fake Herdr server for tests: a unix
// socket that speaks protocol 20 as strictly as the real one (see
// ../shared/reference/herdr-socket-api.md §12), keeps workspaces, tabs and
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
package herdrtest
