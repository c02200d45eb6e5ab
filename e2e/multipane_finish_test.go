package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Forty panes of one Herdr whose runs end at the same moment, thirty
// finished and ten stopped with an error (Pi's own status reports, as with
// PI_PROGRAM_STATUS=1). Herdr shows one toast a second, and a pane's own
// toast is offered for half a minute: the person must still be told of
// every pane, in toasts Herdr showed.
func TestFortyPanesFinishingAtOnceAreAllTold(t *testing.T) {
	const n = 40
	m := newMultiHerdr(t, n)
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, []byte("[herdr]\nagent = \"pi\"\n[notify]\nfinished_after = \"0s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, kv := range m.env {
		if strings.HasPrefix(kv, "HERDR_PI_CONFIG=") {
			m.env[i] = "HERDR_PI_CONFIG=" + config
		}
	}
	var runs []*outerRun
	for i, p := range m.panes {
		end := `print \e]7501;state=done:app=pi\e\\`
		if i%4 == 3 {
			end = `print \e]7501;state=error:app=pi\e\\`
		}
		runs = append(runs, m.wrap(p, "api", fmt.Sprintf("agent%02d", i),
			`print \e[?2026hready\e[?2026l\r\n`, "readline", `print \e]7501;state=working:app=pi\e\\`, "sleep 1s", end, "readline"))
	}
	for _, p := range m.panes {
		m.waitPane(p, "idle")
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sendKeys(r, "\r"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	told := m.h.Await(time.Minute, func() bool { return len(m.unnamed(n)) == 0 })
	var shown []string
	for _, s := range m.shown() {
		shown = append(shown, s.Title+": "+s.Body)
	}
	if !told {
		t.Fatalf("%d of %d panes never named in a toast Herdr showed within a minute: %v\n%d shown: %q", len(m.unnamed(n)), n, m.unnamed(n), len(shown), shown)
	}
	t.Logf("%d toasts shown for %d panes: %q", len(shown), n, shown)
	for _, r := range runs {
		if err := sendKeys(r, "\r"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		if st, err := r.wait(30 * time.Second); err != nil || st != 0 {
			t.Fatalf("wrapper: exit %d, %v", st, err)
		}
	}
}
