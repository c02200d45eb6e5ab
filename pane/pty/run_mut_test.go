package pty

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// Exit status 1 is a failure like any other: a wrapper that swallowed it
// would tell a script calling Pi that the run went well.
func TestExitStatusOne(t *testing.T) {
	o := newOuter(t, 24, 80)
	_, done := start(t, Options{Argv: []string{"sh", "-c", "exit 1"}, Stdin: o.tty, Stdout: o.tty})
	if got := statusOfErr(t, wait(t, done)); got != 1 {
		t.Fatalf("exit status %d, want 1", got)
	}
}

// Output that stops mid-sequence must not hold a notification back for as
// long as the child stays quiet: after the wait it goes out anyway, while
// the child still runs.
func TestInjectGoesOutWhenOutputStopsMidSequence(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start\033[3'; read x; printf 'end'`},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, injectWait: time.Millisecond,
	})
	o.waitFor("start\x1b[3")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>") // the child is still blocked in read
	if _, err := o.master.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	o.waitFor("end")
}

// Cancelling the context asks the child to end with SIGTERM (what a
// service manager sends), which Pi handles by saving its session; another
// signal would not run that handler.
func TestCancelSendsSIGTERM(t *testing.T) {
	o := newOuter(t, 24, 80)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- result{err: Run(ctx, Options{
			Argv:  []string{"sh", "-c", `trap 'echo got-term; exit 9' TERM; trap 'echo got-int; exit 8' INT; echo ready; while :; do sleep 0.05; done`},
			Env:   os.Environ(),
			Stdin: o.tty, Stdout: o.tty,
		})}
	}()
	o.waitFor("ready")
	cancel()
	if got := statusOfErr(t, wait(t, done)); got != 9 {
		t.Fatalf("exit status %d, want 9 (the child's TERM handler)", got)
	}
	o.waitFor("got-term")
}

// The injection queue holds up to injectLimit bytes: exactly the limit
// fits, a byte more is refused rather than grown without bound.
func TestInjectorLimit(t *testing.T) {
	j := NewInjector()
	if _, err := j.Write(make([]byte, injectLimit)); err != nil {
		t.Fatalf("a write of exactly the limit: %v", err)
	}
	if _, err := NewInjector().Write(make([]byte, injectLimit+1)); err != ErrInjectFull {
		t.Fatalf("a write over the limit: %v, want ErrInjectFull", err)
	}
}

// Bytes written out free their room in the queue: a long session keeps
// its notifications after more than injectLimit bytes of them in total.
func TestInjectRoomComesBackOnceWritten(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	_, done := start(t, Options{Argv: []string{"sh", "-c", `stty -echo; echo ready; read x`}, Stdin: o.tty, Stdout: o.tty, Inject: inj})
	o.waitFor("ready")
	payload := strings.Repeat("a", injectLimit*3/4)
	for _, mark := range []string{"<one>", "<two>"} {
		if _, err := inj.Write([]byte(payload + mark)); err != nil {
			t.Fatalf("%s: %v", mark, err)
		}
		o.waitFor(mark)
	}
	if _, err := o.master.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// A long sequence that keeps coming (an OSC 52 clipboard write of a big
// selection, a sixel image, a slow terminal draining either) is not cut by
// a notification: while the child's output keeps flowing, the injection
// waits for the sequence to end, however long that takes past the quiet
// wait. Once the injection is queued, the child writes 4 KiB pieces of the
// sequence 10 ms apart for at least three quiet waits, paced by itself:
// paced by the test's own reads and writes, a loaded machine (-race, load
// above 13) once left a gap longer than the quiet wait between two pieces.
func TestInjectDoesNotCutASequenceThatKeepsComing(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	const quiet = 500 * time.Millisecond
	_, done := start(t, Options{
		Argv: []string{"sh", "-c", `stty -echo; piece=$(head -c 3072 /dev/zero | base64 -w0); printf 'start\033]52;c;'
read go; i=0; while [ $i -lt 150 ]; do printf '%s' "$piece"; sleep 0.01; i=$((i+1)); done; printf '\007end'`},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, injectWait: quiet, injectCap: time.Hour,
	})
	o.waitFor("start\x1b]52;c;")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	injected := time.Now()
	if _, err := o.master.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(injected); took < 3*quiet {
		// The sequence must outlast the quiet wait for this test to
		// tell a wait that output extends from one that it does not.
		t.Fatalf("the sequence took %v, less than three quiet waits (%v)", took, 3*quiet)
	}
	o.waitFor("<INJ>")
	got := o.output()
	if at, end := strings.Index(got, "<INJ>"), strings.Index(got, "\x07end"); at < end {
		t.Fatalf("the injection landed inside the OSC 52 sequence, %d bytes after it began (it ends at %d)", at-strings.Index(got, "\x1b]52"), end)
	}
}

// A sequence that never ends (an unterminated string, then output that
// keeps coming) holds an injection back at most injectCap.
func TestInjectGoesOutWhenASequenceNeverEnds(t *testing.T) {
	o := newOuter(t, 24, 80)
	inj := NewInjector()
	_, done := start(t, Options{
		Argv:  []string{"sh", "-c", `stty -echo; printf 'start\033P'; while :; do printf 'more'; sleep 0.01; done`},
		Stdin: o.tty, Stdout: o.tty, Inject: inj, injectWait: time.Hour, injectCap: 200 * time.Millisecond,
	})
	o.waitFor("start\x1bPmore")
	if _, err := inj.Write([]byte("<INJ>")); err != nil {
		t.Fatal(err)
	}
	o.waitFor("<INJ>") // the child still writes
	if _, err := o.master.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	_ = wait(t, done)
}
