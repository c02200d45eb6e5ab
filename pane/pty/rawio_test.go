package pty

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
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
