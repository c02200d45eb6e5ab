package pty

import (
	"errors"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The copy loop's hot system calls bypass the Go scheduler's syscall
// bookkeeping. A read or write made through syscall.Syscall marks the
// thread as in a system call; when such a call blocks for a while (the
// terminal full, the machine busy) sysmon takes the loop's P away and hands
// it to another thread, and from then on wakes every 20 µs for a
// millisecond or more. Under a flood that was ~17,000 extra wake-ups and
// ~25,000 futex calls per 200 MiB on a 2-core machine, each one taking a
// core from the child or the terminal: a bare Go copy loop was 1.17× slower
// than util-linux script, the same loop with raw calls 0.96×.
//
// A raw call must never block: the goroutine keeps its P throughout, so a
// stop-the-world (a GC) would wait for it. Both descriptors are therefore
// non-blocking — the pty master always, the terminal through a private
// open file description (outHandle) — and every wait goes through ppoll,
// which is an ordinary (scheduler-aware) system call.

// rawRead reads from a non-blocking descriptor without telling the
// scheduler.
func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawWrite writes to a non-blocking descriptor without telling the
// scheduler.
func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// outHandle is how the copy loop writes to the caller's terminal: through
// a private, non-blocking open file description of the same terminal when
// it can have one (raw writes, ppoll when full), else through fd itself
// with ordinary writes. O_NONBLOCK on fd itself would change the file the
// caller's shell shares with us; a new description is ours alone.
type outHandle struct {
	fd  int  // where to write
	own bool // fd is our private description, non-blocking: close it
}

// openOut opens the private description of terminal fd, or falls back to
// fd when fd is not a terminal or cannot be opened again (no /proc, a
// terminal we may not open by path); why says why, for the log.
func openOut(fd int) (h outHandle, why string) {
	if !IsTerminal(fd) {
		return outHandle{fd: fd}, ""
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return outHandle{fd: fd}, "cannot open the terminal again (" + err.Error() + "); writing to it with ordinary system calls"
	}
	if !IsTerminal(nfd) {
		// Not the same kind of file after all (a racing rename of the
		// path); do not write to something else.
		_ = unix.Close(nfd)
		return outHandle{fd: fd}, "the terminal opened again is not a terminal; writing to it with ordinary system calls"
	}
	return outHandle{fd: nfd, own: true}, ""
}

func (h outHandle) close() {
	if h.own {
		_ = unix.Close(h.fd)
	}
}

// write writes all of p or returns the error that stopped it. A full
// terminal is waited for in ppoll; EINTR is retried.
func (h outHandle) write(p []byte) error {
	for len(p) > 0 {
		var n int
		var err error
		if h.own {
			n, err = rawWrite(h.fd, p)
		} else {
			n, err = unix.Write(h.fd, p)
		}
		if n > 0 {
			p = p[n:]
		}
		full := errors.Is(err, unix.EAGAIN) ||
			// A short write to our non-blocking description means the
			// terminal is full: wait at once rather than try again for an
			// EAGAIN (a third of the writes under a flood).
			(err == nil && h.own && len(p) > 0)
		switch {
		case full:
			// Ours is full, or someone else made a shared stdout
			// non-blocking: wait until it takes more, as a blocking
			// write would.
			pfd := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLOUT}}
			if _, perr := unix.Ppoll(pfd, nil, nil); perr != nil && !errors.Is(perr, unix.EINTR) {
				return perr
			}
		case err == nil, errors.Is(err, unix.EINTR):
		default:
			return err
		}
	}
	return nil
}
