package commands

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/pane/launch"
	"github.com/herdr-pi/herdr-pi/settings"
)

// The resume command Herdr 0.9 restores the agent with: herdr-pi wrap,
// --agent and --no-probe when given, what starts Pi, --session with the file.
func TestResumeArgv(t *testing.T) {
	for _, tc := range []struct {
		agent   string
		noProbe bool
		argv    []string
		file    string
		want    []string
	}{
		{"", false, []string{"pi", "--model", "x"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		{"", true, []string{"pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--no-probe", "pi", "--session", "/s/a.jsonl"}},
		{"pi", false, []string{"npx", "-y", "@earendil-works/pi-coding-agent", "-c"}, "/s/b c.jsonl",
			[]string{"herdr-pi", "wrap", "--agent", "pi", "npx", "-y", "@earendil-works/pi-coding-agent", "--session", "/s/b c.jsonl"}},
		{"", false, []string{"sh", "-c", "pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "pi", "--session", "/s/a.jsonl"}},
		// A command that starts with a dash must come after "--", or the
		// restored wrap would read it as one of its own flags.
		{"pi", false, []string{"-mypi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--agent", "pi", "--", "-mypi", "--session", "/s/a.jsonl"}},
		{"", false, []string{"pi"}, "", nil},
		// The pane's label goes with it: a restored pane's notifications
		// still say which of the person's agents asks.
		{"pi", false, []string{"pi"}, "/s/a.jsonl", []string{"herdr-pi", "wrap", "--agent", "pi", "--label", "fx-retry #2 fixer", "pi", "--session", "/s/a.jsonl"}},
	} {
		opts := &wrapOptions{Agent: tc.agent, NoProbe: tc.noProbe, Argv: tc.argv}
		if slices.Contains(tc.want, "--label") {
			opts.Label = "fx-retry #2 fixer"
		}
		got := resumeArgv(opts, launch.Parse(tc.argv, ""), tc.file)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %q: %q, want %q", tc.agent, tc.argv, got, tc.want)
		}
	}
}

// The agent Herdr shows: --agent when given, else [herdr] agent when the
// config sets it — a choice, which a guess from the command's name (wrap
// claude, with a claude manifest) must not override — else the agent
// detection chose.
func TestReportLabel(t *testing.T) {
	set := settings.Defaults()
	set.Herdr.Agent = "pi-custom"
	unset := settings.Defaults()
	for _, tc := range []struct {
		flag, detected string
		cfg            settings.Config
		want           string
	}{
		{"mine", "claude", set, "mine"},
		{"", "claude", set, "pi-custom"},
		{"", "pi", set, "pi-custom"},
		{"mine", "claude", unset, "mine"},
		{"", "claude", unset, "claude"},
		{"", "pi", unset, "pi"},
	} {
		if got := reportLabel(tc.flag, tc.detected, tc.cfg); got != tc.want {
			t.Errorf("reportLabel(%q, %q) with [herdr] agent %q = %q, want %q", tc.flag, tc.detected, tc.cfg.Herdr.Agent, got, tc.want)
		}
	}
}

// The agent a wrapper names when nothing names it (no --agent, no
// [detect] agent) is the one detection chose — but Pi's manifest reading
// the screen of a command that is not Pi, for want of one named after it,
// does not make that command Pi: Herdr shows `wrap bash` as bash. Pi, as
// the command or behind a runtime or runner, stays pi.
func TestShownAgent(t *testing.T) {
	// Pi's npm package, as node runs it.
	pkg := filepath.Join(t.TempDir(), "node_modules", "@earendil-works", "pi-coding-agent")
	cli := filepath.Join(pkg, "dist", "cli.js")
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{filepath.Join(pkg, "package.json"): `{"name":"@earendil-works/pi-coding-agent"}`, cli: ""} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	detectClaude := settings.Defaults()
	detectClaude.Detect.Agent = "claude"
	unset := settings.Defaults()
	for _, tc := range []struct {
		flag     string
		argv     []string
		cfg      settings.Config
		detected string
		want     string
	}{
		{"", []string{"bash"}, unset, "pi", "bash"},
		{"", []string{"/usr/bin/python3.12", "-i"}, unset, "pi", "python3.12"},
		{"", []string{"node", "server.js"}, unset, "pi", "node"},
		{"", []string{"pi"}, unset, "pi", "pi"},
		{"", []string{"/opt/pi/bin/pi", "--model", "x"}, unset, "pi", "pi"},
		{"", []string{"node", cli}, unset, "pi", "pi"},
		{"", []string{"npx", "-y", "@earendil-works/pi-coding-agent"}, unset, "pi", "pi"},
		{"pi", []string{"./bin/pi-dev"}, unset, "pi", "pi"},
		{"mine", []string{"bash"}, unset, "mine", "mine"},
		{"", []string{"bash"}, detectClaude, "claude", "claude"},
		{"", []string{"./claude"}, unset, "claude", "claude"},
		// A name that is no agent id is made one; one with nothing to
		// keep is herdr-pi's.
		{"", []string{"./my agent (v2)"}, unset, "pi", "my_agent__v2_"},
		{"", []string{"-._"}, unset, "pi", "herdr-pi"},
		{"", []string{strings.Repeat("x", 100)}, unset, "pi", strings.Repeat("x", 64)},
	} {
		opts := &wrapOptions{Agent: tc.flag, Argv: tc.argv}
		c := launch.Parse(tc.argv, "")
		got := shownAgent(tc.detected, runsPi(opts, c), opts, tc.cfg)
		if got != tc.want {
			t.Errorf("wrap %q (--agent %q, detected %q): %q, want %q", tc.argv, tc.flag, tc.detected, got, tc.want)
		}
		if err := settings.CheckAgent(got); err != nil {
			t.Errorf("wrap %q: %v", tc.argv, err)
		}
	}
}

// A wrapper standing aside whose pidfd_open fails (an old kernel, a
// seccomp filter, another pid namespace) still hears of the holder's end:
// its wait ends after the holder has exited, or its pid went to another
// process, and within one look of it — never while the holder runs, and
// not only at the pane's next change. A wait whose wrapper ends ends too.
func TestTheHoldersEndIsHeardWithoutAPidfd(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(start *uint64, gone *bool)
	}{
		{"exits", func(_ *uint64, gone *bool) { *gone = true }},
		{"its pid reused", func(start *uint64, _ *bool) { *start = 9999 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				start, gone := uint64(7), false
				var events []string
				note := func(e string) {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, e)
				}
				w := endWatch{
					pidfd: func(int) (int, error) { return -1, unix.ENOSYS },
					started: func(pid int) (uint64, bool) {
						mu.Lock()
						defer mu.Unlock()
						return start, pid == 4242 && !gone
					},
					every: holderLookEvery,
					logf:  t.Logf,
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					w.await(context.Background(), 4242)
					note("wait ended")
				}()
				time.Sleep(10 * holderLookEvery) // the holder runs on
				synctest.Wait()
				mu.Lock()
				tc.end(&start, &gone)
				mu.Unlock()
				note("holder ended")
				ended := time.Now()
				<-done
				mu.Lock()
				defer mu.Unlock()
				if want := []string{"holder ended", "wait ended"}; !slices.Equal(events, want) {
					t.Fatalf("events %q, want %q", events, want)
				}
				if late := time.Since(ended); late > holderLookEvery {
					t.Fatalf("the wait ended %v after the holder, want within %v", late, holderLookEvery)
				}
			})
		})
	}
	t.Run("the wrapper ends first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := endWatch{
				pidfd:   func(int) (int, error) { return -1, unix.EPERM },
				started: func(int) (uint64, bool) { return 7, true },
				every:   holderLookEvery,
				logf:    t.Logf,
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.await(ctx, 4242)
			}()
			time.Sleep(3 * holderLookEvery)
			synctest.Wait()
			select {
			case <-done:
				t.Fatal("the wait ended while the holder runs and the wrapper goes on")
			default:
			}
			cancel()
			<-done
		})
	})
}

