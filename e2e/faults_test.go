package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/session"
)

// The fault tests (RELIABILITY.md lists them with their guarantees). Each
// runs herdr-pi wrap under an outer pty against the strict fake Herdr and,
// whatever the fault, checks the four promises at the end: the agent's own
// exit code comes back, the outer terminal's mode is what it was, Herdr's
// pane is released (or, where Herdr cannot answer, the run still ends),
// and nothing is left behind — no file or socket in the runtime
// directory, no process that carried the run's mark.

// faultEnv is one fault test's world: private XDG directories, the commands
// on PATH, and a mark every process of the run inherits.
type faultEnv struct {
	t       *testing.T
	h       *herdrtest.Server // nil: outside Herdr
	dir     string
	runtime string // XDG_RUNTIME_DIR (short: sockets live there)
	mark    string
	env     []string
}

func newFaultEnv(t *testing.T, h *herdrtest.Server) *faultEnv {
	t.Helper()
	dir := t.TempDir()
	rt, err := os.MkdirTemp("/tmp", "hpf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	e := &faultEnv{t: t, h: h, dir: dir, runtime: rt, mark: fmt.Sprintf("HERDR_PI_FAULT_MARK=%s", filepath.Base(rt))}
	e.env = linkCommands(t, dir, "XDG_RUNTIME_DIR="+rt, e.mark, "HERDR_PI_LOG=")
	if h != nil {
		e.env = append(e.env, h.Env()...)
	}
	return e
}

// runtimeBase is herdr-pi's directory under XDG_RUNTIME_DIR.
func (e *faultEnv) runtimeBase() string {
	return filepath.Join(e.runtime, fmt.Sprintf("herdr-pi-%d", os.Getuid()))
}

// faultRun is one wrap run under an outer pty.
type faultRun struct {
	*outerRun
	e        *faultEnv
	before   unix.Termios
	finished bool
}

// wrap starts `herdr-pi wrap -- fakeagent SCRIPT` with the script's lines.
func (e *faultEnv) wrap(lines ...string) *faultRun {
	e.t.Helper()
	return e.start(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(e.t, lines...)}, Keep: true})
}

func (e *faultEnv) start(o outerOptions) *faultRun {
	e.t.Helper()
	o.Env = e.env
	r, err := startOuter(o)
	if err != nil {
		e.t.Fatal(err)
	}
	fr := &faultRun{outerRun: r, e: e, before: r.modeBefore}
	e.t.Cleanup(func() {
		if !fr.finished {
			// The test failed before finish: end the run, leave nothing.
			_ = unix.Kill(-r.cmd.Process.Pid, unix.SIGKILL)
			<-r.exited
			r.master.Close()
		}
	})
	return fr
}

