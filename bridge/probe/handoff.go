package probe

import (
	_ "embed"
	"path/filepath"
)

// handoff.js is the workflow owner's side of live handoff: probe.js
// imports it (as HandoffFileName, beside itself), and it does anything only
// when the workflow engine is loaded in that Pi. Its messages are bridge/control's
// owner link.
//
//go:embed handoff.js
var handoffSource []byte

// HandoffFileName is the handoff module's name in the run directory, where
// probe.js imports it from.
const HandoffFileName = "herdr-pi-handoff.mjs"

// HandoffSource is the handoff module's JavaScript.
func HandoffSource() []byte { return append([]byte(nil), handoffSource...) }

// writeHandoff puts the handoff module beside the probe (0600).
func writeHandoff(dir string) error {
	_, err := writeFile(filepath.Join(dir, HandoffFileName), handoffSource)
	return err
}
