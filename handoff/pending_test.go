package handoff

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// A pending handoff whose wrapper was killed (its run directory gone,
// though its pid now names a running process) is forgotten at once: close
// neither waits for a wrapper that will never answer nor fails on it at
// every try.
func TestCancelPendingForgetsTheHandoffOfAWrapperThatIsGone(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "hpp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ledger := LedgerAt(filepath.Join(base, "rt"))
	held, err := control.NewRunDir(filepath.Join(base, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ledger.AddPending(Pending{Run: "r1", Handoff: "h1", WrapperPID: os.Getpid(), RunDir: held.Path})
	if err != nil {
		t.Fatal(err)
	}
	held.Remove() // the wrapper is gone; its pid (ours) still runs
	done, failed := CancelPending(context.Background(), ledger, []Pending{p}, time.Minute)
	if len(failed) != 0 || len(done) != 1 || done[0] != (Closed{Kind: "handoff", ID: "h1", How: "removed"}) {
		t.Fatalf("close: %+v, failed %+v", done, failed)
	}
	if left, err := ledger.Pendings(); err != nil || len(left) != 0 {
		t.Fatalf("left: %+v %v", left, err)
	}
	if files, _ := filepath.Glob(filepath.Join(ledger.Dir, "*")); len(files) != 0 {
		t.Fatalf("files left: %q", files)
	}
}
