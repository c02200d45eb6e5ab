package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/golden"
	"github.com/herdr-pi/herdr-pi/internal/testenv"
	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/pane/screen"
)

// The recordings in testdata/pi are byte streams a real Pi wrote to its
// terminal (100x30), cut at the moment named by the file; see
// testdata/pi/README.md for how they were made. Replayed through the
// shadow screen and the embedded manifest, each must show the screen in its
// .golden file and classify as Pi was at that moment.
var piRecordings = []struct {
	version, name string
	want          detect.State
	rule          string
}{
	{"0.73.1", "idle", detect.Idle, ""},
	{"0.73.1", "working", detect.Working, "busy_row"},
	{"0.73.1", "working-tall", detect.Working, "busy_row"},
	{"0.73.1", "reply", detect.Idle, ""},
	{"0.73.1", "aborted", detect.Idle, ""},
	{"0.73.1", "after-compact", detect.Idle, ""},
	{"0.73.1", "retry", detect.Working, "busy_row"},
	{"0.73.1", "retry-failed", detect.Idle, ""},
	{"1.6.0", "idle", detect.Idle, ""},
	{"1.6.0", "working", detect.Working, "busy_border"},
	{"1.6.0", "working-tall", detect.Working, "busy_border"},
	{"1.6.0", "reply", detect.Idle, ""},
	{"1.6.0", "aborted", detect.Idle, ""},
	{"1.6.0", "after-compact", detect.Idle, ""},
	{"1.6.0", "retry", detect.Working, "busy_border"},
	{"1.6.0", "retry-failed", detect.Idle, ""},
}

const recRows, recCols = 30, 100

func TestPiRecordings(t *testing.T) {
	pi, ok := detect.Embedded().Lookup("pi")
	if !ok {
		t.Fatal("no embedded pi manifest")
	}
	for _, rec := range piRecordings {
		t.Run(rec.version+"/"+rec.name, func(t *testing.T) {
			base := filepath.Join("testdata", "pi", rec.version, rec.name)
			raw, err := os.ReadFile(base + ".raw")
			if err != nil {
				t.Fatal(err)
			}
			snap := replayWhole(t, raw)
			golden.Check(t, base+".golden", snap.Text)
			if snap.Title != "π - proj" {
				t.Errorf("title %q, want Pi's %q", snap.Title, "π - proj")
			}

			// What tmux showed at that moment is the same screen (a spinner
			// frame may have advanced between the two captures).
			// Every recording has its capture: a missing one fails, never
			// skips the comparison.
			tm, err := os.ReadFile(base + ".tmux.txt")
			if err != nil {
				t.Fatal(err)
			}
			if a, b := normalizeScreen(snap.Text), normalizeScreen(string(tm)); a != b {
				t.Errorf("shadow screen differs from tmux's capture:\n%s", golden.Diff(b, a))
			}

			v := pi.Evaluate(detect.Input{Text: snap.Text, Title: snap.Title, Progress: snap.Progress})
			rule := ""
			if v.Rule != nil {
				rule = v.Rule.ID
			}
			if v.State != rec.want || rule != rec.rule {
				t.Fatalf("classified %s/%q, want %s/%q", v.State, rule, rec.want, rec.rule)
			}

			// The same bytes arriving in random pieces, through the tap
			// and the consumer wrap uses, end on the same screen.
			for seed := uint64(1); seed <= 3; seed++ {
				if got := replayFollow(t, raw, seed); got.Text != snap.Text {
					t.Fatalf("seed %d: chunked replay differs:\n%s", seed, golden.Diff(snap.Text, got.Text))
				}
			}
		})
	}
}

func replayWhole(t *testing.T, raw []byte) screen.Snapshot {
	t.Helper()
	s := screen.New(recRows, recCols)
	defer s.Close()
	if err := s.Write(raw); err != nil {
		t.Fatal(err)
	}
	return s.Snapshot()
}

func replayFollow(t *testing.T, raw []byte, seed uint64) screen.Snapshot {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	tap := pty.NewTap(0)
	var mu sync.Mutex
	var last screen.Snapshot
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Nothing is skipped here (MaxFeed above any recording): this is
		// about pieces and in-band sizes, not about floods.
		screen.Follow(context.Background(), tap, screen.FollowOptions{Rows: 24, Cols: 80, MaxFeed: 1 << 20,
			Publish: func(s screen.Snapshot) { mu.Lock(); last = s; mu.Unlock() }})
	}()
	tap.Resize(pty.Size{Rows: recRows, Cols: recCols})
	for rest := raw; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(4096))
		tap.Write(rest[:n])
		rest = rest[n:]
	}
	tap.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return last
}

var spinnerFrames = strings.NewReplacer("⠋", "*", "⠙", "*", "⠹", "*", "⠸", "*", "⠼", "*", "⠴", "*", "⠦", "*", "⠧", "*", "⠇", "*", "⠏", "*")

func normalizeScreen(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return spinnerFrames.Replace(strings.TrimRight(strings.Join(lines, "\n"), "\n"))
}

// Herdr's own pi.toml (contains "Working...") sees Pi 0.73.1 working but
// misses Pi 1.6.0's border — the upstream bug (herdr#3955) the embedded
// manifest fixes, shown on the same recordings.
func TestHerdrPiManifestMissesPi16(t *testing.T) {
	path := testenv.Shared(t, "reference/herdr/manifests/pi.toml")
	herdrPi, err := detect.LoadFile(path)
	if err != nil {
		t.Fatalf("Herdr's pi.toml: %v", err)
	}
	for version, want := range map[string]detect.State{"0.73.1": detect.Working, "1.6.0": detect.Idle} {
		raw, err := os.ReadFile(filepath.Join("testdata", "pi", version, "working.raw"))
		if err != nil {
			t.Fatal(err)
		}
		snap := replayWhole(t, raw)
		if got := herdrPi.Evaluate(detect.Input{Text: snap.Text}).State; got != want {
			t.Errorf("Herdr's pi.toml on Pi %s working: %s, want %s", version, got, want)
		}
	}
}
