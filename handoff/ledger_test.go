package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func ledger(t *testing.T) Ledger {
	t.Helper()
	return LedgerAt(filepath.Join(t.TempDir(), "rt"))
}

// Records are 0600 files in a 0700 directory; Remove forgets one; a file
// that is not a record is named, not trusted.
func TestLedgerRecordsAreSmallPrivateFiles(t *testing.T) {
	testenv.PermissiveUmask(t) // the modes checked are the code's, whatever the umask
	l := ledger(t)
	if rs, err := l.List(); err != nil || len(rs) != 0 {
		t.Fatalf("an absent ledger lists %v, %v", rs, err)
	}
	a, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock", WrapperPID: 7, Handoff: "h1", Bridge: "/b.sock"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Add(Record{Run: "r1", Kind: "workspace", ID: "w2", HerdrSocket: "/h.sock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{l.Dir, a.File} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := os.FileMode(0o600); fi.IsDir() {
			want = 0o700
			if fi.Mode().Perm() != want {
				t.Fatalf("%s has mode %v", p, fi.Mode())
			}
		} else if fi.Mode().Perm() != want {
			t.Fatalf("%s has mode %v", p, fi.Mode())
		}
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "rec-bad.json"), []byte(`{"run":"r","kind":"root","id":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := l.List()
	if err == nil || !strings.Contains(err.Error(), "rec-bad.json") {
		t.Fatalf("a bad record: %v", err)
	}
	if len(rs) != 2 || rs[0].Thing() != "pane w1:p2" || rs[0].Bridge != "/b.sock" || rs[1].File != b.File {
		t.Fatalf("records %+v", rs)
	}
	if err := l.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(a); err != nil {
		t.Fatalf("removing a removed record: %v", err)
	}
	os.Remove(filepath.Join(l.Dir, "rec-bad.json"))
	if rs, err := l.List(); err != nil || len(rs) != 1 || rs[0].Kind != "workspace" {
		t.Fatalf("after Remove: %+v %v", rs, err)
	}
}

// CloseRun closes a workspace once and what is inside it not at all,
// counts what someone closed before as gone, removes the leftovers of a
// dead wrapper's bridge, and forgets every record it handled.
func TestCloseRunClosesEachThingOnce(t *testing.T) {
	s, c, ws, tab, split := closeWorld(t, "#2 docs")
	ctx := context.Background()
	gone, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: s.PaneID(), Direction: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PaneClose(ctx, gone.PaneID); err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	dir := t.TempDir()
	bridge := filepath.Join(dir, "tools-1.sock")
	for _, f := range []string{bridge, filepath.Join(dir, "tools-1.mjs")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := ledger(t)
	sock := s.SocketPath()
	var recs []Record
	for _, r := range []Record{
		{Run: "r1", Kind: "tab", ID: tab.TabID, HerdrSocket: sock, WrapperPID: dead, Handoff: "h2"},
		{Run: "r1", Kind: "workspace", ID: ws.Workspace.WorkspaceID, HerdrSocket: sock},
		{Run: "r1", Kind: "pane", ID: split.PaneID, HerdrSocket: sock, WrapperPID: dead, Handoff: "h1", Bridge: bridge},
		{Run: "r1", Kind: "pane", ID: gone.PaneID, HerdrSocket: sock},
		{Run: "r1", Kind: "pane", ID: split.PaneID, HerdrSocket: sock}, // recorded twice
	} {
		rec, err := l.Add(r)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	s.ClearRecords()
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	var got []string
	for _, x := range closed {
		got = append(got, x.Kind+" "+x.ID+" "+x.How)
	}
	want := []string{
		"workspace " + ws.Workspace.WorkspaceID + " closed",
		"tab " + tab.TabID + " with workspace " + ws.Workspace.WorkspaceID,
		"pane " + split.PaneID + " closed",
		"pane " + gone.PaneID + " gone",
		"bridge " + bridge + " removed",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("closed %q\nwant   %q", got, want)
	}
	if m := strings.Join(s.Methods(), " "); m != "workspace.close pane.close pane.close" {
		t.Fatalf("calls %q", m)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the dead wrapper's bridge files are left: %v", left)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
}

// A live wrapper's handoff is waited for: its record goes when it hands
// back; one that never does is an error naming it.
func TestCloseRunWaitsForLiveWrappers(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	p, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger(t)
	rec, err := l.Add(Record{Run: "r1", Kind: "pane", ID: p.PaneID, HerdrSocket: s.SocketPath(), WrapperPID: os.Getpid(), Handoff: "h1", Bridge: "/x/tools.sock"})
	if err != nil {
		t.Fatal(err)
	}
	// The "wrapper" (this process) hands back a moment after the pane is
	// closed, as a real one does: close must wait for it, not just look.
	go func() {
		for !slices.Contains(s.Methods(), "pane.close") {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		l.Remove(rec)
	}()
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, []Record{rec}, time.Minute)
	if failed != nil || len(closed) != 2 || closed[1] != (Closed{Kind: "bridge", ID: "/x/tools.sock", How: "closed"}) {
		t.Fatalf("closed %+v, failed %+v", closed, failed)
	}
	stuck, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p9", HerdrSocket: s.SocketPath(), WrapperPID: os.Getpid(), Handoff: "h2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := CloseRun(ctx, l, func(string) Herdr { return c }, []Record{stuck}, 0); len(failed) != 1 ||
		failed[0].Kind != "handoff" || failed[0].ID != "h2" || failed[0].File != stuck.File || !strings.Contains(failed[0].Why, "did not hand the attempt back") {
		t.Fatalf("a wrapper that never hands back: %+v", failed)
	}
}

// An inspection's pane is closed while the wrapper in it runs; once that
// wrapper is gone the pane went with its command, and the id is left
// alone — after a Herdr restart it may name someone else's pane.
func TestCloseRunLeavesAnEndedInspectionAlone(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	panes := splitPanes(t, s, c, 2)
	l := ledger(t)
	recs, err := l.AddAll([]Record{
		{Run: "r1", Kind: "pane", ID: panes[0], HerdrSocket: s.SocketPath(), PaneWrapperPID: os.Getpid()},
		{Run: "r1", Kind: "pane", ID: panes[1], HerdrSocket: s.SocketPath(), PaneWrapperPID: deadPID(t)},
	})
	if err != nil || len(recs) != 2 {
		t.Fatalf("AddAll: %d records, %v", len(recs), err)
	}
	s.ClearRecords()
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	want := []Closed{{Kind: "pane", ID: panes[0], How: "closed"}, {Kind: "pane", ID: panes[1], How: "gone"}}
	if !slices.Equal(closed, want) {
		t.Fatalf("closed %+v\nwant   %+v", closed, want)
	}
	if q := s.Requests(); len(q) != 1 || q[0].Method != "pane.close" || !strings.Contains(string(q[0].Params), panes[0]) {
		t.Fatalf("Herdr heard %+v, want one pane.close of %s", q, panes[0])
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
}

// A wrapper that was killed leaves its run directory, unlocked, and its
// pid goes to the next process: close goes by the directory's lock, not by
// the pid, for the records that name the directory. Here this test's own
// pid (alive) stands for the reused one.
func TestCloseRunJudgesWrappersByTheirRunDirectory(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	panes := splitPanes(t, s, c, 3)
	base, held := heldRunDir(t)
	left := leftRunDir(t, base, "left")
	bridge := filepath.Join(left, "tools-1.sock")
	for _, f := range []string{bridge, filepath.Join(left, "tools-1.mjs")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed := filepath.Join(base, fmt.Sprintf("run-%d-removed", os.Getpid()))
	me, sock := os.Getpid(), s.SocketPath()
	l := ledger(t)
	recs, err := l.AddAll([]Record{
		{Run: "r1", Kind: "pane", ID: panes[0], HerdrSocket: sock, PaneWrapperPID: me, RunDir: held.Path},
		{Run: "r1", Kind: "pane", ID: panes[1], HerdrSocket: sock, PaneWrapperPID: me, RunDir: left},
		{Run: "r1", Kind: "pane", ID: "w9:p1", HerdrSocket: sock, PaneWrapperPID: me, RunDir: removed},
		{Run: "r1", Kind: "pane", ID: panes[2], HerdrSocket: sock, WrapperPID: me, RunDir: left, Handoff: "h1", Bridge: bridge},
	})
	if err != nil || len(recs) != 4 {
		t.Fatalf("AddAll: %d records, %v", len(recs), err)
	}
	s.ClearRecords()
	// A wrapper judged alive is waited for, and this one never hands
	// back: the wait would end in an error.
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, 5*time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	want := []Closed{
		{Kind: "pane", ID: panes[0], How: "closed"},
		{Kind: "pane", ID: panes[1], How: "gone"},
		{Kind: "pane", ID: "w9:p1", How: "gone"},
		{Kind: "pane", ID: panes[2], How: "closed"},
		{Kind: "bridge", ID: bridge, How: "removed"},
	}
	if !slices.Equal(closed, want) {
		t.Fatalf("closed %+v\nwant   %+v", closed, want)
	}
	var heard []string
	for _, q := range s.Requests() {
		heard = append(heard, q.Method+" "+string(q.Params))
	}
	if len(heard) != 2 || !strings.Contains(heard[0], panes[0]) || !strings.Contains(heard[1], panes[2]) {
		t.Fatalf("Herdr heard %q, want a pane.close of %s and of %s only", heard, panes[0], panes[2])
	}
	if _, err := os.Stat(bridge); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead wrapper's bridge is still there: %v", err)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Errorf("records left: %+v", rs)
	}
}

// heldRunDir makes a runtime base and a run directory in it, held by
// this test process as a running wrapper holds its own.
func heldRunDir(t *testing.T) (base string, held *control.HeldRunDir) {
	t.Helper()
	base = filepath.Join(t.TempDir(), "rt")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := control.NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Remove() })
	return base, held
}

// leftRunDir makes what a killed wrapper leaves in base: its run
// directory, named for this process's pid (as if the pid had been reused),
// with a lock nobody holds.
func leftRunDir(t *testing.T, base, suffix string) string {
	t.Helper()
	dir := filepath.Join(base, fmt.Sprintf("run-%d-%s", os.Getpid(), suffix))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wrapper.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// splitPanes opens n panes beside the fake Herdr's own and returns their ids.
func splitPanes(t *testing.T, s *herdrtest.Server, c *herdr.Client, n int) []string {
	t.Helper()
	var panes []string
	for range n {
		p, err := c.PaneSplit(context.Background(), herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
		if err != nil {
			t.Fatal(err)
		}
		panes = append(panes, p.PaneID)
	}
	return panes
}

// deadPID is a pid no process has any more.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// OwnerWrapper finds the wrapper above the owner's Pi: through the pane
// registry, else through the Pi's own environment when its socket is in
// an ancestor's run directory; a Pi under none is ErrNotWrapped.
func TestOwnerWrapperWalksUpFromTheLeasePID(t *testing.T) {
	// This test process plays the wrapper; a shell is its leader and a
	// sleep the owner's Pi, two levels down as under wrap.
	base, held := heldRunDir(t)
	ep := control.Endpoint{Socket: filepath.Join(held.Path, "control.sock"), Token: "t0k", PID: os.Getpid()}
	start := func(env ...string) int { t.Helper(); return startUnder(t, env...) }
	viaEnv := start(ep.Env()...)
	got, err := OwnerWrapper(base, viaEnv)
	if err != nil || got != ep {
		t.Fatalf("through the environment: %+v, %v", got, err)
	}
	bare := start()
	if _, err := OwnerWrapper(base, bare); !errors.Is(err, ErrNotWrapped) {
		t.Fatalf("a Pi under no wrapper: %v", err)
	}
	// A run directory named for an ancestor whose lock nobody holds: its
	// wrapper was killed (the pid is someone else's now), as the sweep
	// would judge it.
	deadDir := leftRunDir(t, base, "2")
	gone := ep
	gone.Socket = filepath.Join(deadDir, "control.sock")
	if _, err := OwnerWrapper(base, start(gone.Env()...)); !errors.Is(err, ErrNotWrapped) {
		t.Fatalf("a Pi whose wrapper's run directory is dead: %v", err)
	}
	reg := control.PaneRegistry(base)
	ep2 := ep
	ep2.Token, ep2.PaneID = "registered", "w1:p1"
	if _, err := reg.Register(control.PaneKey("/h.sock", "w1:p1"), ep2); err != nil {
		t.Fatal(err)
	}
	if got, err := OwnerWrapper(base, bare); err != nil || got.Token != "registered" {
		t.Fatalf("through the registry: %+v, %v", got, err)
	}
	if _, err := OwnerWrapper(base, deadPID(t)); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("a dead owner: %v", err)
	}
}

// startUnder starts a stand-in for an owner's Pi two levels below this
// process (a shell, then a sleep), as wrap runs Pi under a leader, with
// env added to its environment, and returns the sleep's pid.
func startUnder(t *testing.T, env ...string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Process.Kill(); cmd.Wait() })
	// The child counts once it is sleep and its environment reads: before,
	// it is a fork of the shell, and in the middle of its exec the kernel
	// names it sleep before its new environment is in place (it read
	// empty once in a loaded run: "through the environment: {… PID:0 …}").
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			var pid int
			fmt.Sscan(f[0], &pid)
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if strings.TrimSpace(string(comm)) == "sleep" && strings.Contains(string(environ), "=") {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// What close could not close stays in the ledger, so the next close (once
// Herdr answers again) still knows of it; a workspace that did not close
// took nothing along, so what is inside it is closed on its own.
func TestCloseRunKeepsWhatItCouldNotClose(t *testing.T) {
	s, c, ws, tab, split := closeWorld(t, "#1 api")
	ctx := context.Background()
	l := ledger(t)
	sock := s.SocketPath()
	recs, err := l.AddAll([]Record{
		{Run: "r1", Kind: "workspace", ID: ws.Workspace.WorkspaceID, HerdrSocket: sock},
		{Run: "r1", Kind: "tab", ID: tab.TabID, HerdrSocket: sock},
		{Run: "r1", Kind: "pane", ID: split.PaneID, HerdrSocket: sock},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Herdr fails to close the workspace and the pane; the tab closes.
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"workspace.close", "pane.close"},
		Reply: map[string]any{"error": map[string]any{"code": "internal_error", "message": "busy"}}})
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return c }, recs, time.Second)
	want := []Closed{{Kind: "tab", ID: tab.TabID, How: "closed"}}
	if !slices.Equal(closed, want) {
		t.Fatalf("closed %+v\nwant   %+v", closed, want)
	}
	// Each failure names the thing, why, and the record that keeps it.
	var says []string
	for _, f := range failed {
		if !strings.Contains(f.Why, "busy") {
			t.Errorf("failure %+v does not say why", f)
		}
		says = append(says, f.Kind+" "+f.ID+" "+filepath.Base(f.File))
	}
	if w := []string{"workspace " + ws.Workspace.WorkspaceID + " " + filepath.Base(recs[0].File), "pane " + split.PaneID + " " + filepath.Base(recs[2].File)}; !slices.Equal(says, w) {
		t.Fatalf("failed %q\nwant   %q", says, w)
	}
	left, _ := l.List()
	var things []string
	for _, r := range left {
		things = append(things, r.Thing())
	}
	if w := []string{"workspace " + ws.Workspace.WorkspaceID, "pane " + split.PaneID}; !slices.Equal(things, w) {
		t.Fatalf("records left %q, want %q: a failed close must not forget what is still open", things, w)
	}
	// Herdr answers again: the next close closes the rest.
	s.SetFault(herdrtest.Fault{})
	closed, failed = CloseRun(ctx, l, func(string) Herdr { return c }, left, time.Second)
	if failed != nil || len(closed) != 2 {
		t.Fatalf("the second close: %+v, %+v", closed, failed)
	}
	if rs, _ := l.List(); len(rs) != 0 {
		t.Fatalf("records left: %+v", rs)
	}
}

// closeWorld is a Herdr holding what close has to close: a run's workspace
// with a tab labelled tabLabel, and a split of the caller's pane.
func closeWorld(t *testing.T, tabLabel string) (*herdrtest.Server, *herdr.Client, herdr.WorkspaceCreated, herdr.TabInfo, herdr.PaneInfo) {
	t.Helper()
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	ws, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Label: "workflow review"})
	if err != nil {
		t.Fatal(err)
	}
	tab, _, err := c.TabCreate(ctx, ws.Workspace.WorkspaceID, herdr.NewPlace{Label: tabLabel})
	if err != nil {
		t.Fatal(err)
	}
	split, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, ws, tab, split
}

// handsBackAtOnce is Herdr as close sees it while a live handoff's wrapper
// is quick: by the time pane.close returns, the wrapper has handed back,
// closed its bridge and removed its run directory and record.
type handsBackAtOnce struct {
	*herdr.Client
	handBack func()
}

func (h handsBackAtOnce) PaneClose(ctx context.Context, id string) error {
	err := h.Client.PaneClose(ctx, id)
	h.handBack()
	return err
}

// A live wrapper that hands back before close looks again closed its
// bridge itself: close says so ("closed"), not that its wrapper is gone
// and it removed the leftovers — the wrapper runs on, and the words would
// send the person looking for a crash. (Met with close racing a handoff's
// launch.)
func TestCloseRunAWrapperThatHandedBackAtOnceClosedItsBridge(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	p, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: s.PaneID(), Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "rt")
	if err := control.EnsurePrivateDir(base); err != nil {
		t.Fatal(err)
	}
	held, err := control.NewRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	bridge := filepath.Join(held.Path, "tools-1.sock")
	l := ledger(t)
	rec, err := l.Add(Record{Run: "r1", Kind: "pane", ID: p.PaneID, HerdrSocket: s.SocketPath(), WrapperPID: os.Getpid(), RunDir: held.Path, Handoff: "h1", Bridge: bridge})
	if err != nil {
		t.Fatal(err)
	}
	h := handsBackAtOnce{Client: c, handBack: func() { l.Remove(rec); held.Remove() }}
	closed, failed := CloseRun(ctx, l, func(string) Herdr { return h }, []Record{rec}, time.Minute)
	if failed != nil || len(closed) != 2 || closed[1] != (Closed{Kind: "bridge", ID: bridge, How: "closed"}) {
		t.Fatalf("closed %+v, failed %+v; want the bridge closed (by its wrapper)", closed, failed)
	}
}
