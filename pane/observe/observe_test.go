package observe

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/state"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestChooseAgent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude.toml"), []byte("id = \"claude\"\n[[rules]]\nid = \"r\"\nstate = \"working\"\ncontains = [\"x\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, problems := detect.Load(dir)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	cases := []struct {
		flag, configured string
		argv             []string
		want             string
	}{
		{"codex", "claude", []string{"pi"}, "codex"},
		{"", "claude", []string{"pi"}, "claude"},
		{"", "", []string{"/usr/local/bin/claude", "--x"}, "claude"},
		{"", "", []string{"./bin/pi-dev"}, "pi"},
		{"", "", []string{"cat"}, "pi"},
		{"", "", nil, "pi"},
	}
	for _, c := range cases {
		if got := ChooseAgent(c.flag, c.configured, c.argv, set); got != c.want {
			t.Errorf("ChooseAgent(%q, %q, %q) = %q, want %q", c.flag, c.configured, c.argv, got, c.want)
		}
	}
}

// Bytes into the tap come out as state events at the sinks, in order, and
// Stop leaves no goroutine behind. It runs in a synctest bubble: the
// debounce and the frame pacing are virtual time, so a loaded machine
// cannot reorder them.
func TestPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, transitions := startRecorded()
		o.Tap.Resize(pty.Size{Rows: 10, Cols: 40})
		border := strings.Repeat("─", 40)
		for range 10 {
			o.Tap.Write([]byte("\x1b[6;1H\x1b[2K── ⠋ Working ────\x1b[9;1H" + border))
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
		}
		o.Tap.Write([]byte("\x1b[6;1H\x1b[2K" + border))
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		o.Stop()
		if got := transitions(); got != "working(screen:busy_border) idle(screen)" {
			t.Fatalf("transitions %q", got)
		}
	})
}

// testDebounce is the debounce of the Observers the tests start.
const testDebounce = 50 * time.Millisecond

// startRecorded starts an Observer with Pi's manifest and testDebounce;
// transitions says the transitions so far as "to(cause) …".
func startRecorded() (o *Observer, transitions func() string) {
	pi, _ := detect.Embedded().Lookup("pi")
	var mu sync.Mutex
	var got []string
	o = Start(Config{Manifest: pi, Debounce: testDebounce, Sinks: []func(state.Event){func(e state.Event) {
		if e.Kind == state.EventTransition {
			mu.Lock()
			got = append(got, string(e.To)+"("+e.Cause+")")
			mu.Unlock()
		}
	}}})
	return o, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, " ")
	}
}

// The trace has one JSON line per event with its time since the trace
// opened.
func TestTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr, err := OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	tr.Write(state.Event{Kind: state.EventTransition, From: state.Unknown, To: state.Idle, Cause: "screen", At: time.Now()})
	tr.Close()
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"to":"idle"`) || !strings.Contains(string(b), `"elapsed_ms":`) || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("trace %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
