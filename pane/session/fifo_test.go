package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A session file is Pi's, in a directory of the person's: a named pipe
// there (mkfifo by mistake, or `pi --session` given one) has no writer,
// so a blocking open of it never returns. The locator passes it over and
// finds the session file beside it.
func TestLocatorPassesOverANamedPipe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "2026-01-01T00-00-00-000Z_01aaaaaa-0000-7000-8000-000000000000.jsonl")
	appendLines(t, file, header("/proj"))
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	// Newer than the file, so looked at first.
	if err := unix.Mkfifo(filepath.Join(dir, "2026-01-02T00-00-00-000Z_01bbbbbb-0000-7000-8000-000000000000.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, ok := (Locator{Dir: dir, Cwd: "/proj"}).Find(); !ok || p != file {
		t.Fatalf("Find() = %s %v, want the session file %s", p, ok, file)
	}
}

// The watcher told to follow a named pipe says once that it cannot, goes
// on to the session file that takes its place, and closes: the wrapper's
// way out waits for it, and a watcher stuck opening the pipe kept the
// wrapper from ever ending after its agent did.
func TestWatcherRefusesANamedPipeAndStillCloses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	logged := make(chan string, 64)
	s := newSink()
	w := Watch(WatchConfig{Sink: s, Interval: 10 * time.Millisecond, Locator: Locator{Path: path},
		Logf: func(format string, args ...any) {
			select {
			case logged <- format:
			default:
			}
		}})
	var line string
	select {
	case line = <-logged:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher said nothing of the named pipe within 5s (stuck opening it)")
	}
	if !strings.Contains(line, "session:") {
		t.Errorf("log line %q", line)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendLines(t, path, header(dir), msg("u1", "", "user", text("hi"), ""), msg("a1", "u1", "assistant", text(reply), "stop"))
	if got := s.next(t); !got.Open || got.File != path {
		t.Errorf("after the pipe became a file: %+v, want the question open in %s", got, path)
	}
	w.Close()
	// Said once, not at every tick while the pipe stood there.
	close(logged)
	var again []string
	for l := range logged {
		again = append(again, l)
	}
	if len(again) > 0 {
		t.Errorf("the watcher logged again after its first word on the pipe: %q", again)
	}
}
