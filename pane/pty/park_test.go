package pty

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// parkedIn waits until a goroutine is parked in the runtime's poller
// ("IO wait") inside fn, and fails the test when none is within 10 s. A
// goroutine in an ordinary system call shows as "syscall" instead.
func parkedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		last = string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(last, "\n\n") {
			if strings.Contains(g, "[IO wait") && strings.Contains(g, fn) {
				return
			}
		}
	}
	t.Fatalf("no goroutine parked in %s; goroutines:\n%s", fn, last)
}

func newTestParker(t *testing.T) *parker {
	t.Helper()
	p, err := newParker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

type pollResult struct {
	n   int
	err error
}

// parkedPoll runs p.ppoll(fds, timeout) on a goroutine and returns once it
// is parked; the result comes on the channel.
func parkedPoll(t *testing.T, p *parker, fds []unix.PollFd, timeout *unix.Timespec) <-chan pollResult {
	t.Helper()
	res := make(chan pollResult, 1)
	go func() {
		n, err := p.ppoll(fds, timeout, nil)
		res <- pollResult{n, err}
	}()
	parkedIn(t, "(*parker).ppoll")
	return res
}

func waitResult(t *testing.T, res <-chan pollResult) pollResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the parked wait did not return within 10 s")
		return pollResult{}
	}
}

// A parked wait ends as ppoll's would, for each kind of descriptor the copy
// loop waits on, and fills in Revents the same way: the pty master with
// output, the caller's terminal with input, the waker, and a full
// descriptor that takes more.
func TestAParkedWaitEndsForEachDescriptorTheLoopWaitsOn(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(master); slave.Close() })
	w, err := newWaker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	fullR, fullW := pipeFds(t)
	for {
		if _, err := unix.Write(fullW, make([]byte, 64<<10)); err != nil {
			break // EAGAIN: full
		}
	}

	cases := []struct {
		name  string
		fd    int
		ev    int16
		ready func()
	}{
		{"the master, when the child writes", master, unix.POLLIN, func() { _, _ = slave.Write([]byte("out")) }},
		{"the waker", w.fd, unix.POLLIN, w.wake},
		{"the terminal, when a key comes", int(slave.Fd()), unix.POLLIN, func() { _, _ = unix.Write(master, []byte("k\n")) }}, // canonical mode: a line
		{"a full pipe, once read", fullW, unix.POLLOUT, func() {
			buf := make([]byte, 1<<20)
			_, _ = unix.Read(fullR, buf)
		}},
	}
	p := newTestParker(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The other descriptors are in the set too, quiet.
			fds := []unix.PollFd{{Fd: int32(c.fd), Events: c.ev}}
			for _, o := range cases {
				if o.fd != c.fd {
					fds = append(fds, unix.PollFd{Fd: int32(o.fd), Events: unix.POLLIN})
				}
			}
			res := parkedPoll(t, p, fds, nil)
			c.ready()
			r := waitResult(t, res)
			if r.err != nil || r.n < 1 || fds[0].Revents&c.ev == 0 {
				t.Fatalf("parked wait = %d, %v, revents %#x; want the descriptor ready for %#x", r.n, r.err, fds[0].Revents, c.ev)
			}
		})
		// Quiet again for the next case.
		buf := make([]byte, 1<<16)
		_, _ = rawRead(master, buf)
		w.clear()
		_ = unix.SetNonblock(int(slave.Fd()), true)
		_, _ = unix.Read(int(slave.Fd()), buf)
	}
}

// A parked wait with a timeout ends with nothing ready once it passes.
func TestAParkedWaitTimesOut(t *testing.T) {
	r, _ := pipeFds(t)
	p := newTestParker(t)
	fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(20 * time.Millisecond))
	if n, err := p.ppoll(fds, &ts, nil); n != 0 || err != nil {
		t.Fatalf("quiet pipe: parked wait = %d, %v; want 0, nil once the timeout passed", n, err)
	}
}

// The set waited on is the one passed, each time: a descriptor left out of
// a wait does not end it, and a descriptor number closed and opened again
// for another file (as the loop's may be) is waited on as the new file.
func TestAParkedWaitWatchesTheSetItIsGiven(t *testing.T) {
	p := newTestParker(t)
	aR, aW := pipeFds(t)
	bR, bW := pipeFds(t)

	both := []unix.PollFd{{Fd: int32(aR), Events: unix.POLLIN}, {Fd: int32(bR), Events: unix.POLLIN}}
	res := parkedPoll(t, p, both, nil)
	_, _ = unix.Write(bW, []byte("b"))
	if r := waitResult(t, res); r.n != 1 || both[1].Revents&unix.POLLIN == 0 {
		t.Fatalf("both watched: %d ready, revents %#x", r.n, both[1].Revents)
	}
	_, _ = unix.Read(bR, make([]byte, 8))

	// Only b now: a, written while the wait is parked, must not end it.
	onlyB := []unix.PollFd{{Fd: int32(bR), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(300 * time.Millisecond))
	res = parkedPoll(t, p, onlyB, &ts)
	_, _ = unix.Write(aW, []byte("a"))
	if r := waitResult(t, res); r.n != 0 || r.err != nil {
		t.Fatalf("a descriptor left out of the set ended the wait: %d, %v", r.n, r.err)
	}

	// b's number closed and given to a new pipe's read end.
	nR, nW := pipeFds(t)
	if err := unix.Dup3(nR, bR, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	res = parkedPoll(t, p, onlyB, nil)
	_, _ = unix.Write(nW, []byte("n"))
	if r := waitResult(t, res); r.n != 1 || onlyB[0].Revents&unix.POLLIN == 0 {
		t.Fatalf("a number reused for another file: %d ready, revents %#x", r.n, onlyB[0].Revents)
	}
}

// While its child is quiet, the copy loop waits parked in the runtime's
// poller, not in a system call: one lasting 10 ms has sysmon take the
// loop's P, and the next key, getting one back, sets sysmon polling every
// 20 µs for a millisecond on the core the echo needs (park.go).
func TestTheCopyLoopWaitsParkedWhileTheChildIsQuiet(t *testing.T) {
	o := newOuter(t, 24, 80)
	sigs, done := start(t, Options{
		Argv:  []string{"sh", "-c", "echo ready; exec cat"},
		Stdin: o.tty, Stdout: o.tty,
	})
	o.waitFor("ready")
	parkedIn(t, "(*loop).run")
	// And it still passes a key through from there.
	if _, err := o.master.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	o.waitCount("typed", 2) // the echo, and cat's copy
	sigs <- unix.SIGTERM
	_ = wait(t, done)
}
