package pty

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The copy loop's long waits park its goroutine in Go's network poller
// instead of sleeping in an ordinary ppoll. An ordinary ppoll is a system
// call as far as the scheduler knows: once it has lasted 10 ms sysmon takes
// the loop's P away, and when the next key ends the wait, getting a P back
// wakes sysmon, which then, betting on more such calls, polls every 20 µs for
// a millisecond or more — on the other core, while the key's echo needs it.
// A goroutine parked in the poller holds no P, so sysmon sleeps deeply and
// nothing wakes it: the poller's thread takes an idle P and runs the loop.
//
// Measured on the 2-CPU VM (script, the old build and this one side by
// side, a key into each in turn after a pause of 10–50 ms, 300 keys each):
// sysmon slept 58 times and the machine switched context 141 times per key
// (script: 0 and 17); the wrapper spent 2.0 ms of CPU in the 1.5 s after a
// key; the echo came 58–62 µs after script's at the median and 300–420 µs
// at p99. Parked, with the raw waits below: 3 and 35 per key, 0.85 ms, and
// 9–15 µs and 16–250 µs (three runs each) — those keys mostly came while
// the loop was still in its raw wait. Keys 300–600 ms apart find it
// parked: their echo lagged script's by 56–82 µs at the median (the old
// build's: 95 µs), the poller's wake-up costing ~30 µs more than a raw
// wait's, which is why the raw wait lasts as long as it does.
//
// The poller watches one descriptor for the loop: an epoll instance holding
// the descriptors of the wait, readable when any of them is ready. Only the
// long wait uses it (rawio.go's waitFor spends the first rawWaitLimit in a
// raw ppoll), so bringing its set up to date costs nothing on the hot path.
// The readiness itself is always read by a raw ppoll of the caller's own set,
// which fills in Revents exactly as ppoll would.
//
// For the same reason every system call on the path of a key is raw (a read
// of a private, non-blocking description of the terminal, a write of the
// non-blocking master, the window-size ioctl): an ordinary one wakes a
// sleeping sysmon as it enters, with the same 20 µs polling after it.

// parker waits on a set of descriptors with the goroutine parked.
type parker struct {
	ep  int                // the epoll instance
	f   *os.File           // ep, registered with the runtime's poller
	rc  syscall.RawConn    // f's, to park on it
	has map[int32]struct{} // the descriptors the epoll set holds
}

// newParker makes a parker, or says why it cannot (the caller then waits in
// ordinary ppolls, as before).
func newParker() (*parker, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return nil, err
	}
	// A non-blocking descriptor makes a file the runtime's poller watches.
	f := os.NewFile(uintptr(ep), "pty-wait")
	if f == nil {
		_ = unix.Close(ep)
		return nil, errors.New("cannot make a file of the epoll instance")
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	// A file the poller does not watch would have Read below call the
	// callback once and return; ask for a deadline to find out.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		_ = f.Close()
		return nil, errors.New("the runtime's poller does not watch an epoll instance")
	}
	return &parker{ep: ep, f: f, rc: rc, has: map[int32]struct{}{}}, nil
}

func (p *parker) close() { _ = p.f.Close() }

// ppoll waits as unix.Ppoll(fds, timeout, nil) would, the goroutine parked
// rather than in a system call. The signal mask is not supported: the copy
// loop learns of signals through its waker.
func (p *parker) ppoll(fds []unix.PollFd, timeout *unix.Timespec, sigmask *unix.Sigset_t) (int, error) {
	if sigmask != nil {
		return unix.Ppoll(fds, timeout, sigmask)
	}
	p.watch(fds)
	deadline := time.Time{}
	if timeout != nil {
		deadline = time.Now().Add(time.Duration(timeout.Nano()))
	}
	if err := p.f.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	var n int
	var perr error
	err := p.rc.Read(func(uintptr) bool {
		// The caller's own set says what is ready. The epoll instance
		// needs no draining: an event on any descriptor in it wakes
		// the poller, whatever its list held before.
		n, perr = rawPoll(fds, 0)
		return n != 0 || (perr != nil && !errors.Is(perr, unix.EINTR))
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return n, perr
}

// watch makes the epoll set hold fds and their events, and nothing else.
// Every descriptor is modified each time, even when its events did not
// change: one closed since the last wait has left the set by itself, and
// its number may since name another file, which MOD then does not find and
// ADD adds. A few calls a long wait; the hot path makes none.
func (p *parker) watch(fds []unix.PollFd) {
	for fd := range p.has {
		if !inSet(fds, fd) {
			_ = epollCtl(p.ep, unix.EPOLL_CTL_DEL, fd, 0)
			delete(p.has, fd)
		}
	}
	for _, pf := range fds {
		ev := uint32(pf.Events) & (unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLPRI)
		if epollCtl(p.ep, unix.EPOLL_CTL_MOD, pf.Fd, ev) != nil {
			if err := epollCtl(p.ep, unix.EPOLL_CTL_ADD, pf.Fd, ev); err != nil {
				// Not pollable by epoll (a regular file, always
				// ready): the raw ppoll of the set still sees it,
				// so the wait only misses its wake-up. Never the
				// case for the loop's pty, terminal and eventfd.
				delete(p.has, pf.Fd)
				continue
			}
		}
		p.has[pf.Fd] = struct{}{}
	}
}

func inSet(fds []unix.PollFd, fd int32) bool {
	for _, pf := range fds {
		if pf.Fd == fd {
			return true
		}
	}
	return false
}

// epollCtl is epoll_ctl without telling the scheduler (it never blocks).
func epollCtl(ep, op int, fd int32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: fd}
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(ep), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
