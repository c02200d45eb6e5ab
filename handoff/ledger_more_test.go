package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Add leaves exactly the record file behind (its temporary name is gone),
// and a listing trusts only small regular files whose id prints: a
// symlink to a record, or an id with terminal controls, is named, not
// listed (close prints ids to the terminal).
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
	rs, err := l.List()
	if err == nil || !strings.Contains(err.Error(), "rec-link.json") || !strings.Contains(err.Error(), "rec-evil.json") {
		t.Errorf("a symlinked record and an unprintable id are not named: %v", err)
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
