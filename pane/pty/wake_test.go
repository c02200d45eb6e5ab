package pty

import (
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// reuse opens eventfds until one takes descriptor number fd (the kernel
// hands out the lowest free number) and returns it: a stray write to the
// number shows in its counter. Everything is closed in cleanup.
func reuse(t *testing.T, fd int) int {
	t.Helper()
	var open []int
	t.Cleanup(func() {
		for _, f := range open {
			_ = unix.Close(f)
		}
	})
	for range 64 {
		e, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, e)
		if e == fd {
			return e
		}
	}
	t.Fatalf("descriptor %d was not handed out again", fd)
	return -1
}

// nothingWritten fails when the eventfd r was written to.
func nothingWritten(t *testing.T, r int) {
	t.Helper()
	var buf [8]byte
	n, err := unix.Read(r, buf[:])
	if n > 0 {
		t.Fatalf("a wake after close wrote % x into the file that reused the eventfd's number", buf[:n])
	}
	if !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("read: %v", err)
	}
}

// A wake that comes after close (an Injector writer holding a finished
// Run's wake-up) writes nothing, not even to a file that took the closed
// eventfd's number.
func TestWakeAfterCloseWritesNothing(t *testing.T) {
	w, err := newWaker()
	if err != nil {
		t.Fatal(err)
	}
	fd := w.fd
	w.close()
	r := reuse(t, fd)
	w.wake()
	nothingWritten(t, r)
	w.close() // twice is harmless
}

// Many Injector writers race the end of Runs: every Run's wake-up is set,
// hammered, cleared and closed while writers go on. Under -race this checks
// the locking; the reused descriptor checks that no stale wake landed.
func TestInjectorWritesRacingClose(t *testing.T) {
	inj := NewInjector()
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for range 8 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := inj.Write([]byte("x")); errors.Is(err, ErrInjectFull) {
					inj.take()
				}
			}
		}()
	}
	for range 200 {
		w, err := newWaker()
		if err != nil {
			t.Fatal(err)
		}
		inj.setWake(w.wake)
		inj.take()
		inj.setWake(nil)
		fd := w.fd
		w.close()
		r := reuse(t, fd)
		// Writers that picked up w.wake before it was cleared call it now.
		for range 100 {
			_, _ = inj.Write([]byte("y"))
		}
		nothingWritten(t, r)
	}
	close(stop)
	writers.Wait()
}
