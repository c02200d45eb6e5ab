// Package launch reads the command line `herdr-pi wrap` was given for an
// agent: which leading part starts it — the agent's own program, a
// JavaScript runtime running a script (node, bun, deno, tsx), or a package
// runner running a package's command (npx, bunx, pnpm dlx, npm exec, yarn
// dlx) — and where the agent's own arguments begin. With that, herdr-pi puts
// the arguments it adds (Pi's -e for the probe) where the agent reads them
// rather than where the runtime would take them as its own, reads Pi's mode
// and session options where Pi reads them, recognises Pi behind a runtime or
// runner, and writes the herdr-pi command that resumes a Pi session.
//
// It only reads command lines and Pi's output; it starts nothing. When a
// shape is not understood it says so ([Opaque]) instead of guessing where
// arguments go.
package launch
