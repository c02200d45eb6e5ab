package control

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// helperBaseEnv makes this test binary, started by startWrapperLike, a
// stand-in wrapper instead of running tests.
const helperBaseEnv = "HERDR_PI_TEST_RUNDIR_BASE"

// runDirHelper is the stand-in wrapper: it makes a run directory the way
// wrap does, starts a child (its "agent", a sleep) as wrap starts one,
// prints both, and waits to be killed.
func runDirHelper() {
	base := os.Getenv(helperBaseEnv)
	if base == "" {
		return
	}
	held, err := NewRunDir(base)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	agent := exec.Command("sleep", "60")
	if err := agent.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(held.Path, agent.Process.Pid)
	time.Sleep(time.Minute)
	os.Exit(1)
}

// wrapperLike is a stand-in wrapper process holding a run directory.
type wrapperLike struct {
	cmd   *exec.Cmd
	dir   string
	agent int
}

func startWrapperLike(t *testing.T, base string) *wrapperLike {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperBaseEnv+"="+base)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &wrapperLike{cmd: cmd}
	t.Cleanup(func() {
		w.kill()
		if w.agent > 0 {
			syscall.Kill(w.agent, syscall.SIGKILL)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscan(line, &w.dir, &w.agent); err != nil || strings.HasPrefix(line, "error") {
		t.Fatalf("stand-in wrapper: %q %v", line, err)
	}
	return w
}

// kill ends the stand-in wrapper with SIGKILL (no cleanup of its own) and
// reaps it; its agent lives on.
func (w *wrapperLike) kill() {
	if w.cmd.ProcessState == nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// sweep is what every starting wrapper does first.
func sweep(t *testing.T, base string) {
	t.Helper()
	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	held.Remove()
}

// A wrapper in another container (another pid namespace, the same /tmp
// and uid) names its directory with a pid that does not exist here; as
// long as it runs, its directory and socket stay. Once killed its agent
// may live on, but the directory is swept.
func TestRunDirOfAWrapperInAnotherPidNamespaceIsKept(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	w := startWrapperLike(t, base)
	// Far above pid_max (at most 2^22): no process here has it.
	const foreign = 1 << 30
	if err := syscall.Kill(foreign, 0); err != syscall.ESRCH {
		t.Fatalf("pid %d: %v", foreign, err)
	}
	_, suffix, _ := strings.Cut(strings.TrimPrefix(filepath.Base(w.dir), runDirPrefix), "-")
	dir := filepath.Join(base, fmt.Sprintf("%s%d-%s", runDirPrefix, foreign, suffix))
	if err := os.Rename(w.dir, dir); err != nil {
		t.Fatal(err)
	}

	sweep(t, base)
	if !exists(t, dir) {
		t.Fatal("a live wrapper's run dir was swept because its pid is not ours to see")
	}
	if got := RunDirs(base); len(got) != 1 || got[0].Path != dir || got[0].PID != foreign || !got[0].Alive {
		t.Errorf("run dirs %+v, want %s alive", got, dir)
	}
	if got, ok := ReadRunDir(dir); !ok || !got.Alive {
		t.Errorf("ReadRunDir %+v %v, want alive", got, ok)
	}

	w.kill()
	if syscall.Kill(w.agent, 0) != nil {
		t.Fatal("the agent should outlive its wrapper here")
	}
	if got, ok := ReadRunDir(dir); !ok || got.Alive {
		t.Errorf("ReadRunDir of a killed wrapper %+v %v, want dead", got, ok)
	}
	sweep(t, base)
	if exists(t, dir) {
		t.Error("the run dir of a killed wrapper survived the sweep (its agent still runs)")
	}
}

// A killed wrapper whose pid now names another process (here: the test
// itself) has its directory swept all the same.
func TestRunDirOfAKilledWrapperIsSweptWhoeverHasItsPID(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	w := startWrapperLike(t, base)
	w.kill()
	_, suffix, _ := strings.Cut(strings.TrimPrefix(filepath.Base(w.dir), runDirPrefix), "-")
	reused := filepath.Join(base, fmt.Sprintf("%s%d-%s", runDirPrefix, os.Getpid(), suffix))
	if err := os.Rename(w.dir, reused); err != nil {
		t.Fatal(err)
	}
	if got := RunDirs(base); len(got) != 1 || got[0].Alive {
		t.Errorf("run dirs %+v, want one dead", got)
	}
	sweep(t, base)
	if exists(t, reused) {
		t.Error("the run dir of a killed wrapper survived because its pid was reused")
	}
}

// The lock is the wrapper's alone: opened close-on-exec, so no child has
// it among its fds.
func TestRunDirLockIsNotInheritedByTheAgent(t *testing.T) {
	held, err := NewRunDir(filepath.Join(shortDir(t), "rt"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	flags, err := unix.FcntlInt(held.lock.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("lock fd flags %#x %v, want FD_CLOEXEC", flags, err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	lockPath := filepath.Join(held.Path, runLockName)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", child.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", child.Process.Pid, fd.Name())); target == lockPath {
			t.Errorf("the child has the lock as fd %s", fd.Name())
		}
	}
}

// While a directory is made, nothing under runDirPrefix is there, and a
// sweep leaves the half-made one alone; once in place it is alive.
func TestRunDirIsInPlaceOnlyWithItsLockHeld(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	base := filepath.Join(shortDir(t), "rt")
	var seen []string
	beforeRename = func(tmp string) {
		seen = append(seen, tmp)
		if got := RunDirs(base); len(got) != 0 {
			t.Errorf("visible while half made: %+v", got)
		}
		sweepRunDirs(base)
		if !exists(t, tmp) {
			t.Error("a sweep removed a directory being made")
		}
	}
	t.Cleanup(func() { beforeRename = func(string) {} })
	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	if len(seen) != 1 || !strings.HasPrefix(filepath.Base(seen[0]), makingPrefix) || exists(t, seen[0]) {
		t.Errorf("half-made dirs %q", seen)
	}
	if fi, err := os.Lstat(filepath.Join(held.Path, runLockName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v", fi, err)
	}
	if got := RunDirs(base); len(got) != 1 || got[0].Path != held.Path || !got[0].Alive {
		t.Errorf("run dirs %+v", got)
	}
	held.Remove()
	if exists(t, held.Path) {
		t.Error("Remove left the run dir")
	}
}

// Many wrappers starting at once (Herdr restoring a layout of many panes)
// each sweep the base as they make their directories. A sweep that comes
// between a maker's creating its lock file and locking it must not take
// the directory: before, it did, and a maker raced so on each of its
// attempts got no run directory, and so no control socket (old: 'create
// run directory in …: a sweep removed the directory while it was made';
// TestRunDirsMadeTogetherAllStay failed so in a loaded CI run).
func TestASweepBetweenTheLockFileAndItsLockLeavesTheDirectory(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	beforeLock = func(tmp string) {
		sweepRunDirs(base)
		if !exists(t, tmp) {
			t.Error("a sweep removed a directory whose lock file was just made")
		}
	}
	t.Cleanup(func() { beforeLock = func(string) {} })
	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	if got := RunDirs(base); len(got) != 1 || !got[0].Alive {
		t.Errorf("run dirs %+v", got)
	}
}

// Leftovers of a wrapper killed while making its directory are swept
// once surely abandoned: a free lock, or no lock file and older than
// makingGrace. One whose lock is held, or fresh without one, is being
// made right now.
func TestHalfMadeRunDirsAreSweptOnlyWhenAbandoned(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	if err := EnsurePrivateDir(base); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, lock bool) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(dir, runLockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	freeLock := mk(makingPrefix+"1-1", true)
	heldLock := mk(makingPrefix+"1-2", true)
	oldBare := mk(makingPrefix+"1-3", false)
	freshBare := mk(makingPrefix+"1-4", false)
	old := time.Now().Add(-2 * makingGrace)
	if err := os.Chtimes(oldBare, old, old); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(heldLock, runLockName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	sweep(t, base)
	for dir, want := range map[string]bool{freeLock: false, heldLock: true, oldBare: false, freshBare: true} {
		if exists(t, dir) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(dir), !want, want)
		}
	}
}

// Wrappers starting together each sweep; none takes another's directory.
func TestRunDirsMadeTogetherAllStay(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	const n = 16
	held := make([]*HeldRunDir, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { held[i], errs[i] = NewRunDir(base) })
	}
	wg.Wait()
	for i, h := range held {
		if errs[i] != nil {
			t.Fatalf("run dir %d: %v", i, errs[i])
		}
		defer h.Remove()
		if got, ok := ReadRunDir(h.Path); !ok || !got.Alive || got.PID != os.Getpid() {
			t.Errorf("run dir %d: %+v %v", i, got, ok)
		}
	}
	if got := RunDirs(base); len(got) != n {
		t.Errorf("%d run dirs, want %d", len(got), n)
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), runDirPrefix) {
			t.Errorf("left in base: %s", e.Name())
		}
	}
}

// A run whose socket cannot be listened on removes the run directory it
// made for it: nothing of a run that never started stays in the base,
// where only the next wrapper's sweep (once the lock is free) would find
// it. Listen's refusal of a run without an event sink is the failure a
// test can provoke after the directory exists; every failure of Listen
// takes the same way out.
func TestARunThatCannotListenLeavesNoRunDirectory(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	run, err := Start(RunConfig{RuntimeBase: base, Requests: newRecorder()})
	if err == nil {
		run.Close()
		t.Fatal("Start without an event sink listened")
	}
	if !strings.Contains(err.Error(), "Listen needs") {
		t.Fatalf("Start failed before its Listen, so this proves nothing: %v", err)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatalf("the base was not made, so this proves nothing: %v", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(strings.TrimPrefix(e.Name(), "."), runDirPrefix) {
			t.Errorf("left in %s: %s", base, e.Name())
		}
	}
}

// A run directory gone while the wrapper named in it runs was removed from
// under it; gone with its wrapper, or with a pid some other program took
// since, it was not.
func TestRunDirRemovedNeedsItsWrapperRunning(t *testing.T) {
	base := t.TempDir()
	wrapper := exec.Command("sh", "-c", "sleep 600; :", "herdr-pi", "wrap")
	if err := wrapper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wrapper.Process.Kill(); wrapper.Wait() })
	other := exec.Command("sh", "-c", "sleep 600; :")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	dirOf := func(pid int) string { return filepath.Join(base, fmt.Sprintf("run-%d-42", pid)) }

	// /proc shows the new command line once sh runs.
	for deadline := time.Now().Add(10 * time.Second); !wrapperProcess(wrapper.Process.Pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in wrapper never showed its command line")
		}
	}
	if pid, removed := RunDirRemoved(dirOf(wrapper.Process.Pid)); !removed || pid != wrapper.Process.Pid {
		t.Errorf("gone under a running wrapper: %d, %v", pid, removed)
	}
	if _, removed := RunDirRemoved(dirOf(other.Process.Pid)); removed {
		t.Error("a pid another program runs under counted as the wrapper")
	}
	if err := os.Mkdir(dirOf(wrapper.Process.Pid), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, removed := RunDirRemoved(dirOf(wrapper.Process.Pid)); removed {
		t.Error("a directory that is there counted as removed")
	}
	if _, removed := RunDirRemoved(filepath.Join(base, "not-a-run-dir")); removed {
		t.Error("a directory not named as a run directory counted")
	}
}

// The next wrapper's start removes what a killed wrapper left, and says
// so in its log, naming the directory and the wrapper: a person who finds
// a directory gone, or reads doctor's count of them drop, learns why.
func TestStartSaysWhichRunDirsOfKilledWrappersItRemoved(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	w := startWrapperLike(t, base)
	w.kill()
	pid, _ := runDirPID(filepath.Base(w.dir))
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	rec := newRecorder()
	run, err := Start(RunConfig{RuntimeBase: base, Events: rec, Requests: rec, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if exists(t, w.dir) {
		t.Fatal("the killed wrapper's run dir is still there")
	}
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("removed %s, left by the wrapper pid %d, which was killed", w.dir, pid)
	for _, l := range lines {
		if strings.Contains(l, want) {
			return
		}
	}
	t.Fatalf("the log says nothing of the removal (want %q):\n%s", want, strings.Join(lines, "\n"))
}