// waitScreen waits until the output so far contains s.
func (r *faultRun) waitScreen(s string) {
	r.e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Contains(r.bytes(), []byte(s)) {
		if time.Now().After(deadline) {
			r.e.t.Fatalf("%q never appeared; output:\n%q", s, tailOf(r.bytes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *faultRun) send(s string) {
	r.e.t.Helper()
	if _, err := r.master.Write([]byte(s)); err != nil {
		r.e.t.Fatal(err)
	}
}

// finish waits for the run to end and checks the four promises; released
// says whether Herdr can be asked to end right (false while it hangs).
func (r *faultRun) finish(wantExit int, released bool) {
	t := r.e.t
	t.Helper()
	r.finished = true
	var werr error
	select {
	case werr = <-r.exited:
	case <-time.After(2 * time.Minute):
		_ = unix.Kill(-r.cmd.Process.Pid, unix.SIGKILL)
		<-r.exited
		t.Fatalf("wrap did not end; output:\n%q", tailOf(r.bytes()))
	}
	after, err := unix.IoctlGetTermios(int(r.master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.readDone:
	case <-time.After(5 * time.Second):
		_ = r.master.SetReadDeadline(time.Now())
		<-r.readDone
	}
	r.master.Close()
	if got := exitStatus(werr); got != wantExit {
		t.Errorf("exit status %d, want the agent's %d; output:\n%q", got, wantExit, tailOf(r.bytes()))
	}
	if *after != r.before {
		t.Errorf("the terminal mode was not restored:\nbefore %+v\nafter  %+v", r.before, *after)
	}
	if released && r.e.h != nil {
		if err := checkReleased(r.e.h); err != nil {
			t.Errorf("Herdr: %v", err)
		}
	}
	r.e.nothingLeft()
}

// nothingLeft fails when a file or socket is left in the runtime
// directory, or a process of the run outlives it.
func (e *faultEnv) nothingLeft() {
	e.t.Helper()
	var left []string
	_ = filepath.WalkDir(e.runtimeBase(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		e.t.Errorf("left in the runtime directory: %s", strings.Join(left, " "))
	}
	// The wrapper reaps its child before it exits, but a grandchild the
	// agent started may still be on its way out: give it a moment.
	var procs []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		procs = marked(e.mark)
		if len(procs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(procs) > 0 {
		e.t.Errorf("processes left running: %s", strings.Join(procs, "; "))
	}
}

// marked lists the live processes whose environment holds mark.
func marked(mark string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00"+mark+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie is gone already; its parent reaps it
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		out = append(out, d.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

func tailOf(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// reportsSince lists the pane's reported states after t.
func reportsSince(h *herdrtest.Server, at time.Time) []string {
	var out []string
	for _, c := range h.Reports(h.PaneID()) {
		if c.At.After(at) && c.Accepted {
			out = append(out, c.State)
		}
	}
	return out
}

// lastReport is the pane's last accepted report after t ("" when none).
func lastReport(h *herdrtest.Server, at time.Time) string {
	s := reportsSince(h, at)
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// Herdr restarts while the agent runs, after a short outage and after one
// longer than the reporter's longest back-off (30 s). Once Herdr answers
// again (with no memory of the pane's agent, as after a real restart) the
// current state is reported again without waiting for a change, and the
// pane is released at the end.
func TestFaultHerdrRestartsMidRun(t *testing.T) {
	for _, outage := range []time.Duration{time.Second, 35 * time.Second} {
		t.Run(outage.String(), func(t *testing.T) {
			t.Parallel()
			h := herdrtest.Start(t)
			e := newFaultEnv(t, h)
			r := e.wrap("pi-working 600ms", "pi-idle", "print ready\\r\\n", "readline", "exit 4")
			r.waitScreen("ready")
			h.WaitFor(t, 30*time.Second, "idle reported", func() bool { return lastReport(h, time.Time{}) == "idle" })
			h.Crash()
			down := time.Now()
			// status tells the truth meanwhile: Herdr is not reached.
			awaitHerdrLine(t, e.env, "not reaching Herdr since ")
			time.Sleep(outage - time.Since(down))
			back := time.Now()
			if err := h.Restart(); err != nil {
				t.Fatal(err)
			}
			h.WaitFor(t, 30*time.Second, "idle reported again after the restart", func() bool { return lastReport(h, back) == "idle" })
			awaitHerdrLine(t, e.env, "reporting to pane ")
			r.send("\r")
			r.finish(4, true)
		})
	}
}

// awaitHerdrLine waits until `status --json` answers with a herdr line
// that starts with prefix.
func awaitHerdrLine(t *testing.T, env []string, prefix string) {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, ok := tryStatus(env); ok {
			if last = st.Herdr; strings.HasPrefix(last, prefix) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("status's herdr line is %q after 30s, want it to start %q", last, prefix)
}

// A Herdr that answers every request late (but within the client's
// deadlines) slows nothing the agent does, and still gets each state the
// agent holds (the agent stays working until the test answers, so no
// burst is collapsed) and the release.
func TestFaultHerdrSlow(t *testing.T) {
	h := herdrtest.Start(t)
	h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 200 * time.Millisecond})
	e := newFaultEnv(t, h)
	r := e.wrap("pi-working 200ms", "readline", "pi-idle", "print done\\r\\n", "readline", "exit 5")
	h.WaitFor(t, 30*time.Second, "working", func() bool { return lastReport(h, time.Time{}) == "working" })
	r.send("\r")
	r.waitScreen("done")
	h.WaitFor(t, 30*time.Second, "idle", func() bool { return lastReport(h, time.Time{}) == "idle" })
	r.send("\r")
	r.finish(5, true)
}

// Herdr reads the first report only after the wrapper gave up on it (both
// attempts, 2 s in all) and sent the state that followed — what a loaded
// machine did to the soak. Herdr ignores the late report by its seq: the
// pane shows the newer state, and is released at the end.
func TestFaultHerdrReadsAReportTooLate(t *testing.T) {
	h := herdrtest.Start(t)
	h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultSlow, Delay: 4 * time.Second, Methods: []string{"pane.report_agent"}, Count: 2})
	e := newFaultEnv(t, h)
	r := e.wrap("pi-working 200ms", "readline", "exit 5")
	h.WaitFor(t, 30*time.Second, "both late attempts of the first report, and the next state", func() bool {
		late := 0
		for _, req := range h.Requests() {
			if req.Fault == herdrtest.FaultSlow && req.Reply != "" {
				late++
			}
		}
		return late == 2 && lastReport(h, time.Time{}) == "working"
	})
	if st := h.Pane(h.PaneID()); st.Status != "working" {
		t.Errorf("the pane shows %q, want the state that came last", st.Status)
	}
	r.send("\r")
	r.finish(5, true)
}

// A child that floods the terminal: every byte arrives, the agent's code
// comes back, the pane is released.
func TestFaultChildFloods(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	const n = 16 << 20
	r := e.start(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "sh", "-c", fmt.Sprintf("head -c %d /dev/urandom | base64 -w 160; exit 6", n)}})
	r.finish(6, true)
	if got := r.count(); got < n*4/3 {
		t.Fatalf("%d bytes reached the terminal, want at least %d", got, n*4/3)
	}
}

// The terminal is resized a hundred times a second for three seconds: the
// agent keeps running and sees the last size.
func TestFaultResizeStorm(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	lines := []string{"print ready\\r\\n", "readline"}
	for i := 0; i < 100; i++ {
		lines = append(lines, "size", "sleep 50ms")
	}
	r := e.wrap(append(lines, "exit 7")...)
	r.waitScreen("ready")
	tick := time.NewTicker(10 * time.Millisecond)
	for i := 0; i < 300; i++ {
		<-tick.C
		if err := setSize(r.master, uint16(20+i%30), uint16(60+i%90)); err != nil {
			t.Fatal(err)
		}
	}
	tick.Stop()
	if err := setSize(r.master, 33, 111); err != nil {
		t.Fatal(err)
	}
	// The agent prints its size every 50 ms from now on; the last size
	// reaches it once the wrapper has handled the last SIGWINCH.
	r.send("\r")
	r.waitScreen("size: 33 111")
	r.finish(7, true)
}

// mountTmpfs mounts a small tmpfs at a fresh short directory and unmounts
// it when the test ends. The runtime-directory faults need one: as root,
// file modes alone do not make a directory read-only.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "hpm")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		os.Remove(dir)
		testenv.Missing(t, "a tmpfs mount ("+err.Error()+")", "run as root with CAP_SYS_ADMIN, as CI does")
	}
	t.Cleanup(func() {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		os.Remove(dir)
	})
	return dir
}

// The runtime directory is read-only, or full (no block and no inode
// left): the agent runs without the control socket, says so once on
// stderr, reports to Herdr all the same, and exits with its own code.
// Inside the agent, status and waiting name that cause (status --json:
// no_control), not "no wrapper is registered"; doctor's runtime row
// fails, naming the directory, where it said ok. Nothing is left in the
// directory, doctor's probe included.
func TestFaultRuntimeDirUnusable(t *testing.T) {
	for _, tc := range []struct{ name, opts, cause, doctor string }{
		{"read-only", "ro,size=64k", "read-only file system", "is on a read-only filesystem"},
		{"full", "size=8k,nr_inodes=4", "no space left on device", "no free inodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := herdrtest.Start(t)
			e := newFaultEnv(t, h)
			rt := mountTmpfs(t, tc.opts)
			if tc.name == "full" {
				fill(t, rt)
			}
			before := listAll(rt)
			e.runtime = rt
			e.env = append(e.env, "XDG_RUNTIME_DIR="+rt)
			ask := filepath.Join(e.dir, "ask.sh")
			script := "herdr-pi status --json; echo \"status=$?\"; herdr-pi waiting start --source s --id i; echo \"waiting=$?\"\n"
			if err := os.WriteFile(ask, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			r := e.wrap("pi-working 300ms", "pi-idle", "run sh "+ask, "print ready\\r\\n", "readline", "exit 8")
			r.waitScreen("ready")
			h.WaitFor(t, 30*time.Second, "idle reported", func() bool { return lastReport(h, time.Time{}) == "idle" })
			r.send("\r")
			r.finish(8, true)
			out := r.bytes()
			if bytes.Count(out, []byte("no control socket")) != 1 {
				t.Errorf("want one line saying the control socket is off; output:\n%q", tailOf(out))
			}
			flat := strings.Join(strings.Fields(string(out)), " ") // the pty wraps long lines
			for _, want := range []string{`"code": "no_control"`, "status=1", "waiting=1",
				"herdr-pi waiting start: the herdr-pi wrapper of this pane (pid ", ") runs without its control socket: ", tc.cause, "herdr-pi doctor runtime"} {
				if !strings.Contains(flat, want) {
					t.Errorf("status and waiting inside the agent do not say %q:\n%s", want, tailOf([]byte(flat)))
				}
			}
			if strings.Contains(flat, "no herdr-pi wrapper") {
				t.Errorf("status inside the agent says no wrapper runs:\n%s", tailOf([]byte(flat)))
			}

			// A Herdr pane hook runs outside the agent: no variable tells
			// it, but the registry's filesystem does.
			hook := exec.Command("herdr-pi", "status")
			hook.Env = e.env
			hout, _ := hook.CombinedOutput()
			if want := "and none can be: " + rt; !strings.Contains(string(hout), want) || strings.Contains(string(hout), "another XDG_RUNTIME_DIR") {
				t.Errorf("status from a pane hook does not say %q:\n%s", want, hout)
			}

			doctor := exec.Command("herdr-pi", "doctor", "runtime")
			doctor.Env = e.env
			dout, err := doctor.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !regexp.MustCompile(`(?m)^  fail  directory  `+regexp.QuoteMeta(e.runtimeBase())+`.*`+tc.doctor).Match(dout) {
				t.Errorf("doctor runtime: %v; want exit 1 and the directory row failing with %q:\n%s", err, tc.doctor, dout)
			}
			if after := listAll(rt); after != before {
				t.Errorf("the runtime directory changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// fill uses up a tmpfs's inodes and blocks.
func fill(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("the tmpfs never filled")
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%d", i)))
		if err != nil {
			return
		}
		_, _ = f.Write(make([]byte, 64<<10))
		f.Close()
	}
}

func listAll(dir string) string {
	var names []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		names = append(names, p)
		return nil
	})
	return strings.Join(names, " ")
}

// A thousand clients connect to the wrapper's control socket and say
// nothing (thirty times the places it has, and more than a status could
// wait through when each silent one kept its place half a second):
// `herdr-pi status` still answers within its own 5 s, the agent runs on,
// the wrapper is back to its descriptors once they are gone, and the
// socket is gone at the end.
func TestFaultControlSocketHeldBySilentClients(t *testing.T) {
	const n = 1000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*n {
		testenv.Missing(t, fmt.Sprintf("a limit of %d open files", 2*n), "raise it with ulimit -n")
	}
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "print got it\\r\\n", "readline", "exit 9")
	r.waitScreen("ready")
	ep, err := control.PaneRegistry(e.runtimeBase()).Lookup(control.PaneKey(h.SocketPath(), h.PaneID()))
	if err != nil {
		t.Fatalf("the wrapper's registry entry: %v", err)
	}
	before := statusJSON(t, e.env)
	fds := openFDsOf(t, r.cmd.Process.Pid)
	silent := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", ep.Socket)
		if err != nil {
			t.Fatalf("silent client %d: %v", i, err)
		}
		silent = append(silent, c)
	}
	st := statusJSON(t, e.env)
	if st.WrapperPID != r.cmd.Process.Pid || st.Goroutines < 1 || st.HeapLiveKiB < 1 {
		t.Fatalf("status while %d clients hold the socket: %+v", n, st)
	}
	r.send("\r")
	r.waitScreen("got it")
	for _, c := range silent {
		c.Close()
	}
	silent = nil
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		now := openFDsOf(t, r.cmd.Process.Pid)
		st := statusJSON(t, e.env)
		if now <= fds && st.Goroutines <= before.Goroutines {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the silent clients left the wrapper holds %d descriptors (%d before) and %d goroutines (%d before)",
				now, fds, st.Goroutines, before.Goroutines)
		}
	}
	r.send("\r")
	r.finish(9, true)
}

// 400 clients say hello to the wrapper's control socket with the run's
// token, ask, and never read a byte of the answers: most write requests
// in a loop until their socket is full, the rest ask once (a hook hung
// after asking). `herdr-pi status` and a hook's `waiting start` and
// `waiting stop` still answer within their own 5 s, the agent runs on,
// and the wrapper is back to its descriptors once the clients are gone.
// (The wrapper waited up to 5 s on each full socket, and a client's
// unread requests kept its place meanwhile: 32 such clients kept status
// waiting 4.9 s, 320 made it fail.)
func TestFaultControlSocketHeldByClientsThatNeverRead(t *testing.T) {
	const n = 400
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*n {
		testenv.Missing(t, fmt.Sprintf("a limit of %d open files", 2*n), "raise it with ulimit -n")
	}
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "readline", "print got it\\r\\n", "readline", "exit 9")
	r.waitScreen("ready")
	ep, err := control.PaneRegistry(e.runtimeBase()).Lookup(control.PaneKey(h.SocketPath(), h.PaneID()))
	if err != nil {
		t.Fatalf("the wrapper's registry entry: %v", err)
	}
	statusJSON(t, e.env)
	fds := openFDsOf(t, r.cmd.Process.Pid)

	hello := fmt.Sprintf(`{"type":"hello","token":%q,"role":"client","version":1}`+"\n", ep.Token)
	asks := func(k int) []byte {
		b := []byte(hello)
		for i := 0; i < k; i++ {
			b = fmt.Appendf(b, `{"type":"request","id":"%d","method":"status"}`+"\n", i)
		}
		return b
	}
	once, flood := asks(1), asks(2000)
	deaf := make([]net.Conn, 0, n)
	var writers sync.WaitGroup
	defer func() {
		for _, c := range deaf {
			c.Close()
		}
		writers.Wait()
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", ep.Socket)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		deaf = append(deaf, c)
		words := flood
		if i%4 == 0 {
			words = once
		}
		writers.Add(1)
		go func() {
			defer writers.Done()
			_, _ = c.Write(words) // never read
		}()
	}
	st := statusJSON(t, e.env)
	if st.WrapperPID != r.cmd.Process.Pid {
		t.Fatalf("status while %d clients never read: %+v", n, st)
	}
	for _, args := range [][]string{{"waiting", "start", "--source", "hook", "--id", "deaf"}, {"waiting", "stop", "--source", "hook", "--id", "deaf"}} {
		if code, stdout, stderr := herdrPiIn(t, e.env, args...); code != 0 {
			t.Fatalf("%s while %d clients never read: exit %d, stdout %q, stderr %q", strings.Join(args, " "), n, code, stdout, stderr)
		}
	}
	r.send("\r")
	r.waitScreen("got it")
	for _, c := range deaf {
		c.Close()
	}
	writers.Wait()
	deaf = nil
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		now := openFDsOf(t, r.cmd.Process.Pid)
		if now <= fds {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the clients left the wrapper holds %d descriptors (%d before)", now, fds)
		}
	}
	r.send("\r")
	r.finish(9, true)
}

// openFDsOf counts the open descriptors of process pid.
func openFDsOf(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// statusJSON runs `herdr-pi status --json` in env.
func statusJSON(t *testing.T, env []string) control.Status {
	t.Helper()
	st, err := askStatusJSON(env)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tryStatus is statusJSON for a sampler, to which a failed look is no
// failure.
func tryStatus(env []string) (control.Status, bool) {
	st, err := askStatusJSON(env)
	return st, err == nil
}

func askStatusJSON(env []string) (control.Status, error) {
	path, err := lookPathIn("herdr-pi", env)
	if err != nil {
		return control.Status{}, err
	}
	cmd := exec.Command(path, "status", "--json")
	cmd.Args[0] = "herdr-pi"
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return control.Status{}, fmt.Errorf("herdr-pi status --json: %v\n%s", err, out)
	}
	var st control.Status
	if err := json.Unmarshal(out, &st); err != nil {
		return control.Status{}, fmt.Errorf("status --json: %v\n%s", err, out)
	}
	return st, nil
}

// Herdr's notification channel hangs (notification.show never answers):
// the blocked state is still reported, the agent goes on and exits with
// its code, and the pane is released.
func TestFaultNotificationChannelHangs(t *testing.T) {
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"notification.show"}})
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n",
		"run herdr-pi waiting start --source fault --id 1",
		"print blocked\\r\\n", "readline",
		"run herdr-pi waiting stop --source fault --id 1",
		"print answered\\r\\n", "readline", "exit 10")
	r.waitScreen("blocked")
	h.WaitFor(t, 30*time.Second, "blocked reported and a toast tried", func() bool {
		return strings.Contains(strings.Join(reportsSince(h, time.Time{}), " "), "blocked") &&
			strings.Contains(strings.Join(h.Methods(), " "), "notification.show")
	})
	r.send("\r")
	r.waitScreen("answered")
	h.WaitFor(t, 30*time.Second, "unblocked", func() bool {
		last := lastReport(h, time.Time{})
		return last != "" && last != "blocked"
	})
	r.send("\r")
	r.finish(10, true)
}

