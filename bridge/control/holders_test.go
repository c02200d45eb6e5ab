package control

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sleeper starts a real process that runs until the test kills it.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// killNow ends cmd with SIGKILL, the way no trap survives, and reaps it.
func killNow(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// awaitWaits polls (generously) until the recorder holds n requests.
func (r *recorder) awaitWaits(t *testing.T, n int) []WaitRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		got := append([]WaitRequest(nil), r.waits...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting requests after 30s, want %d: %+v", len(got), n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) client(t *testing.T) (*Client, context.Context) {
	t.Helper()
	return f.clientWithin(t, 30*time.Second)
}

// clientWithin is a client whose connection, and the context returned for
// its calls, end after bound (Dial sets the connection's deadline from
// the context's). Both are closed when the test ends.
func (f *fixture) clientWithin(t *testing.T, bound time.Duration) (*Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	c, err := Dial(ctx, f.path, f.tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// A hook killed with kill -9 runs no trap: the wait it held closes anyway,
// as its own `waiting stop` would have closed it, and the log says why.
func TestAWaitEndsWithTheProcessThatHoldsIt(t *testing.T) {
	f := start(t)
	c, ctx := f.client(t)
	hook := sleeper(t)
	pid := hook.Process.Pid
	if err := c.Wait(ctx, WaitRequest{Action: WaitStart, Source: "deploy-hook", ID: "42", Label: "approve", PID: pid, CallerPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	killNow(t, hook)
	got := f.rec.awaitWaits(t, 2)
	want := []WaitRequest{
		{Action: WaitStart, Source: "deploy-hook", ID: "42", Label: "approve", PID: pid, CallerPID: os.Getpid()},
		{Action: WaitStop, Source: "deploy-hook", ID: "42"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("requests %+v, want %+v", got, want)
	}
	f.logs.waitFor(t, fmt.Sprintf("control: pid %d, which held the wait deploy-hook:42, exited: the wait is closed", pid))
}

// The latest start of a wait says who holds it: a later start with
// another pid, or without one, or a stop, lets the earlier holder go, and
// its exit closes nothing any more.
func TestTheLatestStartSaysWhoHoldsTheWait(t *testing.T) {
	f := start(t)
	c, ctx := f.client(t)
	first, second, third := sleeper(t), sleeper(t), sleeper(t)
	do := func(w WaitRequest) {
		t.Helper()
		if err := c.Wait(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// a: first, then second holds it.
	do(WaitRequest{Action: WaitStart, Source: "hook", ID: "a", PID: first.Process.Pid})
	do(WaitRequest{Action: WaitStart, Source: "hook", ID: "a", PID: second.Process.Pid})
	// b: third holds it, then a start without --pid leaves it open with
	// no holder; c: third holds it, then it is stopped.
	do(WaitRequest{Action: WaitStart, Source: "hook", ID: "b", PID: third.Process.Pid})
	do(WaitRequest{Action: WaitStart, Source: "hook", ID: "b"})
	do(WaitRequest{Action: WaitStart, Source: "hook", ID: "c", PID: third.Process.Pid})
	do(WaitRequest{Action: WaitStop, Source: "hook", ID: "c"})
	// The holders let go exit first; the one that still holds a wait
	// last: by then the others would have closed theirs.
	killNow(t, first)
	killNow(t, third)
	killNow(t, second)
	got := f.rec.awaitWaits(t, 7)
	if last := got[6]; last != (WaitRequest{Action: WaitStop, Source: "hook", ID: "a"}) {
		t.Fatalf("requests %+v: want the 7th to close hook:a as its holder exited", got)
	}
	if len(got) != 7 {
		t.Fatalf("requests %+v: a holder that was let go closed a wait", got)
	}
}

// A pid that cannot hold a wait is refused before anything opens: none,
// pid 1, a negative one, one that exited, one of another user; and --pid
// belongs to a start.
func TestAHolderThatCannotHoldIsRefused(t *testing.T) {
	f := start(t)
	c, ctx := f.client(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w    WaitRequest
		want string
	}{
		{WaitRequest{Action: WaitStart, Source: "s", ID: "i", PID: 1}, "waiting: --pid 1 cannot hold a wait: give a script's pid, e.g. --pid $$"},
		{WaitRequest{Action: WaitStart, Source: "s", ID: "i", PID: -5}, "waiting: --pid -5 cannot hold a wait: give a script's pid, e.g. --pid $$"},
		{WaitRequest{Action: WaitStart, Source: "s", ID: "i", PID: gone.Process.Pid}, fmt.Sprintf("waiting: --pid %d: no such process (give a script's pid, e.g. --pid $$)", gone.Process.Pid)},
		{WaitRequest{Action: WaitStop, Source: "s", ID: "i", PID: os.Getpid()}, "waiting: --pid is for start only: a stop closes the wait whoever holds it"},
		// The caller is pid 1 of its own namespace, say: the kernel names
		// it otherwise here, and its --pid would name another process.
		{WaitRequest{Action: WaitStart, Source: "deploy-hook", ID: "42", PID: os.Getpid(), CallerPID: os.Getpid() + 1},
			fmt.Sprintf("waiting: --pid %d: the wrapper runs in another pid namespace, where that pid is another process: "+
				"leave --pid out and stop the wait from a trap instead, e.g. trap 'herdr-pi waiting stop --source deploy-hook --id 42' EXIT", os.Getpid())},
		{WaitRequest{Action: WaitStart, Source: "it's", ID: "4 2", PID: os.Getpid(), CallerPID: os.Getpid() + 1},
			fmt.Sprintf("waiting: --pid %d: the wrapper runs in another pid namespace, where that pid is another process: "+
				"leave --pid out and stop the wait from a trap instead, e.g. trap 'herdr-pi waiting stop --source SOURCE --id ID' EXIT", os.Getpid())},
	} {
		err := c.Wait(ctx, tc.w)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.w, err, tc.want)
		}
	}
	f.rec.mu.Lock()
	if len(f.rec.waits) != 0 {
		t.Errorf("a refused request reached the wrapper: %+v", f.rec.waits)
	}
	f.rec.mu.Unlock()

	live := sleeper(t)
	if err := CheckHolder(live.Process.Pid, os.Getuid()); err != nil {
		t.Errorf("a live process of ours: %v", err)
	}
	other := os.Getuid() + 1
	want := fmt.Sprintf("--pid %d: owned by uid %d, not the wrapper's uid %d", live.Process.Pid, os.Getuid(), other)
	if err := CheckHolder(live.Process.Pid, other); err == nil || err.Error() != want {
		t.Errorf("a process of another uid: %v, want %q", err, want)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	awaitZombie(t, zombie.Process.Pid)
	want = fmt.Sprintf("--pid %d: the process has already exited", zombie.Process.Pid)
	if err := CheckHolder(zombie.Process.Pid, os.Getuid()); err == nil || err.Error() != want {
		t.Errorf("an exited process not yet reaped: %v, want %q", err, want)
	}
	_ = zombie.Wait()
}

// awaitZombie waits until pid has exited and is not reaped yet.
func awaitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exit within 30s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Each holder costs a descriptor and a goroutine: past maxHolders a start
// with --pid is refused (one process may hold many waits), and the server's
// close lets every holder go.
func TestHoldersAreBounded(t *testing.T) {
	f := start(t)
	c, ctx := f.client(t)
	pid := sleeper(t).Process.Pid
	for i := range maxHolders {
		if err := c.Wait(ctx, WaitRequest{Action: WaitStart, Source: "s", ID: strconv.Itoa(i), PID: pid}); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	// The same wait again still may change holder.
	if err := c.Wait(ctx, WaitRequest{Action: WaitStart, Source: "s", ID: "0", PID: pid}); err != nil {
		t.Fatalf("restarting a held wait: %v", err)
	}
	err := c.Wait(ctx, WaitRequest{Action: WaitStart, Source: "s", ID: "one-more", PID: pid})
	want := fmt.Sprintf("waiting: --pid %d: %d waits have holders already; stop some first", pid, maxHolders)
	if err == nil || err.Error() != want {
		t.Fatalf("one holder too many: %v, want %q", err, want)
	}
	f.srv.Close() // goleak (TestMain) sees every watch gone
}
