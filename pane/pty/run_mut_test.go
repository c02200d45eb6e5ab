package pty

import (
	"context"
	"os"
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
