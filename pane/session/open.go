package session

import (
	"fmt"
	"os"
	"syscall"
)

// notRegularError says a session file's path holds something else: a
// named pipe, a device, a socket, a directory.
type notRegularError struct {
	path string
	mode os.FileMode
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%v), not followed", e.path, e.mode.Type())
}

// openRegular opens the session file at path for reading. O_NONBLOCK: a
// named pipe in its place has no writer, and a blocking open of it would
// never return, leaving the watcher (and the wrapper's way out, which
// waits for it) stuck; anything but a regular file is then refused. On a
// regular file O_NONBLOCK changes nothing.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &notRegularError{path: path, mode: fi.Mode()}
	}
	return f, fi, nil
}
