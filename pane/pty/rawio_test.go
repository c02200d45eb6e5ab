package pty

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The copy loop writes to the caller's terminal through its own
// non-blocking description: the caller's file stays blocking (the shell
// shares it), and a terminal that fills up — its reader slower than us —
// still gets every byte, in order.
func TestOutHandleWritesEveryByteToASlowTerminal(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(master)
	defer slave.Close()
	if _, err := rawMode(int(slave.Fd())); err != nil { // no CR added to the payload's LFs
		t.Fatal(err)
	}
	h, why := openOut(int(slave.Fd()))
	if !h.own || why != "" {
		t.Fatalf("no private description of a terminal: %q", why)
	}
	defer h.close()
	if h.fd == int(slave.Fd()) {
		t.Fatal("the private description is the caller's descriptor")
	}
	if fl, _ := unix.FcntlInt(slave.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Fatal("the caller's terminal was made non-blocking")
	}
	if fl, _ := unix.FcntlInt(uintptr(h.fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 {
		t.Fatal("the private description blocks: a raw write on it could stall a stop-the-world")
	}

	// 1 MiB in one write: far more than a pty holds, so the write must
	// wait for the reader several times.
	payload := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range payload {
		payload[i] = byte(rng.IntN(256))
	}
	got := make(chan []byte)
	go func() {
		var all []byte
		buf := make([]byte, 512) // a slow reader: small reads
		pfd := []unix.PollFd{{Fd: int32(master), Events: unix.POLLIN}}
		for len(all) < len(payload) {
			if _, err := unix.Poll(pfd, 10_000); err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
			n, err := unix.Read(master, buf)
			if n > 0 {
				all = append(all, buf[:n]...)
			}
			if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				break
			}
			if pfd[0].Revents&unix.POLLIN == 0 && n == 0 {
				break // poll timed out: the writer stalled
			}
		}
		got <- all
	}()
	if err := h.write(payload); err != nil {
		t.Fatal(err)
	}
	all := <-got
	if sha256.Sum256(all) != sha256.Sum256(payload) {
		t.Fatalf("the terminal got %d bytes, not the %d written (or not in order)", len(all), len(payload))
	}
}

// A terminal that hangs up while the copy loop waits for room ends the
// write with an error (the loop then hangs the child up) instead of
// waiting forever.
func TestOutHandleReportsAHungUpTerminal(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	h, _ := openOut(int(slave.Fd()))
	defer h.close()
	done := make(chan error, 1)
	go func() { done <- h.write(bytes.Repeat([]byte("x"), 1<<20)) }()
	// Nobody reads: the write fills the terminal and waits. Closing the
	// master hangs the terminal up.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if n, err := unix.IoctlGetInt(master, unix.TIOCINQ); err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing reached the terminal in a minute")
		}
	}
	_ = unix.Close(master)
	if err := <-done; err == nil {
		t.Fatal("a write to a hung-up terminal reported success")
	}
}

// Not a terminal (a pipe, a file): the handle is the caller's descriptor,
// written with ordinary calls; a pipe someone else made non-blocking is
// waited on rather than dropped.
func TestOutHandleFallsBackForPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	h, why := openOut(int(w.Fd()))
	if h.own || h.fd != int(w.Fd()) || why != "" {
		t.Fatalf("a pipe got %+v (%q), want the caller's descriptor as it is", h, why)
	}
	if err := unix.SetNonblock(int(w.Fd()), true); err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, far over a pipe's 64 KiB
	got := make(chan int)
	go func() {
		var n int
		buf := make([]byte, 4096)
		for n < len(payload) {
			k, err := r.Read(buf)
			n += k
			if err != nil {
				break
			}
		}
		got <- n
	}()
	if err := h.write(payload); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != len(payload) {
		t.Fatalf("read %d of %d bytes", n, len(payload))
	}
	h.close() // not ours: must leave the caller's descriptor open
	if _, err := unix.FcntlInt(w.Fd(), unix.F_GETFD, 0); err != nil {
		t.Fatalf("closing the handle closed the caller's pipe: %v", err)
	}
}

