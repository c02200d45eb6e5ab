package commands

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/detect"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

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
		if got := chooseAgent(c.flag, c.configured, c.argv, set); got != c.want {
			t.Errorf("chooseAgent(%q, %q, %q) = %q, want %q", c.flag, c.configured, c.argv, got, c.want)
		}
	}
}

// The pipeline wrap builds: bytes into the tap come out as state events in
// the trace file, and stop leaves no goroutine behind.
// It runs in a synctest bubble: the debounce and the frame pacing are
// virtual time, so a loaded machine cannot reorder them.
func TestDetectionPipeline(t *testing.T) {
	synctest.Test(t, testDetectionPipeline)
}

func testDetectionPipeline(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	env := settings.EnvFrom([]string{"HERDR_PI_TRACE=" + trace, "HOME=" + dir})
	cfg := settings.Defaults()
	cfg.Detect.Debounce = settings.Duration(50 * time.Millisecond)
	cfg.Detect.StartupGrace = 0
	var stderr strings.Builder
	manifest, agent := pickManifest(IO{Err: &stderr}, settings.Resolve(env), cfg, &wrapOptions{Argv: []string{"pi"}}, &logger{})
	d := startDetection(env, cfg, manifest, agent, &logger{})
	d.tap.Resize(pty.Size{Rows: 10, Cols: 40})
	border := strings.Repeat("─", 40)
	for i := 0; i < 10; i++ {
		d.tap.Write([]byte("\x1b[6;1H\x1b[2K── ⠋ Working ────\x1b[9;1H" + border))
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
	}
	d.tap.Write([]byte("\x1b[6;1H\x1b[2K" + border))
	time.Sleep(300 * time.Millisecond)
	synctest.Wait()
	d.stop()

	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ To, Cause string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.To+"("+e.Cause+")")
	}
	if strings.Join(got, " ") != "working(screen:busy_border) idle(screen)" {
		t.Fatalf("trace %q (stderr %q)", got, stderr.String())
	}
}
