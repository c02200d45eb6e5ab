package control

import (
	"fmt"
	"net"
	"os"
)

// ListenPrivate listens on a unix socket at path and makes it 0600: the
// one way every socket herdr-pi serves (the control socket, the tool
// bridge, the demo's Herdr stand-in) comes to be. The caller has checked
// that path's directory is private already; the socket's own mode keeps
// others out should that directory's mode be loosened later, whatever the
// umask was. Closing the listener removes the socket file. A path that is
// already taken (another listener, a stale file) is an error, never
// removed: nothing of someone else's is replaced.
func ListenPrivate(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}