// A process's start time names it: this test's own is read, and stays
// the same; a pid that runs no process has none.
func TestProcStarted(t *testing.T) {
	a, ok := procStarted(os.Getpid())
	if !ok || a == 0 {
		t.Fatalf("procStarted(self) = %d, %v", a, ok)
	}
	if b, _ := procStarted(os.Getpid()); b != a {
		t.Fatalf("procStarted(self) changed: %d then %d", a, b)
	}
	if _, ok := procStarted(1 << 30); ok {
		t.Fatal("procStarted of a pid past pid_max says it runs")
	}
}

// A process runs on a terminal when that terminal is its controlling one,
// or its stdin, stdout or stderr, whatever its parent: the pty here
// stands in for an agent's, the processes for wrappers started on it
// (one through setsid, with the terminal on its stdin only, one whose
// only tie is its controlling terminal) and for one elsewhere.
func TestOnTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	other, otherTTY, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	defer otherTTY.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	dev := st.Rdev
	if err := unix.Fstat(int(otherTTY.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	elsewhere := st.Rdev
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()

	run := func(how func(c *exec.Cmd)) int {
		c := exec.Command("sleep", "60")
		c.Stdin, c.Stdout, c.Stderr = null, null, null
		how(c)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	stdinOnly := run(func(c *exec.Cmd) {
		c.Stdin = tty
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	})
	cttyOnly := run(func(c *exec.Cmd) {
		c.ExtraFiles = []*os.File{tty} // fd 3, which onTerminal does not read
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	})
	neither := run(func(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} })

	for _, tc := range []struct {
		name string
		pid  int
		dev  uint64
		want bool
	}{
		{"the terminal on its stdin", stdinOnly, dev, true},
		{"the terminal its controlling one", cttyOnly, dev, true},
		{"no terminal", neither, dev, false},
		{"another terminal", stdinOnly, elsewhere, false},
		{"another terminal, controlling", cttyOnly, elsewhere, false},
		{"no device known", stdinOnly, 0, false},
	} {
		if got := onTerminal(tc.pid, tc.dev); got != tc.want {
			t.Errorf("%s: onTerminal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// tty_nr in /proc/<pid>/stat splits a minor above 255 around the major.
func TestTtyNrIs(t *testing.T) {
	for _, tc := range []struct {
		nr, dev uint64
		want    bool
	}{
		{136<<8 | 3, unix.Mkdev(136, 3), true},
		{136<<8 | 300&0xff | (300&^0xff)<<12, unix.Mkdev(136, 300), true},
		{136<<8 | 300&0xff, unix.Mkdev(136, 300), false},
		{4<<8 | 1, unix.Mkdev(136, 1), false},
	} {
		if got := ttyNrIs(tc.nr, tc.dev); got != tc.want {
			t.Errorf("ttyNrIs(%#x, %d:%d) = %v, want %v", tc.nr, unix.Major(tc.dev), unix.Minor(tc.dev), got, tc.want)
		}
	}
}

// Which wrapper of the pane runs inside which, out of the process tree (a
// setsid between them): the holder that runs on this wrapper's agent's
// terminal is inside it; an older one whose control socket this
// wrapper's environment names has this one inside its agent.
func TestPaneWrappersJudgeInsideOutOfTheProcessTree(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	agentTerm := func() uint64 { return st.Rdev }
	elsewhere := func() uint64 { return st.Rdev + 1 }
	// Two wrappers, neither under the other (siblings): the other's stdin
	// is the pty.
	start := func(stdin *os.File) int {
		c := exec.Command("sleep", "60")
		c.Stdin = stdin
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	other := control.Endpoint{Socket: "/nowhere/other.sock", Token: "t", PID: start(tty)}
	self := control.Endpoint{Socket: "/nowhere/self.sock", Token: "t", PID: start(nil)}
	const key = "pane-test.json"
	private := func() string {
		d := t.TempDir()
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, "panes")
	}

	// This wrapper first, the other holding the pane after it.
	reg := control.Registry{Dir: private()}
	for _, e := range []control.Endpoint{self, other} {
		if _, err := reg.Register(key, e); err != nil {
			t.Fatal(err)
		}
	}
	if w := paneWrappers(reg, key, self.PID, agentTerm, control.Endpoint{})(); w.Holder == nil || w.Holder.PID != other.PID || !w.Holder.Nested {
		t.Errorf("a holder on this wrapper's agent's terminal: %+v, want it nested", w.Holder)
	}
	if w := paneWrappers(reg, key, self.PID, elsewhere, control.Endpoint{})(); w.Holder == nil || w.Holder.Nested {
		t.Errorf("a holder on another terminal: %+v, want it not nested", w.Holder)
	}

	// The other first, this wrapper holding the pane.
	reg = control.Registry{Dir: private()}
	for _, e := range []control.Endpoint{other, self} {
		if _, err := reg.Register(key, e); err != nil {
			t.Fatal(err)
		}
	}
	if w := paneWrappers(reg, key, self.PID, agentTerm, other)(); w.Older == nil || w.Older.PID != other.PID || !w.Older.Nested {
		t.Errorf("an older wrapper whose socket this one's environment names: %+v, want this one nested in it", w.Older)
	}
	if w := paneWrappers(reg, key, self.PID, agentTerm, control.Endpoint{})(); w.Older == nil || w.Older.Nested {
		t.Errorf("an older wrapper this one's environment does not name: %+v, want it not nested", w.Older)
	}
}
