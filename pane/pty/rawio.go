package pty

import (
	"errors"
	"strconv"
	"time"
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
// A raw read or write must never block: the goroutine keeps its P
// throughout, so a stop-the-world (a GC) would wait for it — a tty read is
// restarted after the runtime's preemption signal. Both descriptors are
// therefore non-blocking — the pty master always, the terminal through a
// private open file description (outHandle).
//
// Waits are the exception, and only short ones. Under a flood the loop
// waits often and briefly (the terminal full, the child between writes):
// each such wait made through the scheduler let sysmon take the P away and
// then poll every 20 µs for a millisecond or more — ~6,500 of its sleeps per
// 200 MiB, the largest share of the runtime's cost in the wrapper. So a wait
// first spends up to rawWaitCap in a raw ppoll, which keeps the P (1,400
// sleeps per 200 MiB, same machine, same run); only a wait that outlasts it
// goes on in an ordinary ppoll, which gives the P up. A raw ppoll cannot
// hold up a stop-the-world: unlike a tty read, ppoll is never restarted
// after a signal, so the runtime's preemption signal ends it with EINTR. What
// the cap bounds is how long a goroutine queued on this P waits when no
// other P steals it (GOMAXPROCS=1), and it keeps an idle wrapper asleep in
// the ordinary wait rather than woken by sysmon's preemption every 10 ms.

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

// rawWaitCap bounds a raw ppoll (see above). Output that comes in
// bursts waits a few hundred microseconds between them; an idle child
// waits for seconds.
const rawWaitCap = 2 * time.Millisecond

// rawPoll is ppoll for at most d without telling the scheduler. It returns
// the number of ready descriptors, 0 when d passed, or the error (EINTR
// when a signal came).
func rawPoll(fds []unix.PollFd, d time.Duration) (int, error) {
	ts := unix.NsecToTimespec(int64(d))
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// waitFor waits as ppoll(fds, timeout) would, for at most wait (negative:
// for ever): up to rawWaitCap of it in a raw ppoll, and what is left, if
// nothing came, in ppoll, the ordinary call the caller passes.
func waitFor(fds []unix.PollFd, wait time.Duration, ppoll func([]unix.PollFd, *unix.Timespec, *unix.Sigset_t) (int, error)) (int, error) {
	first := rawWaitCap
	if wait >= 0 && wait < first {
		first = wait
	}
	n, err := rawPoll(fds, first)
	if n > 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
		return n, err
	}
	var timeout *unix.Timespec
	if wait >= 0 {
		if err == nil && wait <= first {
			return 0, nil // the whole wait has passed
		}
		ts := unix.NsecToTimespec(int64(max(wait-first, 0)))
		timeout = &ts
	}
	return ppoll(fds, timeout, nil)
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
func (h outHandle) write(p []byte) error { return h.writeServing(p, nil, nil) }

// errServeStopped is writeServing's error when serve gave the write up.
var errServeStopped = errors.New("write given up")

// writeServing is write that, while the terminal is full, waits on the
// poll set watch makes of the terminal's entry and the descriptors it
// adds (the caller's own slice, so a wait makes no garbage under a
// flood), and calls serve with the results past the terminal's when any
// is ready; serve returning false gives the write up (errServeStopped).
// The copy loop reads the keyboard and takes signals this way: a terminal
// that takes no output for a while still takes keys, and Ctrl-C or a
// SIGTERM reaches a flooding child as it would a bare one.
func (h outHandle) writeServing(p []byte, watch func(out unix.PollFd) []unix.PollFd, serve func([]unix.PollFd) bool) error {
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
			out := unix.PollFd{Fd: int32(h.fd), Events: unix.POLLOUT}
			var pfd []unix.PollFd
			if watch != nil {
				pfd = watch(out)
			} else {
				pfd = []unix.PollFd{out}
			}
			n, perr := waitFor(pfd, pollForever, unix.Ppoll)
			if perr != nil && !errors.Is(perr, unix.EINTR) {
				return perr
			}
			if n > 0 && len(pfd) > 1 && !serve(pfd[1:]) {
				return errServeStopped
			}
		case err == nil, errors.Is(err, unix.EINTR):
		default:
			return err
		}
	}
	return nil
}
