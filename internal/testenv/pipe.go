package testenv

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// WaitsOnPipe runs fn and reports whether it opened the named pipe at
// fifo and waited there for a writer. The other end is taken only then —
// a writer opens without waiting only while a reader holds the pipe — so
// an fn that waits still ends (reading nothing), and the test with it.
// Each open that waits is let go, however many times fn opens the pipe.
// Only the pipe counts: once fn has put its own file in the pipe's place
// (a rename over it), that file opens for writing too.
func WaitsOnPipe(fifo string, fn func()) bool {
	done := make(chan struct{})
	go func() { // owned by WaitsOnPipe, which waits for it
		defer close(done)
		fn()
	}()
	waited := false
	for {
		select {
		case <-done:
			return waited
		default:
		}
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
				waited = true
			}
			unix.Close(fd)
		}
		runtime.Gosched()
	}
}
