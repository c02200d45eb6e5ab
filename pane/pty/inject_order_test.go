package pty

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bothPoll is an ordinary ppoll that, once armed, stands for a copy loop
// woken late: its next wait tells the test it has begun, and returns only
// once two of its descriptors are ready at the same time (the child's
// output and the waker an injection rings), as a loop the machine did not
// run for a while finds them.
type bothPoll struct {
	armed   atomic.Bool
	waiting chan struct{}
}

func (p *bothPoll) ppoll(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
	if !p.armed.CompareAndSwap(true, false) {
		return unix.Ppoll(fds, ts, sm)
	}
	close(p.waiting)
	tick := unix.NsecToTimespec(int64(time.Millisecond))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		n, err := unix.Ppoll(fds, &tick, sm)
		if err != nil || n >= 2 {
			return n, err
		}
	}
	return unix.Ppoll(fds, ts, sm)
}

// What the child wrote before something queued a notification reaches
// the terminal before the notification does, even when the loop wakes to
// both at once: on a loaded machine a notification of `herdr-pi waiting
// start` overtook the agent's "ready", written before the agent ran it.
func TestInjectComesAfterTheOutputWrittenBeforeIt(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	bp := &bothPoll{waiting: make(chan struct{})}
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start|'; read x <"$0"; printf 'ready|'; read x`, fifo},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, ppoll: bp.ppoll,
	})
	o.waitFor("start|")
	bp.armed.Store(true)
	// The loop's next wait past its raw part is the armed one.
	select {
	case <-bp.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never waited past its raw wait")
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>")
	o.waitFor("ready|")
	if got, want := o.output(), "start|ready|<INJ>"; got != want {
		t.Errorf("the terminal got %q, want %q: the notification overtook output written before it", got, want)
	}
	if _, err := o.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}
