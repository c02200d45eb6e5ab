package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestEnsurePrivateDir(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	base := shortDir(t)
	dir := filepath.Join(base, "rt")
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatalf("second call on our own 0700 directory: %v", err)
	}
	os.Chmod(dir, 0o750)
	if err := EnsurePrivateDir(dir); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("0750: %v", err)
	}
	os.Chmod(dir, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(dir, link)
	if err := EnsurePrivateDir(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlink: %v", err)
	}
	if os.Getuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, nobody, nobody)
		if err := EnsurePrivateDir(other); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Fatalf("foreign owner: %v", err)
		}
	}
}

// Directories of an older herdr-pi have no lock file: their pid decides.
func TestRunDirsOfDeadWrappersAreSwept(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	// A pid that surely is dead: a child we started and reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(base, runDirPrefix+strconv.Itoa(cmd.Process.Pid)+"-123")
	alive := filepath.Join(base, runDirPrefix+strconv.Itoa(os.Getpid())+"-456")
	for _, d := range []string{dead, alive} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o700)
	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	dir := held.Path
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("run dir of a dead wrapper survived: %v", err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("run dir of a live wrapper was removed: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 || !strings.HasPrefix(filepath.Base(dir), runDirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("new run dir %s: %v %v", dir, fi.Mode(), err)
	}
}

func TestRegistryLifecycle(t *testing.T) {
	reg := PaneRegistry(filepath.Join(shortDir(t), "rt"))
	key := PaneKey("/tmp/herdr.sock", "w1:p1")
	if key == PaneKey("/tmp/other.sock", "w1:p1") || strings.ContainsAny(key, "/:") {
		t.Fatalf("pane key %q must depend on the Herdr socket and be a plain file name", key)
	}
	if _, err := reg.Lookup(key); !errors.Is(err, ErrNoWrapper) {
		t.Fatalf("empty registry: %v", err)
	}
	os.MkdirAll(reg.Dir, 0o700)
	e := Endpoint{Socket: "/tmp/x.sock", Token: "t1", PID: os.Getpid(), PaneID: "w1:p1"}
	unregister, err := reg.Register(key, e)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(reg.Dir, key))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("registry file: %v %v", fi, err)
	}
	got, err := reg.Lookup(key)
	if err != nil || got.Socket != e.Socket || got.Token != "t1" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	// A newer wrapper in the same pane replaced us: our exit must not
	// remove its entry.
	newer := e
	newer.Token = "t2"
	if _, err := reg.Register(key, newer); err != nil {
		t.Fatal(err)
	}
	unregister()
	if got, err := reg.Lookup(key); err != nil || got.Token != "t2" {
		t.Fatalf("newer entry lost: %+v %v", got, err)
	}
	// A dead wrapper's entry is stale, and removed (in a pane of its own:
	// on top of a running wrapper, the lookup would find that one).
	cmd := exec.Command("true")
	cmd.Run()
	stale := e
	stale.PID = cmd.Process.Pid
	staleKey := PaneKey("/tmp/herdr.sock", "w1:p2")
	reg.Register(staleKey, stale)
	if _, err := reg.Lookup(staleKey); !errors.Is(err, ErrStale) || !errors.Is(err, ErrNoWrapper) {
		t.Fatalf("stale entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir, staleKey)); !os.IsNotExist(err) {
		t.Fatalf("stale entry not removed: %v", err)
	}
}

