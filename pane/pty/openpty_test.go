package pty

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// The master is a raw non-blocking descriptor that no child inherits; the
// slave is a blocking terminal; bytes written on one side arrive on the other.
func TestOpenPty(t *testing.T) {
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(master)
	defer slave.Close()
	sfd := int(slave.Fd())
	if !IsTerminal(sfd) {
		t.Fatal("slave is not a terminal")
	}
	for _, fd := range []int{master, sfd} {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd %d: close-on-exec not set (%#x, %v)", fd, fl, err)
		}
	}
	if _, err := unix.Read(master, make([]byte, 16)); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("read on an empty master: %v, want EAGAIN (non-blocking)", err)
	}
	if fl, _ := unix.FcntlInt(uintptr(sfd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Fatal("slave is non-blocking; the child expects a blocking terminal")
	}
	if _, err := slave.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	pfd := []unix.PollFd{{Fd: int32(master), Events: unix.POLLIN}}
	if _, err := unix.Poll(pfd, 5000); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := unix.Read(master, buf)
	if err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("master read %q, %v", buf[:n], err)
	}
}
