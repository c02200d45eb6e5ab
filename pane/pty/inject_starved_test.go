package pty

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// againPoll is an ordinary ppoll that tells the test when the copy loop
// begins a wait after one with a deadline ran out: by then a loop whose
// quiet wait for a notification ended has either written it or chosen to
// wait on.
type againPoll struct {
	timedOut atomic.Bool
	once     sync.Once
	again    chan struct{}
}

func (p *againPoll) ppoll(fds []unix.PollFd, ts *unix.Timespec, sm *unix.Sigset_t) (int, error) {
	if p.timedOut.Load() {
		p.once.Do(func() { close(p.again) })
	}
	n, err := unix.Ppoll(fds, ts, sm)
	if ts != nil && n == 0 && err == nil {
		p.timedOut.Store(true)
	}
	return n, err
}

// An agent that a loaded machine starves in the middle of a sequence (it
// can run, but the cores are busy with other agents) has not gone quiet:
// its 50 ms without output do not mean it left the sequence unfinished.
// While it is runnable the notification waits on, and goes out after the
// rest of the sequence. The child here stands for it: it writes half an
// SGR sequence and then runs on the CPU without writing (state R, as a
// starved agent is) until the test has seen the quiet wait end; the cap is
// far away, so only the child's state decides. Before, the notification
// was written between "\x1b[3" and "1m".
func TestInjectWaitsForAnAgentThatCanRunInsideASequence(t *testing.T) {
	// The child is told to go on by a file appearing, which it looks for
	// without sleeping: input would leave it asleep in a read.
	goFile := filepath.Join(t.TempDir(), "go")
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	pp := &againPoll{again: make(chan struct{})}
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start\033[3'; while [ ! -e "$0" ]; do :; done; printf '1mred\033[0m|'; read x`, goFile},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, ppoll: pp.ppoll,
		// Past the raw first part of a wait (rawio.go), so that the
		// quiet wait ends in againPoll.
		injectWait: rawWaitLimit() + 50*time.Millisecond, injectCap: time.Hour,
	})
	o.waitFor("start\x1b[3")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	// The quiet wait is over once the loop waits again after it, or
	// (when the raw first part of a wait spent all of it: rawio.go) once
	// the notification is out.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case <-pp.again:
		default:
			if !strings.Contains(o.output(), "<INJ>") {
				if time.Now().After(deadline) {
					t.Fatal("the loop never came back from its quiet wait")
				}
				continue
			}
		}
		break
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>")
	o.waitFor("|")
	if got, want := o.output(), "start\x1b[31mred\x1b[0m|<INJ>"; !strings.HasPrefix(got, want) {
		t.Errorf("the notification landed inside the sequence of an agent that could still run: %q, want %q", got, want)
	}
	if _, err := o.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// An agent that can run but never finishes its sequence (it computes on,
// or spins) holds a notification back no longer than injectCap: being
// runnable only puts the write off from one quiet wait to the next.
func TestInjectGoesOutWhenARunnableAgentNeverEndsItsSequence(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `printf 'start\033[3'; while :; do :; done`},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, injectWait: 10 * time.Millisecond, injectCap: 200 * time.Millisecond,
	})
	o.waitFor("start\x1b[3")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>") // the child still spins
	if _, err := o.master.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	_ = wait(t, done)
}
