package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Pi upgraded between two runs of one session: a conversation Pi 0.73.1
// wrote under `herdr-pi wrap` is resumed under Pi 1.6.0 (`wrap pi
// --session <file>`, as Herdr's resume command does). The wrapper follows
// the file the newer Pi goes on writing: its question blocks the pane,
// and status names the same session file.
func TestWrapPiResumesASessionAnOlderPiWrote(t *testing.T) {
	r := newPiRig(t, answerOr(), true)
	current := r.pi
	r.pi = pitest.Old(t)
	h, pane := r.herdr, r.herdr.PaneID()
	sessionFile := func() string {
		t.Helper()
		out, err := r.herdrPi("status", "--json")
		var st struct {
			SessionFile string `json:"session_file"`
		}
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.SessionFile == "" {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		return st.SessionFile
	}

	tm := r.wrap()
	tm.Type(t, "ANSWER: which file?")
	h.WaitFor(t, 2*time.Minute, "the old Pi's turn done", func() bool {
		return len(r.llm.Requests()) == 1 && h.Pane(pane).Status == "idle" && strings.Contains(tm.Screen(), "Done.")
	})
	file := sessionFile()
	quit(t, tm)

	r.pi = current
	tm = r.wrap("--session", file)
	tm.Type(t, "go on")
	h.WaitFor(t, 2*time.Minute, "blocked on the newer Pi's question", func() bool { return h.Pane(pane).Status == "blocked" })
	if got := sessionFile(); got != file {
		t.Errorf("status names session file %s, want the one resumed, %s", got, file)
	}
	if reqs := r.llm.Requests(); len(reqs) != 2 || !strings.Contains(reqs[1].LastUser(), "go on") {
		t.Errorf("the newer Pi's request: %d requests", len(reqs))
	}
	quit(t, tm)
}
