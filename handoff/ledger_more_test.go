package handoff

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Add leaves exactly the record file behind (its temporary name is gone),
// and a listing trusts only small regular files whose id prints: a
// symlink to a record, or an id with terminal controls or bidi controls,
// is named, not listed (close prints ids to the terminal).
func TestLedgerTrustsOnlyItsOwnPlainRecords(t *testing.T) {
	l := ledger(t)
	good, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock"})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || filepath.Join(l.Dir, entries[0].Name()) != good.File {
		t.Fatalf("after one Add the ledger holds %v, want only %s", entries, good.File)
	}
	link := filepath.Join(l.Dir, "rec-link.json")
	if err := os.Symlink(good.File, link); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(l.Dir, "rec-evil.json")
	if err := os.WriteFile(evil, []byte(`{"run":"r1","kind":"pane","id":"w1:p3\u001b]0;owned\u0007"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A bidi control reads the rest of close's line backwards.
	bidi := filepath.Join(l.Dir, "rec-bidi.json")
	if err := os.WriteFile(bidi, []byte(`{"run":"r1","kind":"pane","id":"w1:p4\u202e"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := l.List()
	if err == nil || !strings.Contains(err.Error(), "rec-link.json") || !strings.Contains(err.Error(), "rec-evil.json") || !strings.Contains(err.Error(), "rec-bidi.json") {
		t.Errorf("a symlinked record and unprintable ids are not named: %v", err)
	}
	if len(rs) != 1 || rs[0].File != good.File {
		t.Errorf("listed %+v, want only %s", rs, good.File)
	}
}

// Workspace is the newest workspace record of the run in that Herdr: a
// workspace of the same run in another Herdr (another socket) is not one
// a pane here can go to.
func TestLedgerWorkspaceIsTheNewestInThatHerdr(t *testing.T) {
	l := ledger(t)
	now := time.Now().UTC()
	for _, r := range []Record{
		{Run: "r1", Kind: "workspace", ID: "w1", HerdrSocket: "/a.sock", Opened: now.Add(-2 * time.Minute)},
		{Run: "r1", Kind: "workspace", ID: "w2", HerdrSocket: "/a.sock", Opened: now.Add(-time.Minute)},
		{Run: "r1", Kind: "workspace", ID: "w7", HerdrSocket: "/b.sock", Opened: now},
		{Run: "r2", Kind: "workspace", ID: "w8", HerdrSocket: "/a.sock", Opened: now},
		{Run: "r1", Kind: "tab", ID: "w9:t1", HerdrSocket: "/a.sock", Opened: now},
	} {
		if _, err := l.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ run, socket, want string }{
		{"r1", "/a.sock", "w2"}, {"r1", "/b.sock", "w7"}, {"r2", "/b.sock", ""}, {"r3", "/a.sock", ""},
	} {
		if got := l.Workspace(tc.run, tc.socket); got != tc.want {
			t.Errorf("Workspace(%s, %s) = %q, want %q", tc.run, tc.socket, got, tc.want)
		}
	}
}

// A ledger directory others can write to is refused, not read: records
// planted there would make close close panes herdr-pi never opened.
func TestLedgerRefusesADirectoryOthersCanWrite(t *testing.T) {
	l := ledger(t)
	if _, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	rs, err := l.List()
	if err == nil || len(rs) != 0 {
		t.Fatalf("a world-writable ledger lists %+v, %v", rs, err)
	}
	if got := l.Workspace("r1", "/h.sock"); got != "" {
		t.Fatalf("Workspace read a world-writable ledger: %q", got)
	}
}

// An unreadable record is named with what can still be made out of it (a
// file cut short keeps its first fields), so that the pane it tracked can
// be found in Herdr before the file is removed; a symlink is not followed
// for it, and a value that would not print is left out.
func TestLedgerSaysWhatAnUnreadableRecordTracked(t *testing.T) {
	l := ledger(t)
	rec, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p3", HerdrSocket: "/h.sock", PaneWrapperPID: 4711})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rec.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec.File, b[:len(b)-10], 0o600); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(l.Dir, "rec-evil.json")
	if err := os.WriteFile(evil, []byte("{\"run\":\"r1\",\"kind\":\"pane\",\"id\":\"w1:p4\x1b]0;owned\x07\""), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rec.File, filepath.Join(l.Dir, "rec-link.json")); err != nil {
		t.Fatal(err)
	}
	_, err = l.List()
	var ue *UnreadableRecordsError
	if !errors.As(err, &ue) || len(ue.Records) != 3 {
		t.Fatalf("List: %v, want three unreadable records", err)
	}
	got := map[string]string{}
	for _, u := range ue.Records {
		got[filepath.Base(u.File)] = u.Tracked()
	}
	want := map[string]string{
		filepath.Base(rec.File): "pane w1:p3 of run r1 in the Herdr at /h.sock",
		"rec-evil.json":         "a pane of run r1",
		"rec-link.json":         "",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("tracked %q\nwant    %q", got, want)
	}
	for _, u := range ue.Records {
		if !strings.HasSuffix(u.Advice(), "then remove "+u.File) || !strings.Contains(u.Advice(), "Herdr") || !u.MayBeOf("r1") || u.MayBeOf("r2") != (u.Guess.Run == "") {
			t.Errorf("%s: advice %q, may be of r1 %v, of r2 %v", u.File, u.Advice(), u.MayBeOf("r1"), u.MayBeOf("r2"))
		}
	}
	if strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), rec.File) {
		t.Errorf("the error %q names not the file, or prints a control", err)
	}
}