// The session file is truncated, and rewritten from scratch by another Pi
// (a new file renamed over it), while the agent runs: the wrapper follows
// what the file says now — a sentinel that is gone no longer blocks, one
// written after the truncation does — and the run ends as always.
func TestFaultSessionFileTruncatedAndRewritten(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	agentDir := filepath.Join(e.dir, "pi-agent")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.SessionDir(agentDir, cwd)
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sessions, "2026-12-01T10-00-00-000Z_soak.jsonl")
	head := fmt.Sprintf(`{"type":"session","version":3,"id":"01a22799-ba7b-7032-8994-b66058536b75","timestamp":"2026-12-01T10:00:00.000Z","cwd":%q}`, cwd)
	message := func(id, parent, role, text string) string {
		b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-12-01T10:00:01.000Z",
			"message": map[string]any{"role": role, "content": []any{map[string]string{"type": "text", "text": text}}, "stopReason": "stop"}})
		return string(b)
	}
	write := func(name string, lines ...string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	blocked := write("blocked.jsonl", head, message("u1", "", "user", "hi"), message("a1", "u1", "assistant", "Which file?\n:input_needed:"))
	plain := write("plain.jsonl", head, message("u1", "", "user", "hi"), message("a1", "u1", "assistant", "Done."))
	e.env = append(e.env, "PI_CODING_AGENT_DIR="+agentDir)
	// A shell in front keeps the probe out (the fake agent is not Pi);
	// --agent pi still watches Pi's session directory.
	r := e.start(outerOptions{Keep: true, Argv: []string{"herdr-pi", "wrap", "--agent", "pi", "--", "sh", "-c", "exec fakeagent " + agentScript(t,
		"print ready\\r\\n",
		"run cp "+blocked+" "+file, "print step1\\r\\n", "readline",
		"run cp /dev/null "+file, "print step2\\r\\n", "readline",
		"run cp "+blocked+" "+file, "print step3\\r\\n", "readline",
		"run cp "+plain+" "+file+".new", "run mv "+file+".new "+file, "print step4\\r\\n", "readline",
		"exit 12")}})
	for i, want := range []string{"blocked", "idle", "blocked", "idle"} {
		r.waitScreen(fmt.Sprintf("step%d", i+1))
		h.WaitFor(t, 30*time.Second, fmt.Sprintf("step %d: %s", i+1, want), func() bool { return lastReport(h, time.Time{}) == want })
		r.send("\r")
	}
	r.finish(12, true)
}

