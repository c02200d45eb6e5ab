package control

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// WriteNewFile writes data to path as a new 0600 file: the one way a file
// Pi loads from the private run directory (the probe, its handoff module,
// the launcher, the tool bridge's client extension) is written. Nothing
// else writes those names, so whatever is at path already (a symlink, a
// file) is not ours and is refused (an error matching fs.ErrExist), never
// followed or rewritten: Pi would load it. A file that cannot be written
// whole is removed (half a module is none, and it is ours: O_EXCL made
// it); that error says "writing <path>". An error opening path is
// returned as the open gave it.
func WriteNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
