package pty

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// latePoll is an ordinary ppoll that, once armed, stands for a copy loop
// that falls behind (a busy machine, the loop's thread not scheduled): its
// next wait with a deadline tells the test it has begun, lets the deadline
// pass, and then waits on until a descriptor is ready, as a loop woken
// late by output finds it.
type latePoll struct {
	armed   atomic.Bool
	waiting chan struct{}
}

func (p *latePoll) ppoll(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
	if ts == nil || !p.armed.CompareAndSwap(true, false) {
		return unix.Ppoll(fds, ts, sm)
	}
	close(p.waiting)
	time.Sleep(time.Duration(ts.Nano()))
	return unix.Ppoll(fds, nil, sm)
}

// The quiet wait before a notification goes out inside a sequence is for a
// child that went quiet in the middle of one, not for a wrapper that was
// late to read what the child wrote: once the wait is over, the rest of the
// sequence waiting to be read is read first, and the notification goes out
// after it. On a loaded machine that ran the copy loop late, a
// notification went out between the "\x1b[3" and the "1m" of an SGR
// sequence whose end the child had written long before: 4095 bytes of its
// output waited unread.
func TestInjectReadsTheOutputThatCameWhileTheLoopWasLate(t *testing.T) {
	// The child is told to go on through a FIFO, not through its
	// terminal: input would have to pass through the loop, which is
	// waiting.
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	lp := &latePoll{waiting: make(chan struct{})}
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start\033[3'; read x <"$0"; printf '1mred\033[0m|'; read x`, fifo},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, ppoll: lp.ppoll,
		// Longer than the loop's first, raw part of its wait (up to
		// rawWaitLimit), so that the rest is waited for in latePoll.
		injectWait: rawWaitLimit() + 300*time.Millisecond, injectCap: time.Hour,
	})
	o.waitFor("start\x1b[3")
	lp.armed.Store(true)
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lp.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never waited for the quiet wait's end")
	}
	// The child writes the rest of its sequence while the loop waits.
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>")
	o.waitFor("|")
	if got, want := o.output(), "start\x1b[31mred\x1b[0m|<INJ>"; !strings.HasPrefix(got, want) {
		t.Errorf("the notification landed inside the sequence the child finished while the loop was late: %q, want %q", got, want)
	}
	if _, err := o.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}