// A signal reaches the wrapper after the agent has exited, while it is
// still shutting down (here: waiting on a Herdr that never answers the
// release, which takes up to herdr.ReleaseBudget): Ctrl-C typed on the
// terminal that is no longer raw, a SIGTERM from a supervisor, the SIGHUP
// of a terminal closing. The wrapper finishes its way out all the same:
// the agent's code comes back, the terminal's mode is restored, and the
// run directory, socket and registry entry are gone. Killed by the signal's
// default action instead, it would leave all three behind.
func TestFaultSignalWhileShuttingDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(r *faultRun)
	}{
		{"ctrl-c", func(r *faultRun) { r.send("\x03") }},
		{"SIGTERM", func(r *faultRun) { _ = r.cmd.Process.Signal(unix.SIGTERM) }},
		{"SIGHUP", func(r *faultRun) { _ = r.cmd.Process.Signal(unix.SIGHUP) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := herdrtest.Start(t)
			h.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Methods: []string{"pane.release_agent"}})
			e := newFaultEnv(t, h)
			r := e.wrap("print ready\\r\\n", "exit 4")
			r.waitScreen("ready")
			// The release is in flight once Herdr has read it: the agent is
			// gone and the wrapper is on its way out.
			h.WaitFor(t, 30*time.Second, "the release read", func() bool {
				for _, req := range h.Requests() {
					if req.Method == "pane.release_agent" {
						return true
					}
				}
				return false
			})
			tc.send(r)
			r.finish(4, false)
		})
	}
}