func TestStartAndCloseLeaveNothingBehind(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	base := filepath.Join(shortDir(t), "rt")
	rec := newRecorder()
	run, err := Start(RunConfig{RuntimeBase: base, PaneID: "w1:p1", HerdrSocket: "/tmp/h.sock", Events: rec, Requests: rec})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(run.Env(), " ")
	if !strings.Contains(env, EnvSocket+"="+run.Endpoint.Socket) || !strings.Contains(env, EnvToken+"="+run.Endpoint.Token) {
		t.Fatalf("env %q", env)
	}
	got, err := PaneRegistry(base).Lookup(PaneKey("/tmp/h.sock", "w1:p1"))
	if err != nil || got.Socket != run.Endpoint.Socket {
		t.Fatalf("registry: %+v %v", got, err)
	}
	if fi, err := os.Stat(run.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("run dir %v %v", fi, err)
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(run.Dir); !os.IsNotExist(err) {
		t.Errorf("run dir left behind: %v", err)
	}
	// Gone from the disk, not left for the next sweep or lookup to take
	// as a dead wrapper's (looked at first: a lookup removes such an
	// entry itself, and would hide that Close left it).
	if _, err := os.Lstat(filepath.Join(PaneRegistry(base).Dir, PaneKey("/tmp/h.sock", "w1:p1"))); !os.IsNotExist(err) {
		t.Errorf("registry file left behind: %v", err)
	}
	if _, err := PaneRegistry(base).Lookup(PaneKey("/tmp/h.sock", "w1:p1")); !errors.Is(err, ErrNoWrapper) {
		t.Errorf("registry entry left behind: %v", err)
	}
	run.Close()
}

// deadPID is the pid of a child that ran and was reaped: surely gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRegistryEntriesAndTheSweepOnRegister(t *testing.T) {
	reg := PaneRegistry(filepath.Join(shortDir(t), "rt"))
	if got, err := reg.Entries(); err != nil || len(got) != 0 {
		t.Fatalf("missing registry: %v %v", got, err)
	}
	live := Endpoint{Socket: "/tmp/a.sock", Token: "a", PID: os.Getpid(), PaneID: "w1:p1"}
	dead := Endpoint{Socket: "/tmp/b.sock", Token: "b", PID: deadPID(t), PaneID: "w1:p2"}
	if _, err := reg.Register(PaneKey("/h", "w1:p1"), live); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(PaneKey("/h", "w1:p2"), dead); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(reg.Dir, "pane-garbage.json")
	if err := os.WriteFile(garbage, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, err := reg.Entries()
	if err != nil || len(entries) != 3 {
		t.Fatalf("entries %+v %v", entries, err)
	}
	byPane := map[string]Entry{}
	for _, e := range entries {
		byPane[e.Endpoint.PaneID] = e
	}
	if e := byPane["w1:p1"]; !e.Alive || e.Err != nil || e.File != filepath.Join(reg.Dir, PaneKey("/h", "w1:p1")) {
		t.Errorf("live entry %+v", e)
	}
	if e := byPane["w1:p2"]; e.Alive || e.Err != nil || e.Endpoint.PID != dead.PID {
		t.Errorf("dead entry %+v", e)
	}
	if e := byPane[""]; e.Err == nil || e.Alive {
		t.Errorf("unreadable entry %+v", e)
	}

	// The next wrapper to register, in any pane, removes the dead entry
	// and leaves the live one and the file it cannot read.
	if _, err := reg.Register(PaneKey("/h", "w1:p3"), live); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(byPane["w1:p2"].File); !os.IsNotExist(err) {
		t.Errorf("stale entry survived a registration: %v", err)
	}
	for _, f := range []string{byPane["w1:p1"].File, garbage} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}

	os.Chmod(reg.Dir, 0o755)
	var pe *PrivateDirError
	if _, err := reg.Entries(); !errors.As(err, &pe) || pe.Problem != ProblemMode || pe.Mode != 0o755 {
		t.Errorf("open registry dir: %v", err)
	}
}

