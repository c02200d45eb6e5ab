package pty

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// waker is the eventfd other goroutines use to wake the copy loop. Some of
// them are not Run's (an Injector's writers), so a wake may come after Run
// closed it: it must then do nothing, since the descriptor's number may
// already name another file (a new Run's pty, say) that eight stray bytes
// would corrupt. Wakers hold the lock shared, close holds it exclusively;
// the copy loop itself never takes it.
type waker struct {
	mu sync.RWMutex
	fd int // -1 once closed
}

func newWaker() (*waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("pty: eventfd: %w", err)
	}
	return &waker{fd: fd}, nil
}

// wake makes the descriptor readable. It never blocks (a full counter
// means the loop is awake already).
func (w *waker) wake() {
	one := [8]byte{1}
	w.mu.RLock()
	if w.fd >= 0 {
		_, _ = unix.Write(w.fd, one[:])
	}
	w.mu.RUnlock()
}

// clear resets the counter. Only the copy loop calls it, before close.
func (w *waker) clear() {
	var buf [8]byte
	_, _ = unix.Read(w.fd, buf[:])
}

func (w *waker) close() {
	w.mu.Lock()
	if w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
	w.mu.Unlock()
}