// A signal to the wrapper while the agent runs is the agent's to act on:
// it is forwarded (SIGHUP as the hang-up of the agent's terminal), the
// agent dies of it, and the wrapper exits with the agent's status,
// terminal restored, pane released, nothing left behind.
func TestFaultSignalWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		sig  unix.Signal
		want int
	}{
		{unix.SIGINT, 128 + 2},
		{unix.SIGTERM, 128 + 15},
		{unix.SIGHUP, 128 + 1},
	} {
		t.Run(unix.SignalName(tc.sig), func(t *testing.T) {
			t.Parallel()
			h := herdrtest.Start(t)
			e := newFaultEnv(t, h)
			// Asleep, not reading: a hung-up terminal's EOF would let it
			// exit on its own before the signal lands.
			r := e.wrap("print ready\\r\\n", "sleep 60s", "exit 4")
			r.waitScreen("ready")
			if err := r.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			r.finish(tc.want, true)
		})
	}
}

// The wrapper's terminal goes away while the agent runs (the window is
// closed: its stdin reads EIO and the kernel sends SIGHUP): the agent is
// hung up, and the wrapper still releases the pane, removes its files and
// reaps the agent. There is no terminal left whose mode could be checked.
func TestFaultTerminalClosed(t *testing.T) {
	h := herdrtest.Start(t)
	e := newFaultEnv(t, h)
	r := e.wrap("print ready\\r\\n", "sleep 60s", "exit 4")
	r.waitScreen("ready")
	r.finished = true
	r.master.Close()
	select {
	case err := <-r.exited:
		if got := exitStatus(err); got != 128+1 {
			t.Errorf("exit status %d, want 129 (the agent hung up)", got)
		}
	case <-time.After(2 * time.Minute):
		_ = unix.Kill(-r.cmd.Process.Pid, unix.SIGKILL)
		<-r.exited
		t.Fatal("wrap did not end after its terminal closed")
	}
	if err := checkReleased(h); err != nil {
		t.Errorf("Herdr: %v", err)
	}
	e.nothingLeft()
}