// A placement that finds the lock taken says so once, waits, and has it
// when the holder lets go; an unlock called twice does nothing more.
func TestLockPlacementSaysItWaitsAndGetsTheLock(t *testing.T) {
	l := ledger(t)
	unlock := l.LockPlacement(t.Context(), "r1", func() { t.Error("the free lock was waited for") })
	waits := make(chan struct{}, 4)
	got := make(chan func(), 1)
	go func() { got <- l.LockPlacement(t.Context(), "r1", func() { waits <- struct{}{} }) }()
	select {
	case <-waits:
	case <-time.After(10 * time.Second):
		t.Fatal("the second placement never said it waits")
	}
	select {
	case <-got:
		t.Fatal("the second placement had the lock while the first held it")
	default:
	}
	unlock()
	unlock()
	var second func()
	select {
	case second = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second placement did not get the lock once the first let go")
	}
	defer second()
	if n := len(waits); n != 0 {
		t.Fatalf("waiting was called %d more times", n)
	}
}

// Placements of different runs do not wait for each other, while two of
// one run still take turns: only one run's placement can be making that
// run's workspace. A menu inspection holds the lock while it learns its
// fork (up to a minute); an open of another run must not sit behind it.
func TestLockPlacementOfOneRunDoesNotHoldUpAnother(t *testing.T) {
	l := ledger(t)
	first := l.LockPlacement(t.Context(), "run-a", nil)
	defer first()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	other := l.LockPlacement(ctx, "run-b", func() { t.Error("a placement of run-b waited for one of run-a") })
	defer other()
	// The held locks are no records, and no run id is part of a path.
	if rs, err := l.List(); len(rs) != 0 || err != nil {
		t.Errorf("with two placements under way the ledger lists %v (%v)", rs, err)
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("with two placements under way the ledger's directory holds %v (%v), want their two locks", entries, err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "run-") || !strings.HasPrefix(e.Name(), "place-") {
			t.Errorf("lock file %s", e.Name())
		}
		if fi, err := e.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("lock file %s: %v %v, want 0600", e.Name(), fi, err)
		}
	}
	sameCtx, cancelSame := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancelSame()
	waited := false
	l.LockPlacement(sameCtx, "run-b", func() { waited = true })()
	if !waited {
		t.Error("a second placement of run-b did not wait for the first")
	}
	other()
	first()
	if entries, err := os.ReadDir(l.Dir); err != nil || len(entries) != 0 {
		t.Fatalf("the ledger holds %v (%v) once every placement let go", entries, err)
	}
}

