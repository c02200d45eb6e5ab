package handoff

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// CheckSelf says whether a pane can still start herdr-pi at self, the
// path this process found itself at. A wrapper runs for days and goes on
// from the kernel's copy of its binary (its session leader is
// /proc/self/exe), but a pane is another process that needs the path: an
// upgrade that moved herdr-pi, or an uninstall, would leave the pane
// with "not found" after the owner's session was suspended for it. way
// is what to do about it, for the caller's situation.
func CheckSelf(self, way string) error {
	if err := unix.Access(self, unix.X_OK); err != nil {
		return fmt.Errorf("herdr-pi is no longer at %s, where this process found it when it started (%v; moved or removed by an upgrade?), "+
			"and the pane would run it: %s", shellword.Word(self), err, way)
	}
	return nil
}
