package pty

import (
	"errors"
	"runtime"
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
// goes on in the long wait, parked in the runtime's poller (park.go), which
// holds no P and wakes nothing while the child is quiet. A raw ppoll cannot
// hold up a stop-the-world: unlike a tty read, ppoll is never restarted
// after a signal, so the runtime's preemption signal ends it with EINTR, and
// waitFor lets the goroutine stop before it waits on. The cap keeps an
// idle wrapper from holding a P for ever (woken by sysmon's preemption
// every 10 ms once sysmon is awake) and bounds how long a goroutine queued
// on this P waits when no other P steals it (GOMAXPROCS=1).

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

// rawWaitCap bounds a raw ppoll (see above). Output that comes in bursts
// waits a few hundred microseconds between them, keys typed by a person
// 100–300 ms; an idle child waits for seconds. A key that ends a raw wait
// wakes the loop's own thread, as it would script's; one that ends a parked
// wait goes through the runtime's poller and scheduler first (25–40 µs more
// at the median on the 2-CPU VM). A raw wait costs nothing while it lasts:
// the loop comes to it from a parked wait, whose idle Ps put sysmon into a
// deep sleep that it does not leave for the loop's raw calls. When sysmon is
// awake it preempts the loop every 10 ms, and the wait goes on after a
// Gosched. With one P (GOMAXPROCS=1, a one-CPU container) nothing else runs
// while the loop waits raw: there the cap is rawWaitCapOneP, under sysmon's
// first preemption.
const (
	rawWaitCap     = 250 * time.Millisecond
	rawWaitCapOneP = 8 * time.Millisecond
)

// rawWaitLimit is the cap for the Ps the runtime has now (GOMAXPROCS can
// change while the program runs).
func rawWaitLimit() time.Duration {
	if runtime.GOMAXPROCS(0) == 1 {
		return rawWaitCapOneP
	}
	return rawWaitCap
}

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
// for ever): up to rawWaitLimit of it in a raw ppoll, and what is left, if
// nothing came, in long, the caller's ordinary wait. A signal cuts a raw
// ppoll short: the runtime's own (sysmon preempting a loop that has run
// for 10 ms, a stop-the-world) is let through with a Gosched, the
// goroutine's one point to stop at, and the raw wait goes on.
func waitFor(fds []unix.PollFd, wait time.Duration, long func([]unix.PollFd, *unix.Timespec, *unix.Sigset_t) (int, error)) (int, error) {
	first := rawWaitLimit()
	if wait >= 0 && wait < first {
		first = wait
	}
	start := time.Now()
	left := first
	for {
		n, err := rawPoll(fds, left)
		if n > 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return n, err
		}
		if err == nil {
			break // the raw part has passed
		}
		runtime.Gosched()
		if left = first - time.Since(start); left <= 0 {
			break
		}
	}
	var timeout *unix.Timespec
	if wait >= 0 {
		if wait <= first {
			return 0, nil // the whole wait has passed
		}
		ts := unix.NsecToTimespec(int64(wait - first))
		timeout = &ts
	}
	return long(fds, timeout, nil)
}

// outHandle is how the copy loop writes to the caller's terminal: through
// a private, non-blocking open file description of the same terminal when
// it can have one (raw writes, ppoll when full), else through fd itself
// with ordinary writes. O_NONBLOCK on fd itself would change the file the
// caller's shell shares with us; a new description is ours alone.
type outHandle struct {
	fd  int  // where to write
	own bool // fd is our private description, non-blocking: close it
	// wait is the long wait for a full terminal (waitFor's ordinary
	// part); unix.Ppoll when nil.
	wait func([]unix.PollFd, *unix.Timespec, *unix.Sigset_t) (int, error)
}

// openOut opens the private description of terminal fd for writing, or
// falls back to fd when fd is not a terminal or cannot be opened again (no
// /proc, a terminal we may not open by path); why says why, for the log.
func openOut(fd int) (h outHandle, why string) {
	nfd, why := openOwn(fd, unix.O_WRONLY, "writing to")
	return outHandle{fd: nfd, own: nfd != fd}, why
}

// openIn is openOut for reading the keyboard: the loop reads a private
// description with raw calls (park.go says why), fd itself with ordinary
// ones.
func openIn(fd int) (nfd int, why string) { return openOwn(fd, unix.O_RDONLY, "reading") }

// openOwn opens terminal fd again, non-blocking, for mode (O_RDONLY or
// O_WRONLY); it returns fd itself when it cannot, with why for the log
// (doing: what the loop then does to the terminal with ordinary calls).
func openOwn(fd, mode int, doing string) (int, string) {
	if !IsTerminal(fd) {
		return fd, ""
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), mode|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fd, "cannot open the terminal again (" + err.Error() + "); " + doing + " it with ordinary system calls"
	}
	if !IsTerminal(nfd) {
		// Not the same kind of file after all (a racing rename of the
		// path); do not use something else.
		_ = unix.Close(nfd)
		return fd, "the terminal opened again is not a terminal; " + doing + " it with ordinary system calls"
	}
	return nfd, ""
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
			wait := h.wait
			if wait == nil {
				wait = unix.Ppoll
			}
			n, perr := waitFor(pfd, pollForever, wait)
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

// fillRead tops up a read of the master that came back with part of a
// flood: buf holds n bytes read already, and up to fillReads more
// non-blocking reads add to them until there are fillTo or nothing more
// is there. It returns the bytes in buf now. An error ends it and is
// left for the loop's next read, which meets it again (EIO and EAGAIN
// both repeat).
//
// Why: the line discipline hands the master at most 4 KiB a read, and
// under a flood a read often comes back with less, the rest still on
// its way through the pty's flush worker (a read that finds the buffer
// empty waits for that worker: tty_buffer_flush_work). Written at once,
// each piece was a write to the terminal of its own, each queueing the
// outer pty's worker: under random bytes with escapes (200 MiB, Python
// reader) 75 k writes of 2.8 KB on average against script's 66 k.
// Topped up, they were 44 k of 4.8 KB (the reads 81 k instead of 70 k),
// and the wall time 0.945–0.986 of the build's without it with the
// Python reader (four batches of 14–30 interleaved rounds), level with
// the Go reader. A read under fillFrom (a key's echo, a prompt) is
// written as it came: no extra read sits before the echo. Nothing here
// waits for the child: each extra read is non-blocking, and the most it
// can wait is what the read ending every burst in EAGAIN already waits,
// the flush worker moving bytes already written.
func fillRead(fd int, buf []byte, n int) int {
	for i := 0; i < fillReads && n < fillTo && n < len(buf); i++ {
		m, err := rawRead(fd, buf[n:])
		if m <= 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
		n += m
	}
	return n
}