// The lock file a placement killed midway left (free, as the kernel let
// it go) is removed by the next placement, of whichever run: nothing
// else would remove it.
func TestLockPlacementRemovesALockItsKilledHolderLeft(t *testing.T) {
	l := ledger(t)
	l.LockPlacement(t.Context(), "run-a", nil)() // makes the ledger's directory
	dead := filepath.Join(l.Dir, placementLockName("run-a"))
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlock := l.LockPlacement(t.Context(), "run-b", nil)
	if _, err := os.Lstat(dead); err == nil {
		t.Error("the dead placement's lock is still there")
	}
	unlock()
	if entries, err := os.ReadDir(l.Dir); err != nil || len(entries) != 0 {
		t.Fatalf("the ledger holds %v (%v) once every placement let go", entries, err)
	}
}

// A record that cannot be written whole (a full disk, here a file size
// limit) leaves no temporary file in the ledger: it would be no record,
// yet stay in the private directory for good.
func TestALedgerRecordThatCannotBeWrittenLeavesNoTemporaryFile(t *testing.T) {
	if dir := testenv.FileSizeLimited(t); dir != "" {
		_, err := Ledger{Dir: dir}.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock", Handoff: strings.Repeat("h", 512)})
		t.Logf("result: %v", err)
		return
	}
	l := ledger(t)
	if err := control.EnsurePrivateDir(filepath.Dir(l.Dir)); err != nil {
		t.Fatal(err)
	}
	out := testenv.RunFileSizeLimited(t, l.Dir, 64)
	if !strings.Contains(out, "result: the ledger of what herdr-pi opened") || !strings.Contains(out, "file too large") {
		t.Fatalf("the write did not fail for the file size limit, so this proves nothing:\n%s", out)
	}
	if left, _ := os.ReadDir(l.Dir); len(left) != 0 {
		t.Fatalf("left in the ledger: %v", left)
	}
}

// A record whose rename into place fails leaves no temporary file either.
func TestALedgerRecordThatCannotBeRenamedLeavesNoTemporaryFile(t *testing.T) {
	l := ledger(t)
	renamed := false
	old := renameRecord
	renameRecord = func(from, to string) error {
		renamed = true
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
	}
	t.Cleanup(func() { renameRecord = old })
	if _, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock"}); err == nil || !renamed {
		t.Fatalf("Add with a failing rename: %v (rename tried: %v)", err, renamed)
	}
	if left, _ := os.ReadDir(l.Dir); len(left) != 0 {
		t.Fatalf("left in the ledger: %v", left)
	}
}

// A herdr-pi killed between writing a record's temporary file and
// renaming it leaves the file behind; the next record written removes it,
// as it does one an older herdr-pi left ("rec-….json.tmp"), once it is
// old enough that no live writer can still be writing it. A fresh one is
// left to its writer.
func TestLedgerSweepsTheTempFilesOfKilledWriters(t *testing.T) {
	l := ledger(t)
	for _, d := range []string{filepath.Dir(l.Dir), l.Dir} {
		if err := control.EnsurePrivateDir(d); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Minute)
	for _, f := range []string{".tmp-123456", "rec-0011223344556677.json.tmp", ".tmp-654321"} {
		path := filepath.Join(l.Dir, f)
		if err := os.WriteFile(path, []byte(`{"run":`), 0o600); err != nil {
			t.Fatal(err)
		}
		if f != ".tmp-654321" {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := l.Add(Record{Run: "r1", Kind: "pane", ID: "w1:p2", HerdrSocket: "/h.sock"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(l.Dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{".tmp-654321", filepath.Base(r.File)}; !slices.Equal(left, want) {
		t.Fatalf("the ledger holds %q after a record was added, want %q", left, want)
	}
}