func TestRunDirsListsLiveAndDeadWrappers(t *testing.T) {
	base := shortDir(t)
	dead := deadPID(t)
	for _, name := range []string{runDirPrefix + strconv.Itoa(dead) + "-1", runDirPrefix + strconv.Itoa(os.Getpid()) + "-2", "panes", runDirPrefix + "x-3"} {
		if err := os.Mkdir(filepath.Join(base, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got := RunDirs(base)
	alive := map[int]bool{}
	for _, d := range got {
		alive[d.PID] = d.Alive
	}
	if len(got) != 2 || alive[dead] || !alive[os.Getpid()] {
		t.Fatalf("run dirs %+v", got)
	}
}

// A 60-byte XDG_RUNTIME_DIR and a 10-digit uid make a runtime base of 80
// bytes, under which a socket path is 116 bytes, over the 107 limit: the
// run then lives in a short private directory instead, the socket works,
// and the registry under the long base still leads to it.
func TestStartKeepsTheSocketPathShortWhateverTheRuntimeBase(t *testing.T) {
	root := shortDir(t)
	old := shortRoot
	shortRoot = root
	t.Cleanup(func() { shortRoot = old })

	xdg := filepath.Join(shortDir(t), "x")
	xdg += strings.Repeat("x", 60-len(xdg))
	base := filepath.Join(xdg, "herdr-pi-4294967295")
	if len(xdg) != 60 || len(base) != 80 {
		t.Fatalf("setup: %d-byte runtime dir, %d-byte base", len(xdg), len(base))
	}
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run, err := Start(RunConfig{RuntimeBase: base, PaneID: "w1:p1", HerdrSocket: "/tmp/h.sock", Events: rec, Requests: rec})
	if err != nil {
		t.Fatalf("Start under an 80-byte runtime base: %v", err)
	}
	defer run.Close()
	sock := run.Endpoint.Socket
	short := filepath.Join(root, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
	if len(sock) > 107 || filepath.Dir(filepath.Dir(sock)) != short {
		t.Fatalf("socket %s (%d bytes), want it under %s", sock, len(sock), short)
	}
	for path, want := range map[string]fs.FileMode{short: 0o700, run.Dir: 0o700} {
		if err := CheckPrivateDir(path); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != want {
			t.Fatalf("%s has mode %v", path, fi.Mode())
		}
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	got, err := PaneRegistry(base).Lookup(PaneKey("/tmp/h.sock", "w1:p1"))
	if err != nil || got.Socket != sock {
		t.Fatalf("registry under the long base: %+v %v", got, err)
	}
	c, err := Dial(t.Context(), sock, run.Endpoint.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatalf("status over the short socket: %v", err)
	}
	c.Close()
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(run.Dir); !os.IsNotExist(err) {
		t.Errorf("run dir left behind: %v", err)
	}

	// A short base is used as it is.
	if b := filepath.Join(root, "rt"); SocketBase(b) != b {
		t.Fatalf("SocketBase(%s) = %s", b, SocketBase(b))
	}
}

// The fallback lives in a shared directory: one someone put in our way (a
// symlink, say) is refused, never followed.
func TestTheShortSocketBaseIsNeverASymlink(t *testing.T) {
	root := shortDir(t)
	old := shortRoot
	shortRoot = root
	t.Cleanup(func() { shortRoot = old })
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, fmt.Sprintf("herdr-pi-%d", os.Getuid()))); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	base := filepath.Join(root, strings.Repeat("y", 90))
	_, err := Start(RunConfig{RuntimeBase: base, Events: rec, Requests: rec})
	var pe *PrivateDirError
	if !errors.As(err, &pe) || pe.Problem != ProblemNotDir {
		t.Fatalf("Start with a symlink as the short base: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("something was created through the symlink: %v", entries)
	}
}

// An entry lives as long as its run directory: a wrapper in another pid
// namespace (a pid absent here) keeps its entry while it holds its run
// directory's lock; a killed wrapper's entry goes even when its pid now
// names a live process (here the test's own).
func TestRegistryEntriesLiveByTheirRunDirectory(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	reg := PaneRegistry(base)
	held, err := NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	const foreign = 1 << 30
	foreignDir := filepath.Join(base, runDirPrefix+strconv.Itoa(foreign)+"-1")
	if err := os.Rename(held.Path, foreignDir); err != nil {
		t.Fatal(err)
	}
	held.Path = foreignDir
	reusedDir := filepath.Join(base, runDirPrefix+strconv.Itoa(os.Getpid())+"-2")
	if err := os.Mkdir(reusedDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reusedDir, runLockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := Endpoint{Socket: filepath.Join(foreignDir, socketName), Token: "a", PID: foreign, PaneID: "w1:p1"}
	killed := Endpoint{Socket: filepath.Join(reusedDir, socketName), Token: "b", PID: os.Getpid(), PaneID: "w1:p2"}
	for _, e := range []Endpoint{elsewhere, killed} {
		if _, err := reg.Register(PaneKey("/h", e.PaneID), e); err != nil {
			t.Fatal(err)
		}
	}
	// Registering swept once more: the other namespace's entry stays.
	if got, err := reg.Lookup(PaneKey("/h", "w1:p1")); err != nil || got.Token != "a" {
		t.Errorf("the entry of a wrapper in another pid namespace: %+v %v", got, err)
	}
	if _, err := reg.Lookup(PaneKey("/h", "w1:p2")); !errors.Is(err, ErrStale) {
		t.Errorf("the entry of a killed wrapper whose pid is reused: %v", err)
	}
	held.Remove()
	if _, err := reg.Lookup(PaneKey("/h", "w1:p1")); !errors.Is(err, ErrStale) {
		t.Errorf("the entry of a wrapper whose run directory is gone: %v", err)
	}
}

// A wrapper started in a pane whose wrapper still runs (herdr-pi wrap
// bash, then herdr-pi wrap pi in that shell) takes the pane's entry over
// and, when it ends, gives it back to the one it replaced if that one
// still runs: the pane's hooks must find the outer wrapper again, not "no
// wrapper". However they end, the entry goes to the newest that still runs.
func TestANestedWrapperGivesThePaneBackWhenItEnds(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	reg := PaneRegistry(base)
	key := PaneKey("/tmp/h.sock", "w1:p1")
	start := func() *Run {
		t.Helper()
		rec := newRecorder()
		run, err := Start(RunConfig{RuntimeBase: base, PaneID: "w1:p1", HerdrSocket: "/tmp/h.sock", Events: rec, Requests: rec})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Close() })
		return run
	}
	registered := func(want *Run, when string) {
		t.Helper()
		got, err := reg.Lookup(key)
		if err != nil || got.Token != want.Endpoint.Token {
			t.Fatalf("%s: the pane's entry is %+v (%v), want the wrapper at %s", when, got, err, want.Endpoint.Socket)
		}
	}

	outer := start()
	inner := start()
	registered(inner, "while the inner wrapper runs")
	if outer.Sharing != nil || inner.Sharing == nil || inner.Sharing.Token != outer.Endpoint.Token {
		t.Fatalf("the wrappers say they share the pane with %+v and %+v", outer.Sharing, inner.Sharing)
	}
	inner.Close()
	registered(outer, "after the inner wrapper ended")

	// Three deep, the middle one ending first: the entry stays the
	// newest's, and at its end goes to the outermost, passing over the
	// one that is gone.
	middle := start()
	newest := start()
	middle.Close()
	registered(newest, "after the middle wrapper ended")
	newest.Close()
	registered(outer, "after the newest wrapper ended")

	// A wrapper killed on top (it cannot unregister) does not hide the
	// one under it from a lookup, nor from the list doctor reads.
	killed := Endpoint{Socket: "/tmp/killed.sock", Token: "killed", PID: deadPID(t), PaneID: "w1:p1"}
	if _, err := reg.Register(key, killed); err != nil {
		t.Fatal(err)
	}
	entries, err := reg.Entries()
	if err != nil || len(entries) != 1 || !entries[0].Alive || entries[0].Endpoint.Token != outer.Endpoint.Token {
		t.Fatalf("entries under a killed wrapper: %+v %v", entries, err)
	}
	registered(outer, "after the wrapper on top was killed")

	outer.Close()
	if _, err := reg.Lookup(key); !errors.Is(err, ErrNoWrapper) {
		t.Fatalf("after every wrapper ended: %v", err)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir, key)); !os.IsNotExist(err) {
		t.Fatalf("the entry outlived every wrapper: %v", err)
	}
}

// A session file one wrapper's probe named is taken for every other
// running wrapper, and free again once that wrapper ends.
func TestASessionFileClaimedByOneWrapperIsTakenForTheOthers(t *testing.T) {
	base := filepath.Join(shortDir(t), "rt")
	start := func() *Run {
		t.Helper()
		rec := newRecorder()
		run, err := Start(RunConfig{RuntimeBase: base, Events: rec, Requests: rec})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Close() })
		return run
	}
	a, b := start(), start()
	const file = "/home/me/.pi/agent/sessions/--api--/a.jsonl"
	if b.SessionTaken(file) {
		t.Fatal("taken before anyone claimed it")
	}
	if err := a.ClaimSession(file); err != nil {
		t.Fatal(err)
	}
	if !b.SessionTaken(file) || b.SessionTaken("/home/me/.pi/agent/sessions/--api--/b.jsonl") {
		t.Fatal("the claim does not say which file is taken")
	}
	if a.SessionTaken(file) {
		t.Fatal("a wrapper's own claim took the file from it")
	}
	a.Close()
	if b.SessionTaken(file) {
		t.Fatal("the claim of a wrapper that ended still holds")
	}
}

// A wrapper registering over a named pipe left where its pane's entry
// goes (mkfifo by mistake) does not wait on it: the entry replaces it, and
// a lookup finds the wrapper. The pipe's other end is taken only when the
// registration opened it and waits there, so a registration that waits
// still ends, and fails here.
func TestRegisterDoesNotWaitOnAPipeInItsPlace(t *testing.T) {
	reg := PaneRegistry(shortDir(t))
	key := PaneKey("/tmp/h.sock", "w1:p1")
	if _, err := reg.Register("other", Endpoint{Socket: "/tmp/x.sock", Token: "t", PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(reg.Dir, key)
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	waited := testenv.WaitsOnPipe(fifo, func() {
		_, err = reg.Register(key, Endpoint{Socket: "/tmp/y.sock", Token: "t", PID: os.Getpid()})
	})
	if waited || err != nil {
		t.Fatalf("register: waited on the pipe %v, err %v", waited, err)
	}
	if e, err := reg.Lookup(key); err != nil || e.Socket != "/tmp/y.sock" {
		t.Fatalf("lookup: %+v, %v", e, err)
	}
}
