package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// After a flood the shadow screen shows what the agent drew last: 16 MiB of
// lines through the real copy loop (the screen throttled, drawing only
// glimpses of it), then a screen the user's manifest calls working, then
// one it does not. Both verdicts arrive, in order.
func TestWrapScreenEndsRightAfterAFlood(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	env := linkCommands(t, dir, "HERDR_PI_TRACE="+trace)
	writeThinkingManifest(t, dir)
	flood := filepath.Join(dir, "flood.txt")
	if err := os.WriteFile(flood, base64Lines(16<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := startOuter(outerOptions{Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", "-e",
		"run cat " + flood + `;print \e[2J\e[HTHINKING hard;sleep 1500ms;print \e[2J\e[Hdone;sleep 1s`}, Env: env, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(2 * time.Minute); err != nil || status != 0 {
		t.Fatalf("wrap: status %d, %v", status, err)
	}
	if got := r.count(); got < 16<<20 {
		t.Fatalf("the terminal got %d bytes of the flood", got)
	}
	var got []string
	for _, e := range readTrace(t, trace) {
		got = append(got, e.To+"("+e.Cause+")")
	}
	// The flood's own screens match no rule: an idle before them is the
	// machine's to report or not.
	events := strings.TrimPrefix(strings.Join(got, " "), "idle(screen) ")
	if events != "working(screen:thinking) idle(screen)" {
		t.Fatalf("events %q, want working (the screen after the flood) then idle", got)
	}
}
