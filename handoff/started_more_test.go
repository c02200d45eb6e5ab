package handoff

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A command file no pane started is removed however the wait for it ends
// (timeout, the pane's end, the caller giving up): a pane that gets round
// to it later must find nothing to run.
func TestWaitStartedRemovesAnUnstartedCommandFile(t *testing.T) {
	ended := make(chan struct{})
	close(ended)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		ended   <-chan struct{}
		want    string
	}{
		{"timeout", context.Background(), 50 * time.Millisecond, nil, "did not start its command within"},
		{"ended", context.Background(), time.Minute, ended, "ended before it started its command"},
		{"cancelled", cancelled, time.Minute, nil, "context canceled"},
	} {
		file := filepath.Join(privateDir(t), "open-1.sh")
		if err := os.WriteFile(file, []byte("exit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		o := Opened{Placed: Placed{PaneID: "w1:p2"}, CommandFile: file}
		err := WaitStarted(tc.ctx, o, tc.timeout, tc.ended)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, serr := os.Lstat(file); !os.IsNotExist(serr) {
			t.Errorf("%s: the command file is still there (%v)", tc.name, serr)
		}
	}
}

// A pane whose command failed before Pi started (its script removed the
// watch file) is told at once, not after the whole wait for Pi.
func TestForkOfHearsAFailedCommandAtOnce(t *testing.T) {
	dir := privateDir(t)
	o := Opened{Placed: Placed{PaneID: "w1:p2"}, WatchFile: filepath.Join(dir, "open-1.watch")}
	start := time.Now()
	fork, failed := ForkOf(context.Background(), filepath.Join(dir, "rt"), "/h.sock", o, time.Minute, nil)
	if fork != "" || !failed {
		t.Fatalf("fork %q, failed %v; want a failed command", fork, failed)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the failure took %v to be heard", d)
	}
}

// A pane that starts its command and ends within one look (a Pi that
// fails at once, a wrapper that exits) did start it: the file gone is the
// answer, whichever of the two the wait hears first.
func TestWaitStartedCountsACommandThatStartedAsThePaneEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(privateDir(t), "open-1.sh")
		if err := os.WriteFile(file, []byte("exit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ended := make(chan struct{})
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			err = WaitStarted(t.Context(), Opened{Placed: Placed{PaneID: "w1:p2"}, CommandFile: file}, time.Minute, ended)
		}()
		synctest.Wait() // it looked once, and waits for the next look
		if rerr := os.Remove(file); rerr != nil {
			t.Fatal(rerr)
		}
		close(ended)
		<-done
		if err != nil {
			t.Fatalf("the pane started its command (its file is gone) and then ended: %v, want no error", err)
		}
	})
}
