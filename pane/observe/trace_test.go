package observe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

// A trace path that is not a regular file is refused at once, never opened
// in a way that waits: a FIFO with no reader used to hold wrap before the
// agent started, and a terminal got JSON lines over the agent's screen.
func TestOpenTraceRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trace.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ptm, pts, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer pts.Close()

	cases := []struct{ name, path, want string }{
		{"fifo without a reader", fifo, "is a named pipe (FIFO), not a regular file"},
		{"terminal", pts.Name(), "is a character device (a terminal would show the trace over the agent's screen)"},
		{"directory", dir, "is a directory, not a file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := openTraceOrUnblock(t, tc.path)
			if err == nil {
				t.Fatalf("OpenTrace(%s) = nil error, want one saying %q", tc.path, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "unset HERDR_PI_TRACE") {
				t.Errorf("OpenTrace(%s) error = %q, want it to say %q and the way out", tc.path, err, tc.want)
			}
		})
	}
}

// openTraceOrUnblock calls OpenTrace; should it still be waiting after a
// generous deadline (the old code waited for a FIFO's reader forever), it
// opens the FIFO for reading so the call returns, and fails the test.
func openTraceOrUnblock(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		tr, err := OpenTrace(path)
		if tr != nil {
			tr.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		if r, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			defer r.Close()
		}
		<-done
		t.Fatalf("OpenTrace(%s) still waiting after 10s", path)
		return nil
	}
}

// A symlink to a regular file takes the trace too, and a second run
// appends to it (TestTrace covers a new file).
func TestOpenTraceFollowsASymlinkAndAppends(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "trace.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, link} {
		tr, err := OpenTrace(path)
		if err != nil {
			t.Fatalf("OpenTrace(%s): %v", path, err)
		}
		tr.Write(state.Event{Kind: state.EventTransition, From: state.Unknown, To: state.Idle, Cause: "screen", At: time.Now()})
		tr.Close()
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"to":"idle"`); n != 2 {
		t.Errorf("trace file has %d transitions to idle, want 2:\n%s", n, data)
	}
}

// A trace path in a shared directory (docs/troubleshooting.md suggests
// /tmp/trace.jsonl) is where another user can be first: a symlink of
// theirs there led the trace into the file it names (~/.bashrc got JSON
// lines appended), and a file of theirs open to all got the trace, the
// agent's questions included, for them to read. Both are refused, the
// file they point at untouched; a symlink of our own still leads the
// trace (TestOpenTraceFollowsASymlinkAndAppends).
func TestOpenTraceRefusesAnotherUsersSymlinkOrFile(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "run the tests as root to plant a file as another uid (CI runs as root)")
	}
	testenv.PermissiveUmask(t)
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(victim, []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(path string) error{
		"their symlink to a file of ours": func(path string) error { return os.Symlink(victim, path) },
		"their symlink to nowhere":        func(path string) error { return os.Symlink(filepath.Join(filepath.Dir(victim), "new"), path) },
		"their file open to all":          func(path string) error { return os.WriteFile(path, nil, 0o666) },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(shared, strings.ReplaceAll(name, " ", "-")+".jsonl")
			if err := plant(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(path, testenv.Nobody, testenv.Nobody); err != nil {
				t.Fatal(err)
			}
			tr, err := OpenTrace(path)
			if tr != nil {
				tr.Write(state.Event{Kind: state.EventTransition, From: state.Unknown, To: state.Blocked, Message: "a private question", At: time.Now()})
				tr.Close()
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "unset HERDR_PI_TRACE") {
				t.Errorf("OpenTrace = %v, want it refused, naming the path, the owner and the way out", err)
			}
			if data, _ := os.ReadFile(victim); string(data) != "# mine\n" {
				t.Errorf("the file of ours the link names now holds %q", data)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(victim), "new")); err == nil {
				t.Error("a file of ours was created where their link led")
			}
			if data, _ := os.ReadFile(path); strings.Contains(string(data), "question") {
				t.Errorf("their file got the trace: %q", data)
			}
		})
	}
}

// A trace left on for days (HERDR_PI_TRACE exported in a shell's rc file)
// grew by a line per state event without end: 30 MB for 100,000 events.
// Past 16 MiB it moves to name.1 and starts again, as the log does, so it
// keeps at most twice that, and the newest events.
func TestATraceLeftOnStaysBounded(t *testing.T) {
	const documented = 16 << 20
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr, err := OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	const events = 80000
	for i := range events {
		tr.Write(state.Event{Kind: state.EventTransition, From: state.Working, To: state.Blocked,
			Cause: fmt.Sprintf("probe:agent_end %06d %s", i, strings.Repeat("x", 200)), At: time.Now()})
	}
	tr.Close()
	line := int64(400) // one event's line, and more
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("after %d events: %v", events, err)
		}
		if fi.Size() > documented+line {
			t.Errorf("%s holds %d bytes after %d events, want at most 16 MiB", p, fi.Size(), events)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if last := fmt.Sprintf("probe:agent_end %06d", events-1); !strings.Contains(string(data), last) {
		t.Errorf("the trace lacks its newest event %q", last)
	}
}