// Raw reads and writes behave as read(2) and write(2): EAGAIN on an empty
// non-blocking master, nothing for an empty buffer.
func TestRawReadAndWrite(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(master)
	defer slave.Close()
	if _, err := rawRead(master, make([]byte, 16)); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("raw read of an empty master: %v, want EAGAIN", err)
	}
	if n, err := rawRead(master, nil); n != 0 || err != nil {
		t.Fatalf("raw read into nothing: %d, %v", n, err)
	}
	if n, err := rawWrite(master, []byte("hi\n")); n != 3 || err != nil {
		t.Fatalf("raw write: %d, %v", n, err)
	}
	buf := make([]byte, 16)
	n, err := slave.Read(buf)
	if err != nil || string(buf[:n]) != "hi\n" {
		t.Fatalf("the slave read %q, %v", buf[:n], err)
	}
	if _, err := rawWrite(-1, []byte("x")); !errors.Is(err, unix.EBADF) {
		t.Fatalf("raw write to a bad descriptor: %v, want EBADF", err)
	}
}

// recordingPoll is an ordinary ppoll that notes how it was called.
type recordingPoll struct {
	calls   int
	timeout *unix.Timespec
}

func (r *recordingPoll) ppoll(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
	r.calls++
	if ts != nil {
		c := *ts
		r.timeout = &c
	}
	return unix.Ppoll(fds, ts, sm)
}

func pipeFds(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

// A descriptor that is ready is reported by the raw wait alone; one that
// stays quiet past the raw wait's cap is waited for in the ordinary call,
// for what is left of the wait, or for ever.
func TestWaitForRawFirstThenOrdinary(t *testing.T) {
	r, w := pipeFds(t)
	if _, err := unix.Write(w, []byte("x")); err != nil {
		t.Fatal(err)
	}
	var rec recordingPoll
	fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
	if n, err := waitFor(fds, pollForever, rec.ppoll); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
		t.Fatalf("ready pipe: waitFor = %d, %v, revents %#x", n, err, fds[0].Revents)
	}
	if rec.calls != 0 {
		t.Fatalf("a ready descriptor reached the ordinary ppoll (%d calls)", rec.calls)
	}

	var buf [1]byte
	_, _ = unix.Read(r, buf[:])
	fds[0].Revents = 0
	if n, err := waitFor(fds, rawWaitLimit()+50*time.Millisecond, rec.ppoll); n != 0 || err != nil {
		t.Fatalf("quiet pipe: waitFor = %d, %v", n, err)
	}
	if rec.calls != 1 || rec.timeout == nil || time.Duration(rec.timeout.Nano()) != 50*time.Millisecond {
		t.Fatalf("the ordinary ppoll got %d calls, timeout %v; want one call for the 50ms left", rec.calls, rec.timeout)
	}

	// A wait within the cap is the raw wait's alone; were the raw wait cut
	// short by a signal, the ordinary call would not wait longer than was
	// left.
	rec = recordingPoll{}
	if n, err := waitFor(fds, rawWaitLimit()/2, rec.ppoll); n != 0 || err != nil {
		t.Fatalf("short wait: waitFor = %d, %v", n, err)
	}
	if rec.calls > 1 || rec.calls == 1 && (rec.timeout == nil || rec.timeout.Nano() != 0) {
		t.Fatalf("short wait: %d ordinary calls, timeout %v", rec.calls, rec.timeout)
	}

	// For ever: the ordinary call has no timeout and returns when data comes.
	rec = recordingPoll{}
	go func() {
		time.Sleep(3 * rawWaitLimit())
		_, _ = unix.Write(w, []byte("y"))
	}()
	if n, err := waitFor(fds, pollForever, rec.ppoll); n != 1 || err != nil {
		t.Fatalf("wait for ever: waitFor = %d, %v", n, err)
	}
	if rec.calls != 1 || rec.timeout != nil {
		t.Fatalf("wait for ever: %d ordinary calls, timeout %v; want one without a timeout", rec.calls, rec.timeout)
	}
}

