package pty

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// foregroundOf starts argv as the foreground of a pty of its own and
// returns the pty's master and the child; both end with the test.
func foregroundOf(t testing.TB, argv ...string) (*os.File, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	master, err := creackpty.Start(cmd) // a session of its own, the pty its terminal
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = master.Close()
	})
	return master, cmd
}

// waitState waits until /proc/pid/stat gives the state want and, when
// syscall is not negative, pid waits in that system call.
func waitState(t testing.TB, pid int, want byte, syscall int) {
	t.Helper()
	var state byte
	var where string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		state = threadState(fmt.Sprintf("/proc/%d/task/%d/stat", pid, pid))
		where = ""
		if syscall >= 0 {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
			where, _, _ = strings.Cut(string(b), " ")
		}
		if state == want && (syscall < 0 || where == strconv.Itoa(syscall)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never reached state %c (system call %d): state %q, system call %q", pid, want, syscall, state, where)
		}
	}
}

// The foreground is runnable while it can run, and not while it waits of
// its own accord or is stopped: an agent that a busy machine starves is
// told from one that went quiet.
func TestForegroundRunnable(t *testing.T) {
	t.Run("sleeping", func(t *testing.T) {
		master, cmd := foregroundOf(t, "sh", "-c", "read x")
		waitState(t, cmd.Process.Pid, 'S', unix.SYS_READ)
		if foregroundRunnable(int(master.Fd())) {
			t.Fatal("a shell asleep in a read is runnable")
		}
	})
	t.Run("spinning", func(t *testing.T) {
		master, cmd := foregroundOf(t, "sh", "-c", "while :; do :; done")
		waitState(t, cmd.Process.Pid, 'R', -1)
		if !foregroundRunnable(int(master.Fd())) {
			t.Fatal("a shell spinning on the CPU is not runnable")
		}
	})
	t.Run("stopped", func(t *testing.T) {
		master, cmd := foregroundOf(t, "sh", "-c", "while :; do :; done")
		if err := cmd.Process.Signal(unix.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitState(t, cmd.Process.Pid, 'T', -1)
		if foregroundRunnable(int(master.Fd())) {
			t.Fatal("a stopped shell is runnable")
		}
	})
	t.Run("a thread other than the first", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			testenv.Missing(t, "python3", "install python3 (CI has it)")
		}
		// The first thread waits for the second, which spins.
		master, cmd := foregroundOf(t, "python3", "-c", "import threading\ndef spin():\n    while True: pass\nt = threading.Thread(target=spin)\nt.start()\nt.join()")
		waitState(t, cmd.Process.Pid, 'S', unix.SYS_FUTEX)
		// The two threads hand the interpreter's lock over now and then,
		// when both may wait for a moment: asked again, the spinning one
		// is found running. The first thread alone never is.
		for deadline := time.Now().Add(10 * time.Second); !foregroundRunnable(int(master.Fd())); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a process whose first thread waits for a spinning one is not runnable")
			}
		}
	})
	t.Run("gone", func(t *testing.T) {
		master, cmd := foregroundOf(t, "sh", "-c", "exit 0")
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if foregroundRunnable(int(master.Fd())) {
			t.Fatal("a foreground that has exited is runnable")
		}
	})
}

// The state is found after the last ')' of the name, whatever the name
// holds; a line cut short or without a name has none.
func TestStateAfterName(t *testing.T) {
	for _, c := range []struct {
		stat string
		want byte
	}{
		{"12 (sh) S 1 12 12", 'S'},
		{"12 (node) R 1", 'R'},
		{"12 (a) b (R) c) D 1 2", 'D'},
		{"12 (a b) T", 'T'},
		{"12 (sh)", 0},
		{"12 (sh) ", 0},
		{"12 (sh", 0},
		{"", 0},
	} {
		if got := stateAfterName([]byte(c.stat)); got != c.want {
			t.Errorf("%q: state %q, want %q", c.stat, got, c.want)
		}
	}
}

// What the copy loop pays for one look, on a notification's forced path
// only: a sleeping shell (one thread) and a sleeping Node (Pi's runtime,
// about a dozen threads).
func BenchmarkForegroundRunnable(b *testing.B) {
	for _, c := range []struct{ name, check string }{
		{"sh", ""},
		{"node", "node"},
	} {
		b.Run(c.name, func(b *testing.B) {
			argv := []string{"sh", "-c", "read x"}
			if c.check != "" {
				if _, err := exec.LookPath(c.check); err != nil {
					testenv.Missing(b, c.check, "source /tmp/pienv.sh (.ci/install-pi)")
				}
				argv = []string{"node", "-e", "process.stdin.resume()"}
			}
			master, _ := foregroundOf(b, argv...)
			// Once started, every thread sleeps: each look reads them all.
			for deadline := time.Now().Add(20 * time.Second); foregroundRunnable(int(master.Fd())); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatal("the child never went to sleep")
				}
			}
			for b.Loop() {
				foregroundRunnable(int(master.Fd()))
			}
		})
	}
}
