package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// agentScript writes a fakeagent script into dir.
func agentScript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Outside Herdr, a blocked agent produces exactly one desktop notification
// in the terminal's own protocol — OSC 777 for Warp — written by the copy
// loop between the agent's own output.
func TestWrapNotifiesTheTerminalOutsideHerdr(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "api-service")
	if err := os.Mkdir(project, 0o700); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t,
		`print \e[?2026hready\e[?2026l\r\n`,
		"run herdr-pi waiting start --source deploy --id 1 --label approve",
		"sleep 400ms",
		"run herdr-pi waiting stop --source deploy --id 1",
		"sleep 300ms",
	)
	env := append(os.Environ(), "TERM_PROGRAM=WarpTerminal", "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	env = withoutHerdr(env)
	r, err := startOuter(outerOptions{Keep: true, Env: env, Argv: []string{"sh", "-c", "cd " + project + " && exec herdr-pi wrap -- fakeagent " + script}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v\n%q", status, err, r.bytes())
	}
	want := []byte("\x1b]777;notify;Pi needs your input;api-service\x1b\\")
	if got := r.bytes(); bytes.Count(got, want) != 1 || bytes.Count(got, []byte("\x1b]777;")) != 1 {
		t.Fatalf("want exactly one %q on the terminal, got:\n%q", want, got)
	}
}

func withoutHerdr(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HERDR_") || strings.HasPrefix(kv, "HERDR_PI_") {
			out = append(out, kv)
		}
	}
	return out
}

// Inside Herdr, blocked becomes a notification.show: one per blocked
// spell, title and body sanitised, sound none; five blocked spells within
// a second stay within Herdr's one-per-second limit and the last one still
// arrives.
func TestWrapNotifiesThroughHerdr(t *testing.T) {
	dir := t.TempDir()
	h := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	lines := []string{"print ready\\r\\n"}
	for i := 0; i < 5; i++ {
		lines = append(lines,
			"run herdr-pi waiting start --source burst --id x",
			"run herdr-pi waiting stop --source burst --id x",
			"sleep 150ms")
	}
	lines = append(lines, "sleep 2500ms")
	trace := filepath.Join(dir, "trace.jsonl")
	env := append(withoutHerdr(os.Environ()), "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR="+dir, "HERDR_PI_TRACE="+trace)
	env = append(env, h.Env()...)
	start := time.Now()
	r, err := startOuter(outerOptions{Env: env, Argv: []string{"herdr-pi", "wrap", "--", "fakeagent", agentScript(t, lines...)}})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := r.wait(30 * time.Second); err != nil || status != 0 {
		t.Fatalf("status %d, %v", status, err)
	}
	// The state machine's own transitions (the reporter coalesces what it
	// sends to Herdr, the notifier paces what it shows).
	var blocked []time.Time
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			To string
			At time.Time
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.To == "blocked" {
			blocked = append(blocked, e.At)
		}
	}
	if len(blocked) != 5 {
		t.Fatalf("%d blocked transitions, want 5:\n%s", len(blocked), data)
	}
	notes := h.Notifications()
	if len(blocked) == 0 || len(notes) == 0 {
		t.Fatalf("blocked reports %d, notifications %+v", len(blocked), notes)
	}
	span := notes[len(notes)-1].At.Sub(start)
	for i, n := range notes {
		if n.Title != "Pi needs your input" || n.Sound != "none" || n.Reason != "shown" {
			t.Errorf("notification %d: %+v", i, n)
		}
		if i > 0 && n.At.Sub(notes[i-1].At) < time.Second {
			t.Errorf("notifications %d and %d only %v apart", i-1, i, n.At.Sub(notes[i-1].At))
		}
	}
	if max := int(span/time.Second) + 1; len(notes) > max {
		t.Errorf("%d notifications in %v, Herdr allows at most %d", len(notes), span, max)
	}
	if last := notes[len(notes)-1].At; last.Before(blocked[len(blocked)-1]) {
		t.Errorf("the last blocked spell (%v) was never notified; last notification at %v", blocked[len(blocked)-1], last)
	}
	t.Logf("%d blocked spells in %v → %d notifications, all shown", len(blocked), blocked[len(blocked)-1].Sub(blocked[0]).Round(time.Millisecond), len(notes))
}
