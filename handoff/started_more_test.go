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

// A pane that starts its command between two looks at the command file,
// and ends (or the wait's deadline passes) before the next look, did
// start it: a command that exits at once takes its pane along well
// within one look, and saying it never started sends the person looking
// for a shell problem that is not there.
func TestWaitStartedCountsACommandStartedSinceItsLastLook(t *testing.T) {
	for _, how := range []string{"the pane ended", "the deadline passed"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				file := filepath.Join(privateDir(t), "open-1.sh")
				if err := os.WriteFile(file, []byte("exit 0\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				o := Opened{Placed: Placed{PaneID: "w1:p2"}, CommandFile: file}
				const timeout = time.Minute + 10*time.Millisecond // between two looks
				ended := make(chan struct{})
				got := make(chan error, 1)
				go func() { got <- WaitStarted(context.Background(), o, timeout, ended) }()
				if how == "the deadline passed" {
					time.Sleep(timeout - time.Nanosecond)
				}
				synctest.Wait() // it has looked, found the file, and waits for its next look
				// The shell starts the command (which removes its file first
				// thing), and the look after that is too late.
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
				if how == "the pane ended" {
					close(ended)
				}
				if err := <-got; err != nil {
					t.Errorf("%s right after the pane started its command: %v, want it started", how, err)
				}
			})
		})
	}
}

// A pane whose Pi started between two looks for its wrapper, and which
// was closed before the next look (taking its wrapper along), did start
// Pi: the file its wrapper wrote at Pi's session_start says so after the
// wrapper is gone. Saying it never started made a live handoff hand back
// "failed", and its turn was opened again on the same session file.
func TestForkOfCountsAPiStartedSinceItsLastLook(t *testing.T) {
	for _, how := range []string{"the pane ended", "the deadline passed"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := privateDir(t)
				watch := filepath.Join(dir, "open-1.watch")
				if err := os.WriteFile(watch, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				o := Opened{Placed: Placed{PaneID: "w1:p2"}, WatchFile: watch, StartedFile: filepath.Join(dir, "open-1.started")}
				const timeout = time.Second + 50*time.Millisecond // between two looks
				ended := make(chan struct{})
				type result struct {
					fork   string
					failed bool
				}
				got := make(chan result, 1)
				go func() {
					fork, failed := ForkOf(context.Background(), filepath.Join(dir, "rt"), "/h.sock", o, timeout, ended)
					got <- result{fork, failed}
				}()
				if how == "the deadline passed" {
					time.Sleep(timeout - time.Nanosecond)
				}
				synctest.Wait() // it has looked, found no wrapper, and waits for its next look
				// The pane's wrapper hears Pi's session_start, and is gone
				// with its pane before the next look.
				const session = "/s/2026-12-05T22-39-11-472Z_01a2485c.jsonl"
				if err := WriteStarted(o.StartedFile, session); err != nil {
					t.Fatal(err)
				}
				if how == "the pane ended" {
					close(ended)
				}
				if r := <-got; r.fork != session || r.failed {
					t.Errorf("%s right after the pane's Pi started: fork %q, failed %v; want fork %q", how, r.fork, r.failed, session)
				}
			})
		})
	}
}

// The started file is written once, whole and private: a later
// session_start of the same Pi (/new, a resume) does not change which
// session the pane started with.
func TestWriteStartedKeepsTheFirstSession(t *testing.T) {
	file := filepath.Join(privateDir(t), "open-1.started")
	if got := StartedSession(file); got != "" {
		t.Fatalf("no file yet: %q", got)
	}
	for _, s := range []string{"/s/first.jsonl", "/s/second.jsonl"} {
		if err := WriteStarted(file, s); err != nil {
			t.Fatal(err)
		}
	}
	if got := StartedSession(file); got != "/s/first.jsonl" {
		t.Fatalf("started session %q, want the first", got)
	}
	fi, err := os.Lstat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("started file: %v %v, want 0600", fi, err)
	}
	if _, err := os.Lstat(file + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("its temporary file is left: %v", err)
	}
}