// A goroutine in a raw wait keeps its P, yet a stop-the-world does not
// wait for it: the runtime's preemption signal ends a ppoll (it is never
// restarted), where it would not end a blocking tty read. Were the
// collection held up, it would end only with the minute-long poll.
func TestRawWaitDoesNotHoldUpAGarbageCollection(t *testing.T) {
	r, w := pipeFds(t)
	fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
	polled := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		var err error
		for n := 0; n == 0 && (err == nil || errors.Is(err, unix.EINTR)); {
			n, err = rawPoll(fds, time.Minute)
		}
		polled <- err
	}()
	<-started
	time.Sleep(10 * time.Millisecond) // into the poll
	start := time.Now()
	runtime.GC()
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("a garbage collection waited %v for a raw ppoll", took)
	}
	if _, err := unix.Write(w, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
}

// The keyboard is read through a private, non-blocking description of the
// terminal (raw reads, park.go), a pipe through itself.
func TestOpenInGivesATerminalAPrivateNonBlockingDescription(t *testing.T) {
	_, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	fd, why := openIn(int(slave.Fd()))
	if fd == int(slave.Fd()) || why != "" {
		t.Fatalf("a terminal got %d (%q), want a description of its own", fd, why)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 || fl&unix.O_ACCMODE != unix.O_RDONLY {
		t.Fatalf("flags %#x (%v), want read-only and non-blocking", fl, err)
	}
	if fl, err := unix.FcntlInt(slave.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the caller's description became non-blocking: %#x (%v)", fl, err)
	}
	if n, err := rawRead(fd, make([]byte, 8)); n != 0 || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("a raw read with nothing typed = %d, %v; want EAGAIN at once", n, err)
	}

	r, _ := pipeFds(t)
	if fd, why := openIn(r); fd != r || why != "" {
		t.Fatalf("a pipe got %d (%q), want itself", fd, why)
	}
}

// fillRead adds what the master holds to a read that came back with
// part of a flood, up to fillTo bytes and the room in the buffer, and
// leaves the rest (and an empty master) to the loop's next read.
func TestFillReadTopsUpAPartReadOfAFlood(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(master)
	defer slave.Close()
	pending := func(n int) {
		t.Helper()
		if _, err := slave.Write(bytes.Repeat([]byte("a"), n)); err != nil {
			t.Fatal(err)
		}
		fds := []unix.PollFd{{Fd: int32(master), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 5000); err != nil || fds[0].Revents&unix.POLLIN == 0 {
			t.Fatalf("the master never had the slave's %d bytes to read: %v", n, err)
		}
	}
	drained := func() int {
		t.Helper()
		total := 0
		for {
			n, err := rawRead(master, make([]byte, 64<<10))
			if n <= 0 {
				if !errors.Is(err, unix.EAGAIN) {
					t.Fatalf("draining the master: %v", err)
				}
				return total
			}
			total += n
		}
	}
	prefix := func(buf []byte, n int) []byte {
		copy(buf, bytes.Repeat([]byte("p"), n))
		return buf
	}

	buf := prefix(make([]byte, readChunk), 1500)
	if got := fillRead(master, buf, 1500); got != 1500 {
		t.Fatalf("with nothing in the master: %d bytes, want the 1500 given", got)
	}

	pending(2000)
	if got := fillRead(master, buf, 1500); got != 3500 || string(buf[:got]) != strings.Repeat("p", 1500)+strings.Repeat("a", 2000) {
		t.Fatalf("a part read of 1500 with 2000 more in the master: %d bytes %.40q…, want 3500, the 2000 after the 1500", got, buf[:got])
	}

	pending(100)
	if got := fillRead(master, buf, fillTo); got != fillTo {
		t.Fatalf("a read of %d already, with 100 more in the master: %d bytes, want it left as it was", fillTo, got)
	}
	if left := drained(); left != 100 {
		t.Fatalf("the master held %d bytes after a fill that had nothing to do, want the 100 left to the next read", left)
	}

	small := prefix(make([]byte, 1600), 1500)
	pending(2000)
	if got := fillRead(master, small, 1500); got != 1600 {
		t.Fatalf("a buffer with room for 100 more: %d bytes, want 1600", got)
	}
	if left := drained(); left != 1900 {
		t.Fatalf("the master held %d bytes after filling the buffer's room, want the other 1900", left)
	}
}
